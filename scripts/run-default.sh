#!/usr/bin/env bash
# Sets everything up (see setup.sh) and runs hetc's main job on its built-in
# default: the real stories260K model shipped in models/ (see
# models/README.md), compiled to a pack and run on a prompt, printing the
# story and the speeds. Extra arguments go to `hetc run` (e.g. -n 64 --temp 0).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
"$repo/scripts/setup.sh" >&2
work="$build/default-model"
mkdir -p "$work"
hetc="$build/bin/hetc"
model="$repo/models/stories260K.gguf"
if [ ! -f "$work/model.hetpack" ] || [ "$work/model.hetpack" -ot "$hetc" ] ||
   [ "$work/model.hetpack" -ot "$model" ]; then
  "$hetc" compile "$model" -o "$work/model.hetpack" --cpu-variants host
fi
exec "$hetc" run "$work/model.hetpack" -p "Once upon a time" -n 200 --seed 1 "$@"
