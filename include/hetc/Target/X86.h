// The x86 CPU back end: LLVM dialect → optimized machine code in a shared
// object the runtime loads.
#ifndef HETC_TARGET_X86_H
#define HETC_TARGET_X86_H

#include "hetc/Pipeline/Pipeline.h"
#include "hetc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace hetc::target::x86 {

/// How a prompt's quantized matmuls use AMX tiles: not at all, through the
/// tile instructions, or through vector code that computes what they would
/// (hetc-x86-emulate-amx: the AMX kernels checked on CPUs without AMX).
enum class AmxTiles { None, Hardware, Emulated };

/// A code variant of the pack; the runtime picks the best its host can run.
struct CpuVariant {
  /// Name recorded in the pack manifest ("avx512", "x86-64-v2").
  std::string name;
  /// LLVM CPU and features to generate code for.
  std::string cpu;
  std::string features;
  /// Host features (the runtime's names, e.g. "avx512f") the code needs.
  std::vector<std::string> requiredFeatures;
  /// Width of its vector registers in bits: the matmul blocking's unit.
  int64_t vectorBits = 512;
  /// Whether quantized matmuls use int8 dot products (vpdpbusd).
  bool int8Dot = false;
  /// Whether a prompt's matmuls of interleaved weights use AMX tiles (int8
  /// for quantized weights, bf16 for bf16 weights).
  AmxTiles amxTiles = AmxTiles::None;
  /// Whether, with AMX tiles, a prompt's matmuls of f32 and f16 weights take
  /// bf16 tiles too: faster, but weights and activations round to bf16.
  bool floatWeightsBf16 = false;
  /// A variant for checking the code, never the best choice for a host:
  /// built only when named, not by "all" or "host".
  bool onlyByName = false;
};

/// The variants hetc can build, best first: AVX-512 with VNNI and AMX tiles
/// (int8 for a prompt's quantized matmuls, bf16 for its bf16 weights;
/// Sapphire Rapids and later Xeons), AVX-512 with VNNI and BF16 (Zen 4 and
/// later, Ice Lake and later), AVX-512 (x86-64-v4), AVX2 (x86-64-v3) and the
/// portable x86-64-v2 baseline; then, built only when named, avx512-amx-bf16
/// (f32 and f16 weights on bf16 tiles too) and avx512-amx-emulated (the
/// kernels of avx512-amx-bf16 in vector code).
std::vector<CpuVariant> allVariants();

/// The variants `names` selects: "all", "host" (the best this machine runs)
/// or variant names. False with `error` naming the choices otherwise.
bool selectVariants(const std::vector<std::string> &names,
                    std::vector<CpuVariant> &selected, std::string &error);

/// The vector width in bits of an x86 CPU or x86-64 level as LLVM names it
/// ("x86-64-v3", "sapphirerapids"): 512 with AVX-512, 256 with AVX2, else
/// 128; nothing for a name LLVM does not know.
std::optional<int64_t> vectorBitsOf(llvm::StringRef cpu);

/// Whether an x86 CPU or level as LLVM names it has 512-bit integer dot
/// products (AVX-512 VNNI), which the quantized matmuls then use.
bool hasInt8DotOf(llvm::StringRef cpu);

/// Adds the passes that take a module from phase `from` to phase `to` (both
/// before Pack) for an x86 CPU whose vector registers hold `vectorBits`, with
/// int8 dot products for quantized weights when `int8Dot`, and a prompt's
/// matmuls of interleaved weights on AMX tiles as `amxTiles` says (those of
/// f32 and f16 weights too when `floatWeightsBf16`).
void buildCpuPipeline(mlir::OpPassManager &pm, pipeline::Phase from,
                      pipeline::Phase to, int64_t vectorBits, bool int8Dot,
                      AmxTiles amxTiles = AmxTiles::None,
                      bool floatWeightsBf16 = false);

/// Registers `hetc-lower-cpu{vector-bits=N int8-dot=B}` (import → LLVM
/// dialect) with the pass registry.
void registerCpuPipeline();

/// This machine's CPU as a device: `#het.device<"cpu0", cpu, LEVEL>` with
/// the x86-64 level of the best variant it runs.
het::DeviceAttr hostDevice(mlir::MLIRContext *context);

/// The x86 target (hetc/Target/Target.h): `#het.device`s of kind cpu whose
/// arch is an x86-64 level or CPU LLVM knows.
const Target &x86Target();

/// Translates `module` (LLVM dialect only), optimizes it at O3 for `variant`,
/// and links the code into a shared object. Returns its bytes, or sets `error`
/// and returns an empty vector.
std::vector<char> compileSharedObject(mlir::ModuleOp module,
                                      const CpuVariant &variant,
                                      std::string &error);

/// The optimized LLVM IR of `module` for `variant`, as text (for inspection).
std::string emitLLVMIR(mlir::ModuleOp module, const CpuVariant &variant,
                       std::string &error);

} // namespace hetc::target::x86

#endif // HETC_TARGET_X86_H
