"""Summarizes a program JSON (abi/Program.h) for FileCheck: its devices with
their targets, then the steps and buffers by kind and device, sorted."""
import collections
import json
import sys

program = json.load(open(sys.argv[1]))
devices = program["devices"]
print("devices", " ".join(d["name"] + ":" + d["target"] for d in devices))
steps = collections.Counter((s["kind"], devices[s["device"]]["name"]) for s in program["steps"])
for (kind, device), count in sorted(steps.items()):
    print("step", kind, device, count)
buffers = collections.Counter((b["role"], devices[b["device"]]["name"]) for b in program["buffers"])
for (role, device), count in sorted(buffers.items()):
    print("buffer", role, device, count)
