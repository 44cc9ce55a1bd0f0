// The kernel library (kernels/Kernels.mlir), embedded at build time.
#include "hetc/Target/SPIRV.h"

#include "mlir/Parser/Parser.h"

namespace hetc::target::spirv {

llvm::StringRef kernelLibrarySource() {
  static constexpr const char kSource[] =
#include "KernelLibrary.inc"
      ;
  return llvm::StringRef(kSource, sizeof(kSource) - 1);
}

mlir::OwningOpRef<mlir::ModuleOp>
parseKernelLibrary(mlir::MLIRContext *context) {
  return mlir::parseSourceString<mlir::ModuleOp>(kernelLibrarySource(),
                                                 context, "Kernels.mlir");
}

} // namespace hetc::target::spirv
