// The SPIR-V back end (see include/hetc/Target/SPIRV.h).
#include "hetc/Target/SPIRV.h"

#include "passes/target/spirv/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace hetc::target::spirv {

void attachDefaultTargetEnv(ModuleOp module) {
  if (!module->hasAttr(mlir::spirv::getTargetEnvAttrName()))
    module->setAttr(mlir::spirv::getTargetEnvAttrName(),
                    hetc::spirv::defaultVulkanTargetEnv(module.getContext()));
}

void buildSpirvPipeline(OpPassManager &pm) {
  // The conversion inlines the kernels' helpers first.
  pm.addPass(hetc::spirv::createHetcSpirvConvertKernelsPass());
  OpPassManager &spirvModule = pm.nest<mlir::spirv::ModuleOp>();
  spirvModule.addPass(mlir::spirv::createSPIRVLowerABIAttributesPass());
  spirvModule.addPass(mlir::spirv::createSPIRVUpdateVCEPass());
}

bool compileToSpirv(ModuleOp module, std::vector<SpirvExecutable> &executables,
                    std::string &error) {
  attachDefaultTargetEnv(module);
  PassManager pm(module.getContext());
  buildSpirvPipeline(pm);
  if (failed(pm.run(module))) {
    error = "the SPIR-V pipeline failed (see the diagnostics above)";
    return false;
  }
  return serializeSpirvModules(module, executables, error);
}

bool serializeSpirvModules(ModuleOp module,
                           std::vector<SpirvExecutable> &executables,
                           std::string &error) {
  bool broken = false;
  module.walk([&](mlir::spirv::ModuleOp spirvModule) {
    if (broken)
      return;
    SpirvExecutable executable;
    executable.name = spirvModule.getName().value_or("module").str();
    SmallVector<uint32_t> words;
    if (failed(mlir::spirv::serialize(spirvModule, words))) {
      error = "spirv.module @" + executable.name + " does not serialize";
      broken = true;
      return;
    }
    executable.binary.assign(reinterpret_cast<const char *>(words.data()),
                             words.size() * sizeof(uint32_t));
    if (std::optional<mlir::spirv::VerCapExtAttr> triple =
            spirvModule.getVceTriple()) {
      SpirvRequirements &needs = executable.requirements;
      // "v1.3" → "1.3".
      needs.version =
          mlir::spirv::stringifyVersion(triple->getVersion()).drop_front().str();
      for (mlir::spirv::Capability capability : triple->getCapabilities())
        needs.capabilities.push_back(
            mlir::spirv::stringifyCapability(capability).str());
      for (mlir::spirv::Extension extension : triple->getExtensions())
        needs.extensions.push_back(
            mlir::spirv::stringifyExtension(extension).str());
    }
    // Entry points and their interface: after the ABI lowering, storage
    // buffers are global variables with set and binding decorations, and
    // the workgroup size is the entry point's LocalSize execution mode.
    // A kernel's buffers are the bound variables its entry function takes
    // the address of; its binding count is the highest binding + 1.
    llvm::StringMap<int> bindingOf;
    spirvModule.walk([&](mlir::spirv::GlobalVariableOp variable) {
      if (auto binding = variable.getBinding())
        bindingOf[variable.getSymName()] = static_cast<int>(*binding);
    });
    spirvModule.walk([&](mlir::spirv::EntryPointOp entry) {
      SpirvKernel kernel;
      kernel.entryPoint = entry.getFn().str();
      auto function = spirvModule.lookupSymbol<mlir::spirv::FuncOp>(entry.getFn());
      if (function)
        function.walk([&](mlir::spirv::AddressOfOp address) {
          auto found = bindingOf.find(address.getVariable());
          if (found != bindingOf.end())
            kernel.bindings = std::max(kernel.bindings, found->second + 1);
        });
      executable.kernels.push_back(kernel);
    });
    spirvModule.walk([&](mlir::spirv::ExecutionModeOp mode) {
      if (mode.getExecutionMode() != mlir::spirv::ExecutionMode::LocalSize)
        return;
      for (SpirvKernel &kernel : executable.kernels) {
        if (kernel.entryPoint != mode.getFn())
          continue;
        ArrayAttr values = mode.getValues();
        for (size_t d = 0; d < 3 && d < values.size(); ++d)
          kernel.workgroupSize[d] = cast<IntegerAttr>(values[d]).getInt();
      }
    });
    executables.push_back(std::move(executable));
  });
  if (broken)
    return false;
  if (executables.empty()) {
    error = "the module holds no spirv.module; run the SPIR-V pipeline "
            "(hetc-lower-gpu-to-spirv) on a gpu.container_module first";
    return false;
  }
  return true;
}

void registerSpirvPipeline() {
  PassPipelineRegistration<>(
      "hetc-lower-gpu-to-spirv",
      "Lower gpu.module kernels to SPIR-V modules for Vulkan compute devices "
      "(in the module's spirv.target_env, else MLIR's default SPIR-V 1.0 "
      "Shader environment)",
      [](OpPassManager &pm) { buildSpirvPipeline(pm); });
}

} // namespace hetc::target::spirv
