// The AMDGPU target on the back-end seam: modules of gpu kernels are
// compiled into a code object per CDNA chip. Models reach AMD GPUs as
// programs of the kernel library's dispatches.
#include "hetc/Target/AMDGPU.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <algorithm>

namespace hetc::target::amdgpu {

namespace {

std::string llmNotLowered(het::DeviceAttr device) {
  return "the AMDGPU target compiles gpu kernels (hetc-opt "
         "--hetc-lower-gpu-to-rocdl), not llm modules: device \"" +
         device.getName().str() +
         "\" runs a model's segments as dispatches of the kernel library";
}

class AmdgpuTarget final : public Target {
public:
  llvm::StringRef name() const override { return "amdgpu"; }

  llvm::StringRef devices() const override {
    return "amdgpu (kind hip: AMD Instinct gfx90a and gfx942)";
  }

  bool supports(het::DeviceAttr device) const override {
    return device.getKind() == het::DeviceKind::hip &&
           llvm::is_contained(chips(), device.getArch());
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
    if (!compileGpuModule(module, request.amdgpuCodeObject, executables,
                          error)) {
      error = "device \"" + device.getName().str() + "\": " + error;
      return false;
    }
    return true;
  }
};

} // namespace

const Target &amdgpuTarget() {
  static const AmdgpuTarget target;
  return target;
}

} // namespace hetc::target::amdgpu
