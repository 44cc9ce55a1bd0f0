#!/usr/bin/env bash
# Measures the speed table of the end-to-end CPU issue: synthetic models of the
# llama-110M and llama-1B shapes in each weight type, compiled for this host and
# run through `hetc bench` (prefill of 128 tokens, decode after it) with the
# read bandwidth and decode roofline of the same run.
#
#   bench/reference-table.sh [SHAPE:TYPE ...]     e.g. 110m:q4_0 1b:f16
#
# Without arguments every row is measured. Models and packs are kept in
# $HETC_BENCH_DIR (default build/bench-models) and reused.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
hetc="$build/bin/hetc"
work="${HETC_BENCH_DIR:-$build/bench-models}"
threads="${HETC_BENCH_THREADS:-$(nproc)}"
mkdir -p "$work"
source "$repo/bench/reference-models.sh"
rows=("$@")
if ((${#rows[@]} == 0)); then
  rows=(110m:f32 110m:f16 110m:q8_0 110m:q4_0 1b:f16 1b:q8_0 1b:q4_0)
fi
printf '%-6s %-5s %14s %14s %12s %10s\n' shape type "prefill tok/s" \
  "decode tok/s" "read GB/s" decode/roof
for row in "${rows[@]}"; do
  shape="${row%%:*}"
  type="${row##*:}"
  model=$(reference_model "$shape" "$type" "$work")
  pack=$(reference_pack "$model")
  "$hetc" bench "$pack" --prompt-tokens 128 --decode-tokens 32 -t "$threads" \
    --json >"$work/$shape-$type.json"
  python3 - "$work/$shape-$type.json" "$shape" "$type" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][-1]
print(f"{sys.argv[2]:<6} {sys.argv[3]:<5} {r['prefill_tokens_per_s']:14.1f} "
      f"{r['decode_tokens_per_s']:14.1f} {r['read_bandwidth_gb_per_s']:12.2f} "
      f"{r['decode_roofline_ratio']:10.3f}")
PY
done
