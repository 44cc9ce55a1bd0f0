"""Compares what each device of a planned run held with what the plan
predicted, from `hetc run --json` or `hetrt-run --json` on standard input.
One line per device, sorted by name: its KV cache, the buffers streamed
weights land in, what its programs compute with and its resident weights,
each "as planned" or both figures (a CPU's weights are the mapped model
file, which is not allocated, so only the plan counts them), and whether
all it holds is within its budget, the memory the plan gave it. Then, for
a device weights are streamed to, the bytes streamed per step and whether
the share of the copies hidden behind compute is a fraction.
"""
import json
import sys

result = json.load(sys.stdin)
for device in sorted(result["devices"], key=lambda d: d["name"]):
    memory = device["memory"]
    planned = memory.get("planned")
    if planned is None:
        print(f"{device['name']}: no plan")
        continue
    fields = ["kv_cache_bytes", "stream_buffer_bytes", "work_bytes"]
    if not device["code"].startswith("x86"):
        fields.append("weight_bytes")
    parts = []
    for field in fields:
        name = field[: -len("_bytes")]
        if memory[field] == planned[field]:
            parts.append(f"{name} as planned")
        else:
            parts.append(f"{name} {memory[field]} (planned {planned[field]})")
    held = sum(memory[f] for f in ["kv_cache_bytes", "stream_buffer_bytes",
                                   "work_bytes", "weight_bytes"])
    budget = memory.get("budget_bytes")
    if budget is None:
        parts.append("no budget")
    elif held <= budget:
        parts.append("within budget")
    else:
        parts.append(f"holds {held}, past its budget {budget}")
    print(f"{device['name']}: " + ", ".join(parts))
    streamed = memory.get("streamed")
    if streamed:
        hidden = streamed["hidden"]
        fraction = "a fraction" if 0 <= hidden <= 1 else f"{hidden}, not a fraction"
        print(f"{device['name']}: streams {streamed['bytes_per_step']} bytes per step, "
              f"hidden share {fraction}")
