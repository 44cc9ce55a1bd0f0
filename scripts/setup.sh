#!/usr/bin/env bash
# Installs every Debian package hetc needs (when missing), configures the build in
# build/ with Ninja, and builds it. Idempotent: a second run only rebuilds what changed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"

packages=(
  cmake ninja-build ccache python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 clang-22
  libclang-rt-22-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libpcre2-dev python3-numpy libxxhash-dev libhwloc-dev libglpk-dev
  libvulkan-dev mesa-vulkan-drivers spirv-tools rocm-device-libs
  libamdhip64-dev libcpp-httplib-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "hetc setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

# Node.js and the official OpenAI client library (npm's openai, pinned by
# test/clients/openai/package-lock.json), which the serve tests drive
# hetc serve with.
if ! command -v npm >/dev/null; then
  echo "hetc setup: installing nodejs npm"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq nodejs npm
fi
client="$repo/test/clients/openai"
if [ ! -f "$client/node_modules/.package-lock.json" ] ||
   [ "$client/package-lock.json" -nt "$client/node_modules/.package-lock.json" ]; then
  npm ci --prefix "$client" --no-audit --no-fund --loglevel=error
fi

if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$repo" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE="${HETC_BUILD_TYPE:-Release}" \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    "${launcher[@]}" ${HETC_CMAKE_ARGS:-}
fi
cmake --build "$build"
