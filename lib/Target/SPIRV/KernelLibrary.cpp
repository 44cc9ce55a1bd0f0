// The kernel library (kernels/Kernels.mlir), embedded at build time.
#include "hetc/Target/SPIRV.h"

#include "passes/target/spirv/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

namespace hetc::target::spirv {

namespace {

llvm::StringRef kernelsSource() {
  static constexpr const char kSource[] =
#include "KernelLibrary.inc"
      ;
  return llvm::StringRef(kSource, sizeof(kSource) - 1);
}

llvm::StringRef matrixUnitsSource() {
  static constexpr const char kSource[] =
#include "MatrixUnits.inc"
      ;
  return llvm::StringRef(kSource, sizeof(kSource) - 1);
}

/// The one gpu.module of a library file.
mlir::gpu::GPUModuleOp kernelsOf(mlir::ModuleOp file) {
  auto modules = file.getOps<mlir::gpu::GPUModuleOp>();
  return modules.empty() ? nullptr : *modules.begin();
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
parseKernelLibrary(mlir::MLIRContext *context) {
  // MatrixUnits.mlir calls Kernels.mlir's helpers: each verifies only once
  // the two are one gpu.module.
  mlir::ParserConfig config(context, /*verifyAfterParse=*/false);
  mlir::OwningOpRef<mlir::ModuleOp> library =
      mlir::parseSourceString<mlir::ModuleOp>(kernelsSource(), config,
                                              "Kernels.mlir");
  mlir::OwningOpRef<mlir::ModuleOp> units =
      mlir::parseSourceString<mlir::ModuleOp>(matrixUnitsSource(), config,
                                              "MatrixUnits.mlir");
  if (!library || !units)
    return nullptr;
  mlir::gpu::GPUModuleOp kernels = kernelsOf(*library);
  mlir::gpu::GPUModuleOp more = kernelsOf(*units);
  if (!kernels || !more) {
    mlir::emitError(mlir::UnknownLoc::get(context))
        << "the kernel library's files each hold one gpu.module";
    return nullptr;
  }
  kernels.getBody()->getOperations().splice(
      kernels.getBody()->end(), more.getBody()->getOperations());
  if (mlir::failed(mlir::verify(*library)))
    return nullptr;
  return library;
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
