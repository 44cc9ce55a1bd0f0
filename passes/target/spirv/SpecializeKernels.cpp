// hetc-spirv-specialize-kernels: choose the kernel library's reductions
// (see Passes.td).
#include "passes/target/spirv/Passes.h"
#include "passes/target/gpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/SetVector.h"

namespace hetc::spirv {
#define GEN_PASS_DEF_HETCSPIRVSPECIALIZEKERNELSPASS
#include "passes/target/spirv/Passes.h.inc"
} // namespace hetc::spirv

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kSubgroupSuffix = "_subgroup";

/// `environment` with the capabilities subgroup reductions need.
mlir::spirv::TargetEnvAttr
withSubgroupArithmetic(mlir::spirv::TargetEnvAttr environment) {
  mlir::spirv::VerCapExtAttr triple = environment.getTripleAttr();
  llvm::SetVector<mlir::spirv::Capability> capabilities;
  for (mlir::spirv::Capability capability : triple.getCapabilities())
    capabilities.insert(capability);
  capabilities.insert(mlir::spirv::Capability::GroupNonUniform);
  capabilities.insert(mlir::spirv::Capability::GroupNonUniformArithmetic);
  SmallVector<mlir::spirv::Extension> extensions(triple.getExtensions());
  // Subgroup operations are SPIR-V 1.3.
  mlir::spirv::Version version =
      std::max(triple.getVersion(), mlir::spirv::Version::V_1_3);
  auto widened = mlir::spirv::VerCapExtAttr::get(
      version, capabilities.getArrayRef(), extensions, environment.getContext());
  return mlir::spirv::TargetEnvAttr::get(
      widened, environment.getResourceLimits(), environment.getClientAPI(),
      environment.getVendorID(), environment.getDeviceType(),
      environment.getDeviceID());
}

struct SpecializeKernelsPass
    : hetc::spirv::impl::HetcSpirvSpecializeKernelsPassBase<
          SpecializeKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    bool subgroup = variant == "subgroup";
    if (!subgroup && variant != "portable") {
      getOperation().emitError()
          << "hetc-spirv-specialize-kernels: unknown variant \"" << variant
          << "\"; use portable or subgroup";
      return signalPassFailure();
    }
    bool failed = false;
    getOperation().walk([&](gpu::GPUModuleOp kernels) {
      if (::mlir::failed(
              hetc::gpu::chooseHelperForms(kernels, kSubgroupSuffix, subgroup)))
        failed = true;
      if (subgroup) {
        mlir::spirv::TargetEnvAttr environment =
            mlir::spirv::lookupTargetEnv(kernels);
        if (!environment)
          environment = hetc::spirv::defaultVulkanTargetEnv(&getContext());
        kernels->setAttr(mlir::spirv::getTargetEnvAttrName(),
                         withSubgroupArithmetic(environment));
      }
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
