// hetc-gpu-native-helpers: the kernel library's helpers in their forms for
// the LLVM GPU targets (see Passes.td).
#include "passes/target/gpu/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace hetc::gpu {
#define GEN_PASS_DEF_HETCGPUNATIVEHELPERSPASS
#include "passes/target/gpu/Passes.h.inc"
} // namespace hetc::gpu

namespace {

/// The targets with helper forms of their own.
constexpr llvm::StringLiteral kTargets[] = {"nvptx", "amdgpu"};

struct NativeHelpersPass
    : hetc::gpu::impl::HetcGpuNativeHelpersPassBase<NativeHelpersPass> {
  using Base::Base;

  /// Kernels written for another target's matrix units: they would run
  /// their portable (emulated) products here.
  void dropOtherTargetsKernels(mlir::gpu::GPUModuleOp kernels) {
    for (auto kernel : llvm::make_early_inc_range(
             kernels.getBody()->getOps<mlir::gpu::GPUFuncOp>()))
      if (auto units =
              kernel->getAttrOfType<mlir::StringAttr>("hetc.matrix_units"))
        if (units.getValue() != target)
          kernel.erase();
  }

  void runOnOperation() override {
    if (!target.empty() && !llvm::is_contained(kTargets, target)) {
      getOperation().emitError()
          << "hetc-gpu-native-helpers: unknown target \"" << target
          << "\"; use nvptx or amdgpu, or no target for the _native forms "
             "alone";
      return signalPassFailure();
    }
    bool failed = false;
    getOperation().walk([&](mlir::gpu::GPUModuleOp kernels) {
      if (!target.empty()) {
        dropOtherTargetsKernels(kernels);
        for (llvm::StringRef other : kTargets)
          failed |= mlir::failed(hetc::gpu::chooseHelperForms(
              kernels, ("_" + other).str(), /*useSuffixed=*/other == target));
      }
      failed |= mlir::failed(
          hetc::gpu::chooseHelperForms(kernels, "_native", /*useSuffixed=*/true));
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
