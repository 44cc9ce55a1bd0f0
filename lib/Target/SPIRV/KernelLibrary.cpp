// The kernel library (kernels/Kernels.mlir), embedded at build time.
#include "hetc/Target/SPIRV.h"

#include "passes/target/spirv/Passes.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

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

llvm::ArrayRef<llvm::StringRef> kernelLibraryVariants() {
  static const llvm::StringRef kVariants[] = {"subgroup", "portable"};
  return kVariants;
}

bool compileKernelLibrary(mlir::MLIRContext *context, llvm::StringRef variant,
                          SpirvExecutable &executable, std::string &error) {
  mlir::OwningOpRef<mlir::ModuleOp> library = parseKernelLibrary(context);
  if (!library) {
    error = "the SPIR-V kernel library does not parse";
    return false;
  }
  attachDefaultTargetEnv(*library);
  mlir::PassManager pm(context);
  hetc::spirv::HetcSpirvSpecializeKernelsPassOptions options;
  options.variant = variant.str();
  pm.addPass(hetc::spirv::createHetcSpirvSpecializeKernelsPass(options));
  buildSpirvPipeline(pm);
  std::vector<SpirvExecutable> executables;
  if (mlir::failed(pm.run(*library)) ||
      !serializeSpirvModules(*library, executables, error)) {
    error = "the SPIR-V kernel library's " + variant.str() +
            " variant does not compile" + (error.empty() ? "" : ": " + error);
    return false;
  }
  if (executables.size() != 1) {
    error = "the SPIR-V kernel library compiled into " +
            std::to_string(executables.size()) + " modules, not one";
    return false;
  }
  executable = std::move(executables.front());
  return true;
}

} // namespace hetc::target::spirv
