// het-verify-partitioned: the stage verifier after partitioning (see Passes.td).
#include "passes/het/Passes.h"

#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMDialect.h"
#include "dialects/llm/LLMOps.h"

#include "mlir/IR/BuiltinOps.h"

#define DEBUG_TYPE "het-verify-partitioned"

namespace hetc::het {
#define GEN_PASS_DEF_HETVERIFYPARTITIONEDPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;
using namespace hetc;
using namespace hetc::het;

namespace {

/// Checks one llm op against the rules in the pass description.
LogicalResult verifyPlaced(Operation *op) {
  if (isa<llm::WeightOp>(op))
    return success();
  bool inSegment = op->getParentOfType<SegmentOp>() != nullptr;
  auto placement = op->getAttrOfType<DeviceAttr>(HetDialect::kPlacementAttrName);
  if (isa<llm::GetWeightOp>(op)) {
    if (inSegment || placement ||
        op->hasAttr(HetDialect::kMemorySpaceAttrName))
      return success();
    return op->emitOpError()
           << "does not say where the weight lives after partitioning; give "
              "it het.memory_space";
  }
  if (inSegment)
    return success();
  if (!placement)
    return op->emitOpError() << "is not placed on a device after "
                                "partitioning; put it in a het.segment or "
                                "give it het.placement";
  for (Value operand : op->getOperands()) {
    MemorySpaceAttr space = getKnownMemorySpace(operand);
    if (!space || space.getOwner() == placement.getName())
      continue;
    InFlightDiagnostic diag =
        op->emitOpError() << "is placed on \"" << placement.getName()
                          << "\" but uses a value in " << space
                          << "; move the value with het.transfer";
    if (Operation *def = operand.getDefiningOp())
      diag.attachNote(def->getLoc()) << "value defined here";
    return failure();
  }
  return success();
}

struct HetVerifyPartitionedPass
    : hetc::het::impl::HetVerifyPartitionedPassBase<HetVerifyPartitionedPass> {
  void runOnOperation() override {
    WalkResult result = getOperation().walk([](Operation *op) {
      if (!isa<llm::LLMDialect>(op->getDialect()))
        return WalkResult::advance();
      return failed(verifyPlaced(op)) ? WalkResult::interrupt()
                                      : WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
