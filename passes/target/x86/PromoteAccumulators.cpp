// hetc-x86-promote-accumulators: loop-carried accumulators move from memory
// into scf.for iter_args (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86PROMOTEACCUMULATORSPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// The buffer a memref value is a view of: through subviews, casts, reshapes.
Value rootBuffer(Value memref) {
  while (Operation *def = memref.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      memref = view.getViewSource();
      continue;
    }
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      memref = cast.getSource();
      continue;
    }
    break;
  }
  return memref;
}

/// The memref an op reads or writes, if it is a plain memory access.
Value accessedMemref(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRef();
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return store.getMemRef();
  return {};
}

/// Promotes one accumulator of `loop` if the rules hold; returns the new loop.
scf::ForOp promoteOne(scf::ForOp loop) {
  Block *body = loop.getBody();
  for (auto store : body->getOps<memref::StoreOp>()) {
    Value buffer = store.getMemRef();
    Value root = rootBuffer(buffer);
    if (!root.getDefiningOp<memref::AllocOp>() &&
        !root.getDefiningOp<memref::AllocaOp>())
      continue;
    // Indices and buffer must not change inside the loop.
    auto invariant = [&](Value value) {
      return !loop.getRegion().isAncestor(value.getParentRegion());
    };
    if (!invariant(buffer) || !llvm::all_of(store.getIndices(), invariant))
      continue;
    // Exactly one load of the same element directly in the body, and no
    // other access to the root anywhere in the loop; any other side effect
    // (a call, an unknown op) keeps the loop as it is.
    memref::LoadOp load;
    bool safe = true;
    loop.getBody()->walk([&](Operation *op) {
      if (op == store.getOperation())
        return;
      if (Value accessed = accessedMemref(op)) {
        if (rootBuffer(accessed) != root)
          return;
        auto candidate = dyn_cast<memref::LoadOp>(op);
        if (!candidate || load || candidate->getBlock() != body ||
            candidate.getMemRef() != buffer ||
            candidate.getIndices() != store.getIndices()) {
          safe = false;
          return;
        }
        load = candidate;
        return;
      }
      if (!isMemoryEffectFree(op) && !isa<scf::YieldOp, scf::ForOp>(op) &&
          !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        safe = false;
    });
    if (!safe || !load || !load->isBeforeInBlock(store))
      continue;

    OpBuilder b(loop);
    Value initial = memref::LoadOp::create(b, load.getLoc(), buffer,
                                           load.getIndices());
    SmallVector<Value> inits(loop.getInitArgs());
    inits.push_back(initial);
    auto promoted = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                       loop.getUpperBound(), loop.getStep(),
                                       inits);
    Block *newBody = promoted.getBody();
    IRMapping mapping;
    mapping.map(loop.getInductionVar(), promoted.getInductionVar());
    for (auto [old, fresh] :
         llvm::zip(loop.getRegionIterArgs(), promoted.getRegionIterArgs()))
      mapping.map(old, fresh);
    Value carried = promoted.getRegionIterArgs().back();
    mapping.map(load.getResult(), carried);
    OpBuilder inner = OpBuilder::atBlockBegin(newBody);
    if (!newBody->empty())
      newBody->back().erase(); // the default yield
    inner.setInsertionPointToEnd(newBody);
    Value stored;
    for (Operation &op : body->without_terminator()) {
      if (&op == load.getOperation())
        continue;
      if (&op == store.getOperation()) {
        stored = mapping.lookupOrDefault(store.getValue());
        continue;
      }
      inner.clone(op, mapping);
    }
    auto oldYield = cast<scf::YieldOp>(body->getTerminator());
    SmallVector<Value> yielded;
    for (Value value : oldYield.getOperands())
      yielded.push_back(mapping.lookupOrDefault(value));
    yielded.push_back(stored);
    scf::YieldOp::create(inner, oldYield.getLoc(), yielded);

    b.setInsertionPointAfter(promoted);
    memref::StoreOp::create(b, store.getLoc(), promoted.getResults().back(),
                            buffer, store.getIndices());
    loop.replaceAllUsesWith(
        promoted.getResults().drop_back(1));
    loop.erase();
    return promoted;
  }
  return {};
}

struct PromoteAccumulatorsPass
    : hetc::x86::impl::HetcX86PromoteAccumulatorsPassBase<
          PromoteAccumulatorsPass> {
  void runOnOperation() override {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<scf::ForOp> loops;
      // Post-order: inner loops first, so their accumulators leave them
      // before the enclosing loop is considered.
      getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
      for (scf::ForOp loop : loops) {
        if (!loop->getBlock())
          continue;
        if (promoteOne(loop)) {
          changed = true;
          break;
        }
      }
    }
  }
};

} // namespace
