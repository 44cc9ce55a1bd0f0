#!/usr/bin/env bash
# Builds the runtime's unit tests and C API client with AddressSanitizer and
# UndefinedBehaviorSanitizer (in build-asan/) and runs them: the GGUF reader,
# quantizers, tokenizer, the device layer through the C API, hetc serve's
# engine over a real session, the KV block
# pool, sequences over the paged KV cache and its tiers, and a whole
# generation through libhetrt on
# stories260K (packed by the regular build's hetc) on the CPU and on each
# Vulkan device (alone, split with the CPU, and with weights streamed into
# it), the planner's solver
# and scenario tests, and the GGUF and pack fuzzers (libFuzzer, built with
# ASan+UBSan in the regular build) over a fixed number of inputs each
# (HETC_FUZZ_RUNS, default 200000).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${HETC_BUILD_DIR:-$repo/build}"
asan="${HETC_ASAN_BUILD_DIR:-$repo/build-asan}"
"$repo/scripts/setup.sh" >&2
flags="-fsanitize=address,undefined -fno-sanitize-recover=all"
asanlib=/usr/lib/llvm-22/lib/clang/22/lib/linux
links="-fsanitize=address,undefined -shared-libasan -Wl,-rpath,$asanlib"
if [ ! -f "$asan/build.ninja" ]; then
  cmake -S "$repo" -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DLLVM_USE_LINKER=lld -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    "-DCMAKE_C_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" \
    "-DCMAKE_EXE_LINKER_FLAGS=$links" "-DCMAKE_SHARED_LINKER_FLAGS=$links"
fi
cmake --build "$asan" --target HetrtFormatTests HetrtTokenizerTests \
  HetrtQuantizeTests HetrtCoreTests HetrtDeviceTests HetcPartitionTests \
  hetrt-capi-generate hetrt-capi-devices hetrt-capi-sequences hetrt-run \
  HetcServerTests HetcEngineTests

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
# Leaks inside the Vulkan driver itself are Mesa's, not hetc's.
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan-suppressions.txt:print_suppressions=1"
for test in HetrtFormatTests HetrtTokenizerTests HetrtQuantizeTests HetrtCoreTests \
    HetrtDeviceTests; do
  "$asan/bin/$test"
done
# The planner's solvers and scenarios; the 80-layer chains are left to the
# regular build (minutes under the sanitizers, nothing they do not cover).
"$asan/bin/HetcPartitionTests" --gtest_filter='-Systems/LargeChain.*'

pack="$asan/stories260K.hetpack"
"$build/bin/hetc" compile "$repo/../shared/models/stories260K.gguf" -o "$pack" \
  --cpu-variants host -q
"$asan/bin/hetrt-capi-generate" "$pack" "Once upon a time" 48
# Sequences over one paged pool: forks, copies on write, a full pool, and
# blocks moved through host memory and a disk file and back.
"$asan/bin/hetrt-capi-sequences" "$pack" "Once upon a time" 48
"$asan/bin/hetrt-run" "$pack" -p "Once upon a time" -n 48 --temp 0 --json > /dev/null
# hetc serve's library: request parsing, stop strings, metrics, and the
# continuous-batching engine's threads over a real session (batches,
# cancellations, a full queue, stopping with requests in flight).
"$asan/bin/HetcServerTests"
servepack="$asan/stories260K-pool32.hetpack"
"$build/bin/hetc" compile "$repo/../shared/models/stories260K.gguf" -o "$servepack" \
  --cpu-variants host --kv-pool-blocks 32 -q
HETC_TEST_PACK="$servepack" "$asan/bin/HetcEngineTests"
# The same model on each Vulkan device, as SPIR-V programs (ProgramRunner).
spirvpack="$asan/stories260K-spirv.hetpack"
"$build/bin/hetc" compile "$repo/../shared/models/stories260K.gguf" -o "$spirvpack" \
  --cpu-variants host --spirv -q
if "$asan/bin/hetrt-run" --list-devices | grep -q '^vulkan0 '; then
  "$asan/bin/hetrt-run" "$spirvpack" --device vulkan0 -p "Once upon a time" -n 48 \
    --temp 0 --json > /dev/null
  # Sequences, batches and tiers on vulkan0 (device 1) through the C API.
  "$asan/bin/hetrt-capi-sequences" "$spirvpack" "Once upon a time" 48 1
  # Packs stories260K for a plan on test system $2 with vulkan0 capped to
  # $3 into $1, and plays it through the C API.
  run_planned() {
    "$build/bin/hetc" compile "$repo/../shared/models/stories260K.gguf" \
      -o "$1" --cpu-variants host -q \
      --system "$repo/test/tools/hetc/Inputs/$2" --device-memory "vulkan0=$3"
    "$asan/bin/hetrt-run" "$1" --planned -p "Once upon a time" -n 48 \
      --temp 0 --json > /dev/null
  }
  # A plan split between vulkan0 and cpu0: CPU segment code on the CPU
  # device, transfers between the devices (ProgramRunner, C API 5).
  planpack="$asan/stories260K-plan.hetpack"
  run_planned "$planpack" host-vulkan.json 800KB
  # Weights streamed into a capped vulkan0 from the mapped file, a unit
  # ahead, on a queue of their own.
  run_planned "$asan/stories260K-streamed.hetpack" host-vulkan-streaming.json 900KB
else
  echo "sanitize: no Vulkan device; the SPIR-V programs are not run" >&2
fi
"$asan/bin/hetrt-run" --list-devices
"$asan/bin/hetrt-capi-devices"

# The fuzzers: seeds are a real model, a real pack, its manifest and its code.
runs="${HETC_FUZZ_RUNS:-200000}"
cmake --build "$build" --target hetrt-gguf-fuzzer hetrt-pack-fuzzer
corpus="$asan/fuzz-corpus"
rm -rf "$corpus" && mkdir -p "$corpus/gguf" "$corpus/pack"
cp "$repo/../shared/models/stories260K.gguf" "$corpus/gguf/"
cp "$pack" "$corpus/pack/"
packtool="$repo/test/tools/hetc/Inputs/hetpack.py"
if [ -n "${planpack:-}" ]; then
  cp "$planpack" "$corpus/pack/"
  python3 "$packtool" extract "$planpack" program/plan/prefill.json \
    "$corpus/pack/plan-prefill.json"
fi
python3 "$packtool" extract "$pack" manifest.json "$corpus/pack/manifest.json"
for section in $(python3 "$packtool" list "$pack" | awk '$1 ~ /^code\// {print $1}'); do
  python3 "$packtool" extract "$pack" "$section" "$corpus/pack/${section#code/}"
done
# Whole code images are a few hundred KiB; GGUF inputs past 70 KB only slow
# the mutations down.
for fuzzer in gguf:70000 pack:400000; do
  (cd "$corpus" && "$build/bin/hetrt-${fuzzer%:*}-fuzzer" -runs="$runs" -seed=1 \
     -max_len="${fuzzer#*:}" -timeout=20 "$corpus/${fuzzer%:*}" 2>&1 | tail -n 3)
done
echo "sanitizers: no reports"
