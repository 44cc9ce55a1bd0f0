// The SPIR-V target on the back-end seam: the gpu kernels of a module are
// lowered and serialized into one executable per spirv.module. Models reach
// Vulkan devices as programs of the kernel library's dispatches.
#include "hetc/Target/SPIRV.h"

namespace hetc::target::spirv {

namespace {

class SpirvTarget final : public KernelLibraryTarget {
public:
  llvm::StringRef name() const override { return "spirv"; }

  llvm::StringRef devices() const override {
    return "spirv (kind spirv: Vulkan compute devices)";
  }

  bool supports(het::DeviceAttr device) const override {
    return device.getKind() == het::DeviceKind::spirv;
  }

protected:
  llvm::StringRef kernelPipeline() const override {
    return "hetc-lower-gpu-to-spirv";
  }

  bool compileKernels(mlir::ModuleOp module, het::DeviceAttr device,
                      const CompileRequest &request,
                      std::vector<Executable> &executables,
                      std::string &error) const override {
    std::vector<SpirvExecutable> modules;
    if (!compileToSpirv(module, modules, error))
      return false;
    for (SpirvExecutable &spirvModule : modules) {
      Executable executable;
      executable.variant = device.getArch().str();
      executable.format = "spirv";
      executable.code.assign(spirvModule.binary.begin(),
                             spirvModule.binary.end());
      executable.kernels = std::move(spirvModule.kernels);
      executables.push_back(std::move(executable));
    }
    return true;
  }
};

} // namespace

const Target &spirvTarget() {
  static const SpirvTarget target;
  return target;
}

} // namespace hetc::target::spirv
