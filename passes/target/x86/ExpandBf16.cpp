// hetc-x86-expand-bf16: f32 <-> bf16 conversions as integer ops, so code
// that writes a bf16 KV cache needs no runtime library call (see
// Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86EXPANDBF16PASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

struct ExpandBf16Pass : hetc::x86::impl::HetcX86ExpandBf16PassBase<ExpandBf16Pass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
