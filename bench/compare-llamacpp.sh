#!/usr/bin/env bash
# hetc and llama.cpp side by side on the CPU: the same `hetc synth` GGUF files
# (the reference shapes in every weight type), at 1 thread and at all cores,
# the two engines alternating over several rounds so drift in the machine's
# speed hits both alike. Prefill is a 128-token prompt from an empty cache;
# decode is 64 tokens after it, at the same cache depth for both (llama-bench
# -d 128). Prints each engine's medians, the median of the per-round ratios
# (hetc / llama.cpp), the read bandwidth hetc measured in the same round and
# each engine's fraction of the decode roofline (weight bytes per token over
# that bandwidth).
#
#   bench/compare-llamacpp.sh LLAMA_BENCH [SHAPE:TYPE ...]   e.g. 110m:q4_0 1b:f16
#
# SHAPE is 110m or 1b (the table's, the default rows) or gqa (off the table:
# 4 query heads per KV head, FFN 2816; see bench/reference-models.sh).
#
# LLAMA_BENCH is the path of a llama-bench binary (build one with llama.cpp's
# CPU back end as a user of this CPU would; without one the script says so and
# exits 0: llama.cpp is not a dependency of hetc). Run it on an idle machine.
# Environment: ROUNDS (default 3), THREADS (default "1 <all cores>"),
# HETC_BUILD_DIR (default build), HETC_BENCH_DIR (models and packs, default
# build/bench-models), RESULTS (the per-round TSV, default
# $HETC_BENCH_DIR/compare-llamacpp.tsv).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
llama_bench=${1:-}
if [ -z "$llama_bench" ] || [ ! -x "$llama_bench" ]; then
  echo "compare-llamacpp: skipped: no llama-bench binary given" \
    "(usage: bench/compare-llamacpp.sh LLAMA_BENCH [SHAPE:TYPE ...])" >&2
  exit 0
fi
shift
build="${HETC_BUILD_DIR:-$repo/build}"
hetc="$build/bin/hetc"
work="${HETC_BENCH_DIR:-$build/bench-models}"
rounds="${ROUNDS:-3}"
read -r -a thread_counts <<<"${THREADS:-1 $(nproc)}"
results="${RESULTS:-$work/compare-llamacpp.tsv}"
prompt=128
decode=64
mkdir -p "$work"
source "$repo/bench/reference-models.sh"
rows=("$@")
if ((${#rows[@]} == 0)); then
  for shape in 110m 1b; do
    for type in f32 f16 q8_0 q4_0 q4_k_m; do rows+=("$shape:$type"); done
  done
fi

read -r load _ </proc/loadavg
echo "load average before the runs: $load (an idle machine reads near 0)"

# One measurement of each engine appends a line to $results:
# shape type threads round engine prefill decode bandwidth roofline_tokens
run_hetc() {
  local pack=$1 threads=$2 json
  json=$("$hetc" bench "$pack" --prompt-tokens $prompt --decode-tokens $decode \
    -t "$threads" --json)
  python3 -c '
import json, sys
r = json.loads(sys.argv[1])["results"][-1]
print(r["prefill_tokens_per_s"], r["decode_tokens_per_s"],
      r["read_bandwidth_gb_per_s"], r["decode_roofline_tokens_per_s"])' "$json"
}
# llama-bench's best sample of each test, as hetc bench reports its best run.
run_llama() {
  local model=$1 threads=$2 prefill_json decode_json
  prefill_json=$("$llama_bench" -m "$model" -p $prompt -n 0 -t "$threads" -r 2 \
    -o json 2>/dev/null)
  decode_json=$("$llama_bench" -m "$model" -p 0 -n $decode -d $prompt \
    -t "$threads" -r 2 -o json 2>/dev/null)
  python3 -c '
import json, sys
best = lambda text: max(json.loads(text)[0]["samples_ts"])
print(best(sys.argv[1]), best(sys.argv[2]), "-", "-")' \
    "$prefill_json" "$decode_json"
}

: >"$results"
"$llama_bench" -m "$(reference_model 110m q4_0 "$work")" -p 1 -n 0 -r 1 -o json \
  2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
print("llama.cpp %s (%s), %s" % (r["build_commit"], r["backends"], r["cpu_info"]))'
for row in "${rows[@]}"; do
  shape="${row%%:*}"
  type="${row##*:}"
  model=$(reference_model "$shape" "$type" "$work")
  pack=$(reference_pack "$model")
  for threads in "${thread_counts[@]}"; do
    for ((round = 1; round <= rounds; ++round)); do
      # Odd rounds start with hetc, even ones with llama.cpp.
      engines=(hetc llama)
      ((round % 2)) || engines=(llama hetc)
      for engine in "${engines[@]}"; do
        if [ "$engine" = hetc ]; then
          figures=$(run_hetc "$pack" "$threads")
        else
          figures=$(run_llama "$model" "$threads")
        fi
        echo "$shape $type $threads $round $engine $figures" >>"$results"
      done
    done
    echo "measured $shape $type at $threads thread(s)" >&2
  done
done

python3 - "$results" <<'PY'
import collections, statistics, sys

rounds = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    shape, type_, threads, round_, engine, *figures = line.split()
    rounds[(shape, type_, int(threads))].setdefault(int(round_), {})[engine] = figures

def median(values):
    return statistics.median(values)

header = ("shape", "type", "thr", "hetc pp", "llama pp", "pp ratio", "hetc tg",
          "llama tg", "tg ratio", "read GB/s", "hetc roof", "llama roof")
print("\nprefill (pp) of %s tokens and decode (tg) at the same depth, tokens/s; "
      "medians of %d rounds" % (128, max(len(r) for r in rounds.values())))
print("%-5s %-7s %3s %9s %9s %8s %8s %8s %8s %9s %9s %10s" % header)
for (shape, type_, threads), by_round in rounds.items():
    pairs = [r for r in by_round.values() if "hetc" in r and "llama" in r]
    hetc_pp = [float(r["hetc"][0]) for r in pairs]
    llama_pp = [float(r["llama"][0]) for r in pairs]
    hetc_tg = [float(r["hetc"][1]) for r in pairs]
    llama_tg = [float(r["llama"][1]) for r in pairs]
    bandwidth = [float(r["hetc"][2]) for r in pairs]
    roofline = [float(r["hetc"][3]) for r in pairs]
    print("%-5s %-7s %3d %9.1f %9.1f %8.2f %8.1f %8.1f %8.2f %9.1f %9.2f %10.2f" % (
        shape, type_, threads, median(hetc_pp), median(llama_pp),
        median(h / l for h, l in zip(hetc_pp, llama_pp)),
        median(hetc_tg), median(llama_tg),
        median(h / l for h, l in zip(hetc_tg, llama_tg)),
        median(bandwidth),
        median(h / r for h, r in zip(hetc_tg, roofline)),
        median(l / r for l, r in zip(llama_tg, roofline))))
PY
