// The registry of targets: every back end built into hetc, found by device.
#include "hetc/Target/AMDGPU.h"
#include "hetc/Target/NVPTX.h"
#include "hetc/Target/SPIRV.h"
#include "hetc/Target/Target.h"
#include "hetc/Target/X86.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace hetc::target {

Target::~Target() = default;

std::string KernelLibraryTarget::llmNotLowered(het::DeviceAttr device) const {
  return "the " + name().str() + " target compiles gpu kernels (hetc-opt --" +
         kernelPipeline().str() + "), not llm modules: device \"" +
         device.getName().str() +
         "\" runs a model's segments as dispatches of the kernel library";
}

bool KernelLibraryTarget::compile(mlir::ModuleOp module, het::DeviceAttr device,
                                  const CompileRequest &request,
                                  std::vector<Executable> &executables,
                                  std::string &error) const {
  bool hasKernels = false;
  module.walk([&](mlir::gpu::GPUModuleOp) { hasKernels = true; });
  if (!hasKernels) {
    error = llmNotLowered(device);
    return false;
  }
  if (!compileKernels(module, device, request, executables, error)) {
    error = "device \"" + device.getName().str() + "\": " + error;
    return false;
  }
  return true;
}

llvm::ArrayRef<const Target *> registeredTargets() {
  static const std::vector<const Target *> targets = {
      &x86::x86Target(), &spirv::spirvTarget(), &nvptx::nvptxTarget(),
      &amdgpu::amdgpuTarget()};
  return targets;
}

const Target *findTarget(het::DeviceAttr device, std::string &error) {
  for (const Target *target : registeredTargets())
    if (target->supports(device))
      return target;
  std::string choices;
  for (const Target *target : registeredTargets())
    choices += (choices.empty() ? "" : "; ") + target->devices().str();
  error = "no target generates code for device \"" + device.getName().str() +
          "\" (kind " + het::stringifyDeviceKind(device.getKind()).str() +
          ", arch \"" + device.getArch().str() + "\"); targets: " + choices;
  return nullptr;
}

} // namespace hetc::target
