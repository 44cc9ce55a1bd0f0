# Summarizes a hetc plan --json: the devices that compute, the units on each,
# and where the streamed weights come from.
import json
import sys

plan = json.load(sys.stdin)
units = ", ".join(f"{d['id']} {d['units']}" for d in plan["devices"])
line = f"computing {plan['compute_devices']}; units {units}"
sources = sorted({w["memory"] for w in plan["placement"]["weights"]
                  if w["residency"] == "streamed"})
if sources:
    line += "; streamed from " + ", ".join(sources)
print(line)
