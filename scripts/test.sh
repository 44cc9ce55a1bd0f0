#!/usr/bin/env bash
# Sets everything up (see setup.sh) and runs the whole test suite: lit (check-hetc)
# and the GoogleTest units, both through ctest.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
"$repo/scripts/setup.sh"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
