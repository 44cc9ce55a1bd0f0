// The NVPTX target on the back-end seam: modules of gpu kernels are compiled
// into a cubin per chip and a PTX the driver compiles for newer GPUs. Models
// reach NVIDIA GPUs as programs of the kernel library's dispatches.
#include "hetc/Target/NVPTX.h"

namespace hetc::target::nvptx {

namespace {

class NvptxTarget final : public KernelLibraryTarget {
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

protected:
  llvm::StringRef kernelPipeline() const override {
    return "hetc-lower-gpu-to-nvvm";
  }

  bool compileKernels(mlir::ModuleOp module, het::DeviceAttr device,
                      const CompileRequest &request,
                      std::vector<Executable> &executables,
                      std::string &error) const override {
    return compileGpuModule(module, cudaToolkitPath(), executables, error);
  }
};

} // namespace

const Target &nvptxTarget() {
  static const NvptxTarget target;
  return target;
}

} // namespace hetc::target::nvptx
