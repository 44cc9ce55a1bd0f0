// Builders, verifiers and memory-space queries of the het ops. Each check names
// the rule (C1, C2, ...) documented in HetOps.td.
#include "dialects/het/HetOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace hetc::het;

namespace hetc::het {

MemorySpaceAttr getHomeMemorySpace(DeviceAttr device) {
  MemoryKind kind =
      device.getKind() == DeviceKind::cpu ? MemoryKind::dram : MemoryKind::hbm;
  return MemorySpaceAttr::get(device.getContext(), kind, device.getName());
}

MemorySpaceAttr getKnownMemorySpace(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def) {
    // A block argument of a segment body is not produced by any op; it belongs
    // to the segment's device like any value computed there.
    Operation *parent = value.getParentRegion()->getParentOp();
    if (auto segment = dyn_cast_or_null<SegmentOp>(parent))
      return segment.getHomeMemorySpace();
    auto function = dyn_cast_or_null<FunctionOpInterface>(parent);
    auto argument = cast<BlockArgument>(value);
    if (function && argument.getOwner()->isEntryBlock())
      return function.getArgAttrOfType<MemorySpaceAttr>(
          argument.getArgNumber(), HetDialect::kMemorySpaceAttrName);
    return {};
  }
  if (auto transfer = dyn_cast<TransferOp>(def))
    return transfer.getTo();
  if (auto space =
          def->getAttrOfType<MemorySpaceAttr>(HetDialect::kMemorySpaceAttrName))
    return space;
  if (auto segment = dyn_cast<SegmentOp>(def))
    return segment.getHomeMemorySpace();
  if (auto device =
          def->getAttrOfType<DeviceAttr>(HetDialect::kPlacementAttrName))
    return getHomeMemorySpace(device);
  if (auto segment = def->getParentOfType<SegmentOp>())
    return segment.getHomeMemorySpace();
  return {};
}

} // namespace hetc::het

//===----------------------------------------------------------------------===//
// SegmentOp
//===----------------------------------------------------------------------===//

void SegmentOp::build(OpBuilder &builder, OperationState &state,
                      DeviceAttr device, TypeRange resultTypes) {
  state.addAttribute(getDeviceAttrName(state.name), device);
  state.addTypes(resultTypes);
  Region *body = state.addRegion();
  body->push_back(new Block());
  // Only a segment without results may rely on the implicit empty yield.
  if (resultTypes.empty())
    ensureTerminator(*body, builder, state.location);
}

MemorySpaceAttr SegmentOp::getHomeMemorySpace() {
  return hetc::het::getHomeMemorySpace(getDevice());
}

LogicalResult SegmentOp::verifyRegions() {
  // C1
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getValues().size()
                         << " value(s) of types (" << yield.getValues().getTypes()
                         << ") but has result types (" << getResultTypes()
                         << ")";

  DeviceAttr device = getDevice();
  Region &body = getBody();
  WalkResult result = body.walk([&](Operation *op) -> WalkResult {
    // C4
    if (isa<SegmentOp>(op)) {
      op->emitOpError() << "is nested in a segment on \"" << device.getName()
                        << "\"; segments do not nest";
      return WalkResult::interrupt();
    }
    // C3
    if (auto placement =
            op->getAttrOfType<DeviceAttr>(HetDialect::kPlacementAttrName)) {
      if (placement != device) {
        op->emitOpError() << "is placed on " << placement
                          << " inside a segment on " << device
                          << "; move it out of the segment or drop its "
                             "het.placement";
        return WalkResult::interrupt();
      }
    }
    // C2: only values captured from outside can live elsewhere.
    for (Value operand : op->getOperands()) {
      if (body.isAncestor(operand.getParentRegion()))
        continue;
      MemorySpaceAttr space = getKnownMemorySpace(operand);
      if (!space || space.getOwner() == device.getName())
        continue;
      InFlightDiagnostic diag =
          op->emitOpError()
          << "uses a value in " << space << " inside a segment on device \""
          << device.getName()
          << "\", which does not own that memory; move it with het.transfer";
      if (Operation *def = operand.getDefiningOp())
        diag.attachNote(def->getLoc()) << "value defined here";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

//===----------------------------------------------------------------------===//
// TransferOp, WaitOp
//===----------------------------------------------------------------------===//

LogicalResult TransferOp::verify() {
  // C1
  if (getFrom() == getTo())
    return emitOpError() << "transfers between identical memory spaces ("
                         << getFrom() << "); remove the transfer";
  // C3 (C2 is the AllTypesMatch trait)
  MemorySpaceAttr known = getKnownMemorySpace(getSource());
  if (known && known != getFrom())
    return emitOpError() << "transfers from " << getFrom()
                         << " but the source lives in " << known;
  return success();
}

LogicalResult WaitOp::verify() {
  // C1
  if (getTokens().empty())
    return emitOpError() << "needs at least one token to wait on";
  // C2
  llvm::SmallDenseSet<Value> seen;
  for (Value token : getTokens())
    if (!seen.insert(token).second)
      return emitOpError() << "waits on the same token twice";
  return success();
}

//===----------------------------------------------------------------------===//
// KVTiersOp
//===----------------------------------------------------------------------===//

LogicalResult KVTiersOp::verify() {
  ArrayAttr tiers = getTiers();
  // C1
  if (tiers.empty())
    return emitOpError() << "needs at least one tier";
  // C2
  int64_t blockTokens = static_cast<int64_t>(getBlockTokens());
  if (blockTokens <= 0)
    return emitOpError() << "expects block_tokens to be positive, got "
                         << blockTokens;
  llvm::SmallDenseSet<Attribute> spaces;
  int64_t totalTokens = 0;
  for (auto tier : tiers.getAsRange<KVTierAttr>()) {
    // C3
    if (tier.getBlocks() <= 0)
      return emitOpError() << "expects every tier to hold a positive number "
                              "of blocks, got "
                           << tier.getBlocks() << " in " << tier.getMemorySpace();
    // C4
    if (!spaces.insert(tier.getMemorySpace()).second)
      return emitOpError() << "lists memory space " << tier.getMemorySpace()
                           << " twice; merge the two tiers";
    int64_t tierTokens = 0;
    if (__builtin_mul_overflow(tier.getBlocks(), blockTokens, &tierTokens) ||
        __builtin_add_overflow(totalTokens, tierTokens, &totalTokens))
      return emitOpError() << "tiers hold more than 2^63 positions; the block "
                              "counts are not plausible";
  }
  // C5
  auto cache = cast<hetc::llm::KVCacheType>(getCacheType());
  if (totalTokens < cache.getCapacity())
    return emitOpError() << "tiers hold " << totalTokens
                         << " positions but the cache has capacity "
                         << cache.getCapacity() << "; add "
                         << (cache.getCapacity() - totalTokens + blockTokens - 1) /
                                blockTokens
                         << " block(s)";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/het/HetOps.cpp.inc"
