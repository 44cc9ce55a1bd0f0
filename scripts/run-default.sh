#!/usr/bin/env bash
# Sets everything up (see setup.sh) and runs hetc's main job on its built-in
# default: hetc-opt parses and verifies the example Llama-3 decoder layer and
# prints the verified IR.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
"$repo/scripts/setup.sh" >&2
exec "$build/bin/hetc-opt" "$repo/test/e2e/llama-decoder-layer.mlir" "$@"
