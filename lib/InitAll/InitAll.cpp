// Registration of every dialect and pass hetc's tools expose.
#include "hetc/InitAll.h"

#include "dialects/het/HetDialect.h"
#include "dialects/llm/LLMDialect.h"
#include "passes/het/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"

namespace hetc {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<llm::LLMDialect, het::HetDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void registerAllPasses() {
  mlir::registerAllPasses();
  het::registerHetPasses();
}

} // namespace hetc
