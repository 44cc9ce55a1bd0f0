// hetc-gpu-native-helpers: the kernel library's helpers in their forms for
// the LLVM GPU targets (see Passes.td).
#include "passes/target/gpu/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace hetc::gpu {
#define GEN_PASS_DEF_HETCGPUNATIVEHELPERSPASS
#include "passes/target/gpu/Passes.h.inc"
} // namespace hetc::gpu

namespace {

struct NativeHelpersPass
    : hetc::gpu::impl::HetcGpuNativeHelpersPassBase<NativeHelpersPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation().walk([&](mlir::gpu::GPUModuleOp kernels) {
      failed |= mlir::failed(
          hetc::gpu::chooseHelperForms(kernels, "_native", /*useSuffixed=*/true));
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
