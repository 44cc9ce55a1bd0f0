// The AMDGPU target on the back-end seam: modules of gpu kernels are
// compiled into a code object per CDNA chip. Models reach AMD GPUs as
// programs of the kernel library's dispatches.
#include "hetc/Target/AMDGPU.h"

namespace hetc::target::amdgpu {

namespace {

class AmdgpuTarget final : public KernelLibraryTarget {
public:
  llvm::StringRef name() const override { return "amdgpu"; }

  llvm::StringRef devices() const override {
    return "amdgpu (kind hip: AMD Instinct gfx90a and gfx942)";
  }

  bool supports(het::DeviceAttr device) const override {
    return device.getKind() == het::DeviceKind::hip &&
           llvm::is_contained(chips(), device.getArch());
  }

protected:
  llvm::StringRef kernelPipeline() const override {
    return "hetc-lower-gpu-to-rocdl";
  }

  bool compileKernels(mlir::ModuleOp module, het::DeviceAttr device,
                      const CompileRequest &request,
                      std::vector<Executable> &executables,
                      std::string &error) const override {
    return compileGpuModule(module, request.amdgpuCodeObject, executables,
                            error);
  }
};

} // namespace

const Target &amdgpuTarget() {
  static const AmdgpuTarget target;
  return target;
}

} // namespace hetc::target::amdgpu
