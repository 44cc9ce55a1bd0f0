// hetc-x86-approximate-math: math.exp as a polynomial of arith ops, so the
// loops that use it (SiLU, softmax) vectorize instead of calling libm's
// scalar expf per element (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86APPROXIMATEMATHPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

struct ApproximateMathPass
    : hetc::x86::impl::HetcX86ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return name == math::ExpOp::getOperationName(); });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
