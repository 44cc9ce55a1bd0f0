#!/usr/bin/env bash
# A streamed-weights run's decode speed against the plan's prediction, on
# this machine's Vulkan device: calibrates the machine (f32 kernels and the
# device's programs), then runs each real model with every unit on vulkan0
# (--compute-devices) and the device's memory capped below its weights, so
# the weights stream from the CPU's DRAM every step, and prints per model the
# plan's decode tokens/s, the runs' median (and range), and their ratio.
#
# Usage: bench/streamed-plan.sh [RUNS]   (RUNS per model, default 5)
# Needs a built hetc ($HETC or build/bin/hetc), the real models in
# ../shared/models ($HETC_SHARED_DIR), and a Vulkan device.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hetc=${HETC:-$root/build/bin/hetc}
shared=${HETC_SHARED_DIR:-$root/../shared}
runs=${1:-5}
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "streamed-plan.sh: RUNS must be a positive whole number, got '$runs'" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HETC_CACHE_DIR=$work/cache

echo "calibrating (f32 kernels and vulkan0's programs)..." >&2
"$hetc" calibrate --formats f32 -o "$work/host.json" 2>/dev/null |
  grep '^vulkan0:' || { echo "streamed-plan.sh: no Vulkan device was calibrated" >&2; exit 1; }

# model and the cap that leaves its weights mostly streamed; each model runs
# resident on vulkan0 too, which separates the streaming from the rest.
for entry in stories260K:900KB babyllama105:2MB; do
  model=${entry%%:*} cap=${entry##*:}
  for placement in resident streamed; do
    caps=()
    [ "$placement" = streamed ] && caps=(--device-memory "vulkan0=$cap")
    for ((run = 0; run < runs; ++run)); do
      "$hetc" run "$shared/models/$model.gguf" --system "$work/host.json" \
        --compute-devices vulkan0 "${caps[@]}" \
        -p "Once upon a time" -n 64 --ignore-eos --temp 0 --json 2>/dev/null
    done > "$work/$model-$placement.jsonl"
    python3 - "$model" "$placement" "$work/$model-$placement.jsonl" <<'PY'
import json, statistics, sys
model, placement, path = sys.argv[1:]
runs = [json.loads(line) for line in open(path) if line.strip()]
measured = sorted(r["decode_tokens_per_s"] for r in runs)
planned = runs[0]["planned_decode_tokens_per_s"]
device = next(d for d in runs[0]["devices"] if d["name"] == "vulkan0")
streamed = device["memory"].get("streamed", {}).get("bytes_per_step", 0)
median = statistics.median(measured)
print(f"{model:<13} {placement:<8} streams {streamed:>8} B/step  "
      f"planned {planned:6.1f} tok/s  measured median {median:6.1f} "
      f"({measured[0]:.1f}-{measured[-1]:.1f}, {len(measured)} runs)  "
      f"measured/planned {median / planned:.2f}")
PY
  done
done
