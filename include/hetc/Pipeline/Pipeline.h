// hetc's compilation phases. Each target builds the pass pipelines between
// them for its devices (hetc/Target/Target.h), and registers them with
// hetc-opt, so any step can be replayed by hand.
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

} // namespace hetc::pipeline

#endif // HETC_PIPELINE_PIPELINE_H
