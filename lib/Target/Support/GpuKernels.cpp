// The LLVM GPU targets' shared steps (see include/hetc/Target/GpuKernels.h).
#include "hetc/Target/GpuKernels.h"

#include "hetc/Target/SPIRV.h"
#include "passes/target/gpu/Passes.h"
#include "passes/target/spirv/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"

namespace hetc::target {

mlir::OwningOpRef<mlir::ModuleOp>
subgroupKernelLibrary(mlir::MLIRContext *context, std::string &error) {
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
  // Wide loads and hardware f16 conversion, which SPIR-V's baseline lacks.
  specialize.addPass(hetc::gpu::createHetcGpuNativeHelpersPass());
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

} // namespace hetc::target
