"""Prints what each device ran, from `hetc run --json` on standard input:
one line per device, sorted by name, with the plan's units, its dispatches,
the activations it moved in and out, and the target of the code it ran.
"""
import json
import sys

result = json.load(sys.stdin)
print(f"runs on {result['device']}")
for device in sorted(result["devices"], key=lambda d: d["name"]):
    moved = "moved" if device["bytes_in"] + device["bytes_out"] > 0 else "no transfers"
    used = "used" if device["dispatches"] > 0 else "idle"
    target = device["code"].split()[0]
    print(f"{device['name']}: {device.get('units', '?')} units, {used}, {moved}, {target}")
