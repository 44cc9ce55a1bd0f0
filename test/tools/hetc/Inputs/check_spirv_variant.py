"""Checks that a session on vulkan0 runs the kernel library variant the
device's capabilities call for: the subgroup variant when `hetrt-run
--list-devices` (the file given) shows GroupNonUniformArithmetic for
vulkan0, else the portable one. Reads the runner's --json on standard input.

    check_spirv_variant.py DEVICES.txt < RUN.json
"""
import json
import sys

lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, line in enumerate(lines) if line.startswith("vulkan0 "))
block = []
for line in lines[start + 1:]:
    if not line.startswith("  "):
        break
    block.append(line)
spirv = next(line for line in block if line.strip().startswith("SPIR-V "))
expected = "spirv subgroup" if "GroupNonUniformArithmetic" in spirv.split() else "spirv portable"
ran = {device["name"]: device["code"] for device in json.load(sys.stdin)["devices"]}
if ran.get("vulkan0") != expected:
    print(f"vulkan0 ran {ran.get('vulkan0')!r}, but its capabilities call for {expected!r}")
    sys.exit(1)
print(f"vulkan0 runs {expected}")
