// hetc-spirv-specialize-kernels: choose the kernel library's reductions
// (see Passes.td).
#include "passes/target/spirv/Passes.h"

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
      SymbolTable symbols(kernels);
      SmallVector<func::FuncOp> replacements;
      for (auto helper : kernels.getOps<func::FuncOp>())
        if (helper.getSymName().ends_with(kSubgroupSuffix))
          replacements.push_back(helper);
      for (func::FuncOp replacement : replacements) {
        StringRef name =
            replacement.getSymName().drop_back(kSubgroupSuffix.size());
        auto original = symbols.lookup<func::FuncOp>(name);
        if (!original) {
          replacement.emitError()
              << "@" << replacement.getSymName() << " is the subgroup form of @"
              << name << ", which the module lacks; define @" << name
              << " (the portable form) beside it";
          failed = true;
          continue;
        }
        if (!SymbolTable::symbolKnownUseEmpty(replacement, kernels)) {
          replacement.emitError()
              << "@" << replacement.getSymName()
              << " is called by name; call @" << name
              << " and let the library variant choose its body";
          failed = true;
          continue;
        }
        if (original.getFunctionType() != replacement.getFunctionType()) {
          replacement.emitError()
              << "@" << replacement.getSymName() << " has type "
              << replacement.getFunctionType() << ", but @" << name
              << " has " << original.getFunctionType()
              << "; the two forms must be interchangeable";
          failed = true;
          continue;
        }
        if (!subgroup) {
          symbols.erase(replacement);
          continue;
        }
        symbols.erase(original);
        if (::mlir::failed(symbols.rename(replacement, name))) {
          replacement.emitError() << "cannot rename to @" << name;
          failed = true;
        }
      }
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
