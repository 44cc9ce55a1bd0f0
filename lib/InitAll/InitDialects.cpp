// Registration of every dialect and extension hetc's tools and compiler use.
#include "hetc/InitAll.h"

#include "dialects/het/HetDialect.h"
#include "dialects/llm/LLMDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace hetc {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<llm::LLMDialect, het::HetDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // The GPU targets serialize gpu.modules through LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
}

} // namespace hetc
