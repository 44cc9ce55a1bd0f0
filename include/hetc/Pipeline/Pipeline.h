// hetc's compilation phases and the pass pipelines between them. Each pipeline
// is also registered with hetc-opt, so any step can be replayed by hand.
#ifndef HETC_PIPELINE_PIPELINE_H
#define HETC_PIPELINE_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace hetc::pipeline {

/// Where `hetc compile --compile-to` may stop. Each later phase includes the
/// earlier ones.
enum class Phase {
  /// The llm module exactly as imported.
  Import,
  /// After llm → linalg on tensors.
  Linalg,
  /// After bufferization and loop lowering, before LLVM (memrefs and scf).
  Loops,
  /// The LLVM dialect module handed to translation.
  LLVM,
  /// The finished pack.
  Pack,
};

/// Parses a phase name (import, linalg, loops, llvm, pack).
std::optional<Phase> parsePhase(llvm::StringRef name);
/// All phase names, for help text.
llvm::StringRef phaseNames();

/// Adds the passes that take a module from phase `from` to phase `to` (both
/// before Pack) for an x86 CPU whose vector registers hold `vectorBits`.
void buildCpuPipeline(mlir::OpPassManager &pm, Phase from, Phase to,
                      int64_t vectorBits);

/// The textual form of the CPU pipeline from import to LLVM, to replay with
/// `hetc-opt --pass-pipeline='...'`.
std::string printCpuPipeline(int64_t vectorBits);

/// Registers `hetc-lower-cpu{vector-bits=N}` (import → LLVM dialect) with the
/// pass registry.
void registerPipelines();

} // namespace hetc::pipeline

#endif // HETC_PIPELINE_PIPELINE_H
