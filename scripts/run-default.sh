#!/usr/bin/env bash
# Sets everything up (see setup.sh) and runs hetc's main job on its built-in
# default: a small synthetic Llama-shaped model written by `hetc synth`,
# compiled to a pack and run, printing the generated text and the speeds.
# Extra arguments go to `hetc run` (e.g. -n 64 --temp 0).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
"$repo/scripts/setup.sh" >&2
work="$build/default-model"
mkdir -p "$work"
hetc="$build/bin/hetc"
if [ ! -f "$work/model.gguf" ]; then
  "$hetc" synth --arch llama --dim 512 --layers 4 --heads 8 --kv-heads 4 \
    --ffn 1024 --vocab 4096 --type q8_0 -o "$work/model.gguf"
fi
if [ ! -f "$work/model.hetpack" ] || [ "$work/model.hetpack" -ot "$hetc" ]; then
  "$hetc" compile "$work/model.gguf" -o "$work/model.hetpack" --cpu-variants host
fi
exec "$hetc" run "$work/model.hetpack" -p "Once upon a time" -n 32 --seed 1 "$@"
