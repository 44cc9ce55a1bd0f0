// hetc's compilation phases by name.
#include "hetc/Pipeline/Pipeline.h"

#include "llvm/ADT/StringSwitch.h"

namespace hetc::pipeline {

std::optional<Phase> parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("import", Phase::Import)
      .Case("linalg", Phase::Linalg)
      .Case("loops", Phase::Loops)
      .Case("llvm", Phase::LLVM)
      .Case("pack", Phase::Pack)
      .Default(std::nullopt);
}

llvm::StringRef phaseNames() { return "import, linalg, loops, llvm, pack"; }

} // namespace hetc::pipeline
