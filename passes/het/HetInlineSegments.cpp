// het-inline-segments: a plan on one CPU back to the imported module (see
// Passes.td).
#include "passes/het/Passes.h"

#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace hetc::het {
#define GEN_PASS_DEF_HETINLINESEGMENTSPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;
using namespace hetc::het;

namespace {

struct InlineSegmentsPass
    : hetc::het::impl::HetInlineSegmentsPassBase<InlineSegmentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    DeviceAttr device;
    WalkResult checked = module.walk([&](Operation *op) {
      if (isa<TransferOp, WaitOp>(op)) {
        op->emitOpError() << "moves a value between memories; only a plan "
                             "on one device inlines";
        return WalkResult::interrupt();
      }
      auto segment = dyn_cast<SegmentOp>(op);
      if (!segment)
        return WalkResult::advance();
      DeviceAttr on = segment.getDevice();
      if (on.getKind() != DeviceKind::cpu || (device && device != on)) {
        segment.emitOpError()
            << "runs on " << on.getName() << (device ? " beside " : "")
            << (device ? device.getName() : StringRef())
            << "; only a plan on one CPU inlines (run het-lower-to-program "
               "for plans over several devices)";
        return WalkResult::interrupt();
      }
      device = on;
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();

    SmallVector<SegmentOp> segments;
    module.walk([&](SegmentOp segment) { segments.push_back(segment); });
    for (SegmentOp segment : segments) {
      Block &body = segment.getBody().front();
      auto yield = cast<YieldOp>(body.getTerminator());
      for (auto [result, value] :
           llvm::zip(segment.getResults(), yield.getOperands()))
        result.replaceAllUsesWith(value);
      yield.erase();
      segment->getBlock()->getOperations().splice(
          Block::iterator(segment), body.getOperations());
      segment.erase();
    }
    for (auto tiers : llvm::make_early_inc_range(module.getOps<KVTiersOp>()))
      tiers.erase();
    module->removeAttr(HetDialect::kPlanAttrName);
    module.walk([](Operation *op) {
      op->removeAttr(HetDialect::kPlacementAttrName);
      op->removeAttr(HetDialect::kMemorySpaceAttrName);
      if (auto function = dyn_cast<func::FuncOp>(op))
        for (unsigned i = 0; i < function.getNumArguments(); ++i) {
          function.removeArgAttr(i, HetDialect::kMemorySpaceAttrName);
          function.removeArgAttr(i, HetDialect::kKVCacheAttrName);
        }
    });
  }
};

} // namespace
