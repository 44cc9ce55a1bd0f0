// het-outline: one het.segment per run of ops on one device, with explicit
// transfers between memory spaces (see Passes.td).
#include "passes/het/Passes.h"

#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#define DEBUG_TYPE "het-outline"

namespace hetc::het {
#define GEN_PASS_DEF_HETOUTLINEPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;
using namespace hetc;
using namespace hetc::het;

namespace {

DeviceAttr placementOf(Operation *op) {
  return op->getAttrOfType<DeviceAttr>(HetDialect::kPlacementAttrName);
}

/// Moves weight lookups and unplaced bookkeeping to the top of `block`: they
/// compute nothing on any device, and segments must not split around them.
LogicalResult hoistUnplaced(Block &block) {
  llvm::SmallPtrSet<Operation *, 16> hoisted;
  Operation *insertBefore = &block.front();
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (op.hasTrait<OpTrait::IsTerminator>() || placementOf(&op))
      continue;
    if (!isa<llm::GetWeightOp>(op) && !isPure(&op))
      return op.emitOpError()
             << "is not placed on a device and has effects; run het-partition "
                "first, or give it het.placement";
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !hoisted.contains(def))
        return op.emitOpError()
               << "is not placed on a device but uses a value computed on "
                  "one; give it het.placement";
    }
    hoisted.insert(&op);
    if (&op == insertBefore) {
      insertBefore = op.getNextNode();
      continue;
    }
    op.moveBefore(insertBefore);
  }
  return success();
}

/// Turns `run`, consecutive ops of one block all placed on `device`, into one
/// segment, transferring what it uses from memory the device does not own.
void outlineRun(ArrayRef<Operation *> run, DeviceAttr device) {
  llvm::SmallPtrSet<Operation *, 32> inRun(run.begin(), run.end());
  llvm::SetVector<Value> captured;
  llvm::SetVector<Value> escaping;
  for (Operation *op : run) {
    llvm::SetVector<Value> used(op->operand_begin(), op->operand_end());
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, used);
    for (Value value : used) {
      Operation *def = value.getDefiningOp();
      if (!def || !inRun.contains(def))
        captured.insert(value);
    }
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers()) {
        Operation *top = op->getBlock()->findAncestorOpInBlock(*user);
        if (!top || !inRun.contains(top)) {
          escaping.insert(result);
          break;
        }
      }
  }

  OpBuilder builder(run.front());
  Location loc = run.front()->getLoc();
  MemorySpaceAttr home = getHomeMemorySpace(device);
  SmallVector<std::pair<Value, Value>> copies;
  SmallVector<Value> tokens;
  for (Value value : captured) {
    MemorySpaceAttr space = getKnownMemorySpace(value);
    if (!space || space.getOwner() == device.getName())
      continue;
    auto transfer = TransferOp::create(
        builder, loc,
        TypeRange{value.getType(), TokenType::get(builder.getContext())},
        value, space, home);
    copies.emplace_back(value, transfer.getResult());
    tokens.push_back(transfer.getDone());
  }
  if (!tokens.empty())
    WaitOp::create(builder, loc, tokens);

  SmallVector<Type> resultTypes;
  for (Value value : escaping)
    resultTypes.push_back(value.getType());
  auto segment = SegmentOp::create(builder, loc, device, resultTypes);
  Block &body = segment.getBody().front();
  for (Operation *op : run) {
    op->removeAttr(HetDialect::kPlacementAttrName);
    if (body.mightHaveTerminator())
      op->moveBefore(body.getTerminator());
    else
      op->moveBefore(&body, body.end());
  }
  if (!body.mightHaveTerminator()) {
    OpBuilder end = OpBuilder::atBlockEnd(&body);
    YieldOp::create(end, loc, escaping.getArrayRef());
  }
  auto insideSegment = [&](OpOperand &use) {
    return segment->isProperAncestor(use.getOwner());
  };
  for (auto [value, copy] : copies)
    value.replaceUsesWithIf(copy, insideSegment);
  for (auto [escaped, result] : llvm::zip(escaping, segment.getResults())) {
    Value value = escaped;
    value.replaceUsesWithIf(result, [&](OpOperand &use) {
      return !insideSegment(use);
    });
  }
}

LogicalResult outline(FunctionOpInterface function) {
  Region &body = function.getFunctionBody();
  if (body.empty())
    return success();
  if (!body.hasOneBlock())
    return function.emitOpError()
           << "has " << std::distance(body.begin(), body.end())
           << " blocks; het-outline outlines single-block functions";
  Block &block = body.front();
  for (Operation &op : block)
    if (isa<SegmentOp>(op))
      return op.emitOpError()
             << "already exists; the function is outlined (run het-outline "
                "once, on the output of het-partition)";
  if (failed(hoistUnplaced(block)))
    return failure();

  SmallVector<std::pair<DeviceAttr, SmallVector<Operation *>>> runs;
  for (Operation &op : block) {
    DeviceAttr device = placementOf(&op);
    if (!device)
      continue;
    if (runs.empty() || runs.back().first != device)
      runs.push_back({device, {}});
    runs.back().second.push_back(&op);
  }
  for (auto &[device, ops] : runs)
    outlineRun(ops, device);
  return success();
}

struct HetOutlinePass : hetc::het::impl::HetOutlinePassBase<HetOutlinePass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<FunctionOpInterface>())
      if (failed(outline(function)))
        return signalPassFailure();
  }
};

} // namespace
