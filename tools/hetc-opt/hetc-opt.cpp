// hetc-opt: parses, verifies, transforms and prints hetc and upstream IR, with
// MLIR's pass-manager flags, exactly like mlir-opt.
#include "hetc/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace hetc::test {
void registerTestLLMPrintWorkPass();
} // namespace hetc::test

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  hetc::registerAllDialects(registry);
  hetc::registerAllPasses();
  // Test-only passes are reachable from hetc-opt, never from hetc.
  hetc::test::registerTestLLMPrintWorkPass();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "hetc optimizer driver: llm, het and upstream MLIR\n",
      registry));
}
