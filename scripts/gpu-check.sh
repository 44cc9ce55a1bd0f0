#!/usr/bin/env bash
# The GPU check: hetc's NVIDIA path end to end on a machine with an NVIDIA GPU
# and no compiler.
#
#   scripts/gpu-check.sh prepare [DIR]   here: builds everything the run needs
#                                        into DIR (default gpu-check/, which
#                                        git ignores), well under 64 MiB
#   scripts/gpu-check.sh run [DIR]       on the GPU machine, from the
#                                        repository root, in under 8 minutes
#
# `prepare` copies the runtime-only runner (hetrt-run, libhetrt.so and the two
# libraries they load), hetrt-synth, both real models with llama.cpp's
# reference tokens, and compiles packs planned on scripts/gpu-check/
# nvidia-host.json (cuda0 and cpu0, the runtime's own names): each real model
# on the GPU, and a Llama-3.2-1B-shaped synthetic model in F16 and Q4_0, on
# the GPU alone and split between the GPU and the CPU (the GPU's memory capped
# below the model). The 1B models themselves are not copied: `run` writes them
# again with hetrt-synth, byte for byte, so the packs' weight hashes match.
#
# `run` reports: the greedy tokens of both real models against their
# references; for each 1B pack, prefill (a 512-token prompt) and decode
# tokens/s, and decode as a fraction of the GPU's memory-bandwidth roofline
# (weight bytes read per token over the bandwidth of the GPU it found).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
command="${1:-}"
dir="${2:-$repo/gpu-check}"

# The Llama-3.2-1B shape (tied embeddings, GQA 32/8, RoPE base 500000).
synth_1b=(--dim 2048 --layers 16 --heads 32 --kv-heads 8 --ffn 8192
          --vocab 128256 --context 2048 --rope-base 500000 --tied --seed 1)
models_1b=(f16 q4_0)

prepare() {
  local build="${HETC_BUILD_DIR:-$repo/build}" shared="$repo/../shared"
  [[ -f "$shared/models/stories260K.gguf" ]] || {
    echo "gpu-check: no ../shared/models beside the repository" >&2; exit 1; }
  ninja -C "$build" hetc hetrt-run hetrt-synth > /dev/null
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/models" "$dir/packs"
  cp "$build/bin/hetrt-run" "$build/bin/hetrt-synth" "$dir/bin/"
  cp "$build/lib/libhetrt.so" "$dir/lib/"
  # The system libraries the runner loads that a CUDA image may lack.
  for library in libxxhash.so.0 libpcre2-8.so.0; do
    cp -L "$(ldd "$build/bin/hetrt-run" | awk -v l="$library" '$1 == l { print $3 }')" "$dir/lib/"
  done
  local system="$repo/scripts/gpu-check/nvidia-host.json"
  local hetc="$build/bin/hetc"
  for model in stories260K babyllama105; do
    cp "$shared/models/$model.gguf" "$shared/models/$model.reference.json" "$dir/models/"
    "$hetc" compile "$dir/models/$model.gguf" --system "$system" \
      --cpu-variants x86-64-v3 -o "$dir/packs/$model-gpu.hetpack" -q
  done
  local scratch
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' RETURN
  for type in "${models_1b[@]}"; do
    local model="$scratch/llama1b-$type.gguf"
    "$hetc" synth "${synth_1b[@]}" --type "$type" -o "$model"
    "$hetc" compile "$model" --system "$system" --cpu-variants x86-64-v3 \
      -o "$dir/packs/llama1b-$type-gpu.hetpack" -q
    # Half of the model's bytes on the GPU: the rest of the decoder on the CPU.
    local half=$(( $(stat -c %s "$model") / 2 ))
    "$hetc" compile "$model" --system "$system" --cpu-variants x86-64-v3 \
      --device-memory "cuda0=${half}B" -o "$dir/packs/llama1b-$type-split.hetpack" -q
    "$hetc" info "$dir/packs/llama1b-$type-split.hetpack" | grep '^  plan'
  done
  # A prompt of 512 tokens of the synthetic vocabulary ("▁a" is one token).
  python3 -c "print(' '.join(['a'] * 512), end='')" > "$dir/prompt-512.txt"
  du -sh "$dir"
}

run() {
  [[ -x "$dir/bin/hetrt-run" ]] || {
    echo "gpu-check: $dir holds no runner; run \`scripts/gpu-check.sh prepare\` first" >&2; exit 1; }
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local runner="$dir/bin/hetrt-run" status=0
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$runner" --list-devices
  "$runner" --list-devices | grep -q '^cuda0 ' || {
    echo "gpu-check: the runtime finds no NVIDIA GPU (see the unavailable line above)" >&2; exit 1; }

  echo "== greedy tokens of the real models on cuda0 against llama.cpp's"
  for model in stories260K babyllama105; do
    python3 "$repo/test/tools/hetrt-run/Inputs/check_tokens.py" \
      "$dir/models/$model.reference.json" "$runner" "$dir/packs/$model-gpu.hetpack" \
      --planned -w "$dir/models/$model.gguf" || status=1
  done

  echo "== the Llama-3.2-1B shape: writing the models"
  local models="${TMPDIR:-/tmp}/hetc-gpu-check"
  mkdir -p "$models"
  for type in "${models_1b[@]}"; do
    [[ -f "$models/llama1b-$type.gguf" ]] ||
      "$dir/bin/hetrt-synth" "${synth_1b[@]}" --type "$type" -o "$models/llama1b-$type.gguf"
  done
  for type in "${models_1b[@]}"; do
    for plan in gpu split; do
      local out
      out="$("$runner" "$dir/packs/llama1b-$type-$plan.hetpack" --planned \
        -w "$models/llama1b-$type.gguf" -f "$dir/prompt-512.txt" -n 128 \
        --temp 0 --ignore-eos --json)" || { status=1; continue; }
      python3 "$repo/scripts/gpu-check/report.py" "llama1b-$type-$plan" \
        "$models/llama1b-$type.gguf" "$("$runner" --list-devices | grep '^cuda0 ')" <<< "$out" || status=1
    done
  done
  echo "gpu-check: finished in ${SECONDS} s ($([[ $status == 0 ]] && echo passed || echo FAILED))"
  return $status
}

case "$command" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: scripts/gpu-check.sh prepare|run [DIR]" >&2; exit 2 ;;
esac
