// hetc-x86-fuse-elementwise: upstream elementwise fusion of linalg generics,
// refusing fusions that would recompute a producer inside loops it does not
// depend on (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "hetc-x86-fuse-elementwise"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86FUSEELEMENTWISEPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// Whether fusing the producer of `operand` into its consumer would run the
/// producer's body more often than the producer itself does.
bool fusionRecomputes(OpOperand *operand) {
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  if (!consumer || !producer)
    return false;
  AffineMap map = consumer.getMatchingIndexingMap(operand);
  bool everyLoop = llvm::all_of(
      llvm::seq<unsigned>(0, consumer.getNumLoops()),
      [&](unsigned loop) { return map.isFunctionOfDim(loop); });
  if (everyLoop)
    return false;
  // One operation and the yield: recomputing it costs what reading it would.
  return producer.getBody()->getOperations().size() > 2;
}

struct FuseElementwisePass
    : hetc::x86::impl::HetcX86FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    linalg::ControlFusionFn control = [](OpOperand *operand) {
      Operation *producer = operand->get().getDefiningOp();
      return producer && producer->hasOneUse() && !fusionRecomputes(operand);
    };
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
