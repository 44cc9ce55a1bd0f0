// hetc-x86-fuse-dispatches: consecutive independent kernel calls of an entry
// point become one call of a kernel over their grids laid end to end (see
// Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallBitVector.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86FUSEDISPATCHESPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// The buffer a memref value views: through view-like operations to an
/// allocation or a block argument.
Value rootBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// Whether `op` only allocates (or has no memory effects at all): a kernel
/// call may move past it.
bool onlyAllocates(Operation *op) {
  if (isa<func::CallOp>(op) || op->getNumRegions() != 0)
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return isPure(op);
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::all_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Allocate>(e.getEffect());
  });
}

struct FuseDispatchesPass
    : hetc::x86::impl::HetcX86FuseDispatchesPassBase<FuseDispatchesPass> {
  /// Per kernel, which of its arguments it may write (all of them when an
  /// operation's effects are unknown).
  llvm::DenseMap<Operation *, llvm::SmallBitVector> written;
  /// The module's symbols, built once per run.
  SymbolTable *kernels = nullptr;

  const llvm::SmallBitVector &writtenArguments(func::FuncOp kernel) {
    auto found = written.find(kernel);
    if (found != written.end())
      return found->second;
    Block &entry = kernel.getBody().front();
    llvm::SmallBitVector writes(entry.getNumArguments());
    auto markRoot = [&](Value value) {
      auto argument = dyn_cast<BlockArgument>(rootBuffer(value));
      if (argument && argument.getOwner() == &entry)
        writes.set(argument.getArgNumber());
    };
    kernel.walk([&](Operation *op) {
      if (op == kernel.getOperation() ||
          op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        return;
      // LLVM intrinsics declared as functions (vpdpbusd) compute values only.
      if (auto call = dyn_cast<func::CallOp>(op);
          call && call.getCallee().starts_with("llvm."))
        return;
      auto effects = dyn_cast<MemoryEffectOpInterface>(op);
      if (!effects) {
        if (!isPure(op))
          writes.set();
        return;
      }
      SmallVector<MemoryEffects::EffectInstance> instances;
      effects.getEffects(instances);
      for (const MemoryEffects::EffectInstance &effect : instances) {
        if (!isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect()))
          continue;
        if (Value target = effect.getValue())
          markRoot(target);
        else if (!effect.getResource() ||
                 isa<SideEffects::DefaultResource>(effect.getResource()))
          writes.set();
      }
    });
    return written.try_emplace(kernel, std::move(writes)).first->second;
  }

  /// Whether two kernel calls touch no common buffer that either writes.
  bool independent(func::CallOp first, func::CallOp second) {
    auto kernelOf = [&](func::CallOp call) {
      return kernels->lookup<func::FuncOp>(call.getCallee());
    };
    const llvm::SmallBitVector &firstWrites = writtenArguments(kernelOf(first));
    const llvm::SmallBitVector &secondWrites =
        writtenArguments(kernelOf(second));
    for (auto [i, a] : llvm::enumerate(first.getOperands())) {
      if (!isa<MemRefType>(a.getType()))
        continue;
      for (auto [j, b] : llvm::enumerate(second.getOperands())) {
        if (!isa<MemRefType>(b.getType()) || rootBuffer(a) != rootBuffer(b))
          continue;
        if (firstWrites.test(i) || secondWrites.test(j))
          return false;
      }
    }
    return true;
  }

  bool isKernelCall(Operation *op) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call || !call.getCallee().starts_with(hetc::x86::kKernelPrefix))
      return false;
    auto kernel = kernels->lookup<func::FuncOp>(call.getCallee());
    return kernel && !kernel.isExternal() && call.getNumOperands() >= 2;
  }

  /// Replaces `calls` (independent, in order) with one call of a new kernel
  /// whose grid is theirs end to end, at the last call's place.
  void fuse(MutableArrayRef<func::CallOp> calls, unsigned &counter) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Location loc = calls.back().getLoc();
    llvm::SetVector<Value> captured;
    for (func::CallOp call : calls)
      for (Value operand : call.getOperands().drop_back(2))
        captured.insert(operand);
    llvm::DenseMap<Value, unsigned> position;
    for (auto [i, value] : llvm::enumerate(captured))
      position[value] = i;

    SmallVector<Type> argumentTypes;
    for (Value value : captured)
      argumentTypes.push_back(value.getType());
    auto index = IndexType::get(ctx);
    // Each part's grid bounds, then the fused grid's range.
    for (size_t i = 0; i < 2 * calls.size() + 2; ++i)
      argumentTypes.push_back(index);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    auto kernel = func::FuncOp::create(
        b, loc,
        (hetc::x86::kKernelPrefix + llvm::Twine("fused_") + Twine(counter++))
            .str(),
        FunctionType::get(ctx, argumentTypes, {}));
    kernel.setPrivate();
    // Renamed if a kernel of that name exists (the pass run twice).
    kernels->insert(kernel);
    Block *body = kernel.addEntryBlock();
    b.setInsertionPointToStart(body);
    unsigned boundsStart = captured.size();
    Value begin = body->getArgument(boundsStart + 2 * calls.size());
    Value end = body->getArgument(boundsStart + 2 * calls.size() + 1);
    Value start = arith::ConstantIndexOp::create(b, loc, 0);
    for (auto [part, call] : llvm::enumerate(calls)) {
      Value lower = body->getArgument(boundsStart + 2 * part);
      Value upper = body->getArgument(boundsStart + 2 * part + 1);
      Value size = arith::SubIOp::create(b, loc, upper, lower);
      Value stop = arith::AddIOp::create(b, loc, start, size);
      // The part's share of [begin, end), in its own grid's indices.
      Value from = arith::MaxSIOp::create(b, loc, begin, start);
      Value to = arith::MinSIOp::create(b, loc, end, stop);
      Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        from, to);
      auto taken = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(taken.thenBlock());
        SmallVector<Value> operands;
        for (Value operand : call.getOperands().drop_back(2))
          operands.push_back(
              body->getArgument(position.lookup(operand)));
        Value shift = arith::SubIOp::create(b, loc, lower, start);
        operands.push_back(arith::AddIOp::create(b, loc, from, shift));
        operands.push_back(arith::AddIOp::create(b, loc, to, shift));
        func::CallOp::create(b, loc, call.getCallee(), TypeRange{}, operands);
      }
      start = stop;
    }
    func::ReturnOp::create(b, loc);

    b.setInsertionPoint(calls.back());
    SmallVector<Value> operands(captured.begin(), captured.end());
    Value total = arith::ConstantIndexOp::create(b, loc, 0);
    for (func::CallOp call : calls) {
      Value lower = call.getOperand(call.getNumOperands() - 2);
      Value upper = call.getOperand(call.getNumOperands() - 1);
      operands.append({lower, upper});
      total = arith::AddIOp::create(
          b, loc, total, arith::SubIOp::create(b, loc, upper, lower));
    }
    operands.push_back(arith::ConstantIndexOp::create(b, loc, 0));
    operands.push_back(total);
    func::CallOp::create(b, loc, kernel, operands);
    for (func::CallOp call : calls)
      call.erase();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A pass instance may run on several modules: nothing of an earlier one
    // may answer for this one.
    written.clear();
    SymbolTable symbols(module);
    kernels = &symbols;
    unsigned counter = 0;
    for (func::FuncOp entry : hetc::x86::entryPoints(module)) {
      for (Block &block : entry.getBody()) {
        SmallVector<SmallVector<func::CallOp>> groups;
        SmallVector<func::CallOp> group;
        auto close = [&] {
          if (group.size() >= 2)
            groups.push_back(group);
          group.clear();
        };
        for (Operation &op : block) {
          if (isKernelCall(&op)) {
            auto call = cast<func::CallOp>(op);
            if (!llvm::all_of(group, [&](func::CallOp earlier) {
                  return independent(earlier, call);
                }))
              close();
            group.push_back(call);
          } else if (!onlyAllocates(&op)) {
            close();
          }
        }
        close();
        for (SmallVector<func::CallOp> &calls : groups)
          fuse(calls, counter);
      }
    }
    kernels = nullptr;
  }
};

} // namespace
