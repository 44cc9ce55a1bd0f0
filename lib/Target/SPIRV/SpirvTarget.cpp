// The SPIR-V target on the back-end seam: gpu kernels of a module are lowered
// and serialized into one executable per spirv.module. llm modules do not
// lower to gpu kernels yet, and the target says so instead of guessing.
#include "hetc/Target/SPIRV.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"

namespace hetc::target::spirv {

namespace {

/// Why a model's segments cannot be placed on `device` yet.
std::string llmNotLowered(het::DeviceAttr device) {
  return "the SPIR-V target lowers gpu kernels (hetc-opt "
         "--hetc-lower-gpu-to-spirv), not llm modules yet: device \"" +
         device.getName().str() +
         "\" cannot run a model's segments; place them on a cpu device";
}

class SpirvTarget final : public Target {
public:
  llvm::StringRef name() const override { return "spirv"; }

  llvm::StringRef devices() const override {
    return "spirv (kind spirv: Vulkan compute devices)";
  }

  bool supports(het::DeviceAttr device) const override {
    return device.getKind() == het::DeviceKind::spirv;
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
    std::vector<SpirvExecutable> modules;
    if (!compileToSpirv(module, modules, error)) {
      error = "device \"" + device.getName().str() + "\": " + error;
      return false;
    }
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
