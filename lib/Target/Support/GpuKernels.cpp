// The LLVM GPU targets' shared steps (see include/hetc/Target/GpuKernels.h).
#include "hetc/Target/GpuKernels.h"

#include "hetc/Target/SPIRV.h"
#include "passes/target/gpu/Passes.h"
#include "passes/target/spirv/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

namespace hetc::target {

mlir::OwningOpRef<mlir::ModuleOp>
subgroupKernelLibrary(mlir::MLIRContext *context, llvm::StringRef target,
                      std::string &error) {
  mlir::OwningOpRef<mlir::ModuleOp> library =
      spirv::parseKernelLibrary(context);
  if (!library) {
    error = "the kernel library does not parse";
    return nullptr;
  }
  mlir::PassManager specialize(context);
  hetc::spirv::HetcSpirvSpecializeKernelsPassOptions variant;
  variant.variant = "subgroup";
  specialize.addPass(hetc::spirv::createHetcSpirvSpecializeKernelsPass(variant));
  // Wide loads, hardware f16 conversion and matrix units, which SPIR-V's
  // baseline lacks.
  hetc::gpu::HetcGpuNativeHelpersPassOptions native;
  native.target = target.str();
  specialize.addPass(hetc::gpu::createHetcGpuNativeHelpersPass(native));
  if (mlir::failed(specialize.run(*library))) {
    error = "the kernel library's subgroup variant does not build";
    return nullptr;
  }
  return library;
}

bool prepareGpuKernels(mlir::ModuleOp module, unsigned subgroupSize,
                       std::string &error) {
  mlir::PassManager prepare(module.getContext());
  hetc::gpu::HetcGpuPrepareKernelsPassOptions options;
  options.subgroupSize = subgroupSize;
  prepare.addPass(hetc::gpu::createHetcGpuPrepareKernelsPass(options));
  if (mlir::failed(prepare.run(module))) {
    error = "the kernels cannot be prepared for " +
            std::to_string(subgroupSize) +
            "-lane subgroups (see the diagnostics above)";
    return false;
  }
  return true;
}

std::vector<KernelInfo> describeGpuKernels(mlir::ModuleOp module) {
  std::vector<KernelInfo> kernels;
  module.walk([&](mlir::gpu::GPUFuncOp function) {
    if (!function.isKernel())
      return;
    KernelInfo kernel;
    kernel.entryPoint = function.getName().str();
    for (mlir::Type argument : function.getArgumentTypes())
      if (mlir::isa<mlir::MemRefType>(argument))
        ++kernel.bindings;
    if (std::optional<llvm::ArrayRef<int32_t>> size =
            function.getKnownBlockSize())
      for (size_t d = 0; d < 3 && d < size->size(); ++d)
        kernel.workgroupSize[d] = (*size)[d];
    kernels.push_back(std::move(kernel));
  });
  return kernels;
}

bool serializeToAssembly(mlir::ModuleOp module, llvm::StringRef toolkit,
                         std::string &assembly, std::string &error) {
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler capture(
      module.getContext(), [&](mlir::Diagnostic &diagnostic) {
        llvm::raw_string_ostream(diagnostics) << diagnostic << "\n";
        return mlir::success();
      });
  mlir::gpu::TargetOptions options(toolkit, {}, {}, {},
                                   mlir::gpu::CompilationTarget::Assembly);
  if (mlir::failed(mlir::gpu::transformGpuModulesToBinaries(module, nullptr,
                                                            options))) {
    error = "the kernels do not translate to assembly: " + diagnostics;
    return false;
  }
  int binaries = 0;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    ++binaries;
    assembly = mlir::cast<mlir::gpu::ObjectAttr>(binary.getObjects()[0])
                   .getObject()
                   .str();
  });
  if (binaries != 1) {
    error = "expected one gpu.module to serialize, found " +
            std::to_string(binaries);
    return false;
  }
  return true;
}

} // namespace hetc::target
