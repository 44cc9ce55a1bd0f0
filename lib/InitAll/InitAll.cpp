// Registration of every dialect and pass hetc's tools expose.
#include "hetc/InitAll.h"

#include "dialects/het/HetDialect.h"
#include "dialects/llm/LLMDialect.h"
#include "hetc/Pipeline/Pipeline.h"
#include "passes/conversion/Passes.h"
#include "passes/het/Passes.h"
#include "passes/target/x86/Passes.h"

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
  // The registries are global and reject duplicates, and both tools may call
  // this from several places.
  static const bool registered = [] {
    mlir::registerAllPasses();
    het::registerHetPasses();
    conversion::registerConversionPasses();
    x86::registerX86Passes();
    pipeline::registerPipelines();
    return true;
  }();
  (void)registered;
}

} // namespace hetc
