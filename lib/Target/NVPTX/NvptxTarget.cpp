// The NVPTX target on the back-end seam: modules of gpu kernels are compiled
// into a cubin per chip and a PTX the driver compiles for newer GPUs. Models
// reach NVIDIA GPUs as programs of the kernel library's dispatches.
#include "hetc/Target/NVPTX.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace hetc::target::nvptx {

namespace {

std::string llmNotLowered(het::DeviceAttr device) {
  return "the NVPTX target compiles gpu kernels (hetc-opt "
         "--hetc-lower-gpu-to-nvvm), not llm modules: device \"" +
         device.getName().str() +
         "\" runs a model's segments as dispatches of the kernel library";
}

class NvptxTarget final : public Target {
public:
  llvm::StringRef name() const override { return "nvptx"; }

  llvm::StringRef devices() const override {
    return "nvptx (kind cuda: NVIDIA GPUs, sm_80 and later)";
  }

  /// sm_80 and later: the oldest code hetc builds is sm_80's, which the
  /// driver cannot run on an older GPU.
  bool supports(het::DeviceAttr device) const override {
    llvm::StringRef arch = device.getArch();
    unsigned version = 0;
    return device.getKind() == het::DeviceKind::cuda &&
           arch.consume_front("sm_") && !arch.consumeInteger(10, version) &&
           arch.empty() && version >= 80;
  }

  bool buildPipeline(mlir::OpPassManager &pm, het::DeviceAttr device,
                     pipeline::Phase to, std::string &error) const override {
    error = llmNotLowered(device);
    return false;
  }

  bool compile(mlir::ModuleOp module, het::DeviceAttr device,
               const CompileRequest &request,
               std::vector<Executable> &executables,
               std::string &error) const override {
    bool hasKernels = false;
    module.walk([&](mlir::gpu::GPUModuleOp) { hasKernels = true; });
    if (!hasKernels) {
      error = llmNotLowered(device);
      return false;
    }
    if (!compileGpuModule(module, cudaToolkitPath(), executables, error)) {
      error = "device \"" + device.getName().str() + "\": " + error;
      return false;
    }
    return true;
  }
};

} // namespace

const Target &nvptxTarget() {
  static const NvptxTarget target;
  return target;
}

} // namespace hetc::target::nvptx
