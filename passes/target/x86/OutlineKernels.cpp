// hetc-x86-outline-kernels: outermost parallel loops of entry points become
// kernels over a one-dimensional grid (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86OUTLINEKERNELSPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// The dimension to split across threads: among unit-step dimensions, the
/// largest static trip count (the token dimension, often 1, is the dynamic
/// one), else the first unit-step dimension. None when no step is 1.
std::optional<unsigned> chooseGridDimension(scf::ParallelOp loop) {
  std::optional<unsigned> best;
  int64_t bestExtent = -1;
  for (unsigned dim = 0; dim < loop.getNumLoops(); ++dim) {
    std::optional<int64_t> step = getConstantIntValue(loop.getStep()[dim]);
    if (!step || *step != 1)
      continue;
    std::optional<int64_t> lower =
        getConstantIntValue(loop.getLowerBound()[dim]);
    std::optional<int64_t> upper =
        getConstantIntValue(loop.getUpperBound()[dim]);
    int64_t extent = lower && upper ? *upper - *lower : 0;
    if (!best || extent > bestExtent) {
      bestExtent = extent;
      best = dim;
    }
  }
  return best;
}

/// Below this many operations per execution (counted before vectorization),
/// a loop runs on the calling thread: handing it to the pool costs more (a
/// wake-up and a join, about 10^4 operations' time) than splitting it saves.
constexpr int64_t kMinParallelWork = 1 << 14;

/// Iterations of one loop dimension, when its bounds and step are constants.
std::optional<int64_t> staticTrips(Value lower, Value upper, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lower);
  std::optional<int64_t> u = getConstantIntValue(upper);
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return std::max<int64_t>(0, (*u - *l + *s - 1) / *s);
}

/// The trip counts of every loop `op` sits in, inside `root` (inclusive),
/// multiplied; none when one is dynamic.
std::optional<int64_t> enclosingTrips(Operation *op, scf::ParallelOp root) {
  int64_t trips = 1;
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (auto loop = dyn_cast<scf::ForOp>(parent)) {
      std::optional<int64_t> count = staticTrips(
          loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
      if (!count)
        return std::nullopt;
      trips *= *count;
    } else if (auto loop = dyn_cast<scf::ParallelOp>(parent)) {
      for (auto [lower, upper, step] : llvm::zip(
               loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
        std::optional<int64_t> count = staticTrips(lower, upper, step);
        if (!count)
          return std::nullopt;
        trips *= *count;
      }
    }
    if (parent == root.getOperation())
      break;
  }
  return trips;
}

/// Whether `loop` certainly does too little work to be worth a dispatch.
bool isSmall(scf::ParallelOp loop) {
  int64_t work = 0;
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (op->hasTrait<OpTrait::ConstantLike>() || op->getNumRegions() != 0 ||
        op->hasTrait<OpTrait::IsTerminator>())
      return WalkResult::advance();
    std::optional<int64_t> trips = enclosingTrips(op, loop);
    if (!trips)
      return WalkResult::interrupt();
    work += *trips;
    return work >= kMinParallelWork ? WalkResult::interrupt()
                                    : WalkResult::advance();
  });
  return !result.wasInterrupted() && work < kMinParallelWork;
}

struct OutlineKernelsPass
    : hetc::x86::impl::HetcX86OutlineKernelsPassBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    unsigned counter = 0;
    for (func::FuncOp entry : hetc::x86::entryPoints(module)) {
      SmallVector<scf::ParallelOp> loops;
      entry.walk([&](scf::ParallelOp loop) {
        if (!loop->getParentOfType<scf::ParallelOp>())
          loops.push_back(loop);
      });
      for (scf::ParallelOp loop : loops)
        if (failed(outline(module, loop, counter++)))
          return signalPassFailure();
    }
  }

  /// Moves the kernel's fixed-size allocas outside any alloca_scope to its
  /// entry block: one buffer per call instead of one per loop iteration.
  static void hoistStackBuffers(func::FuncOp kernel) {
    Block &entry = kernel.getBody().front();
    SmallVector<memref::AllocaOp> buffers;
    kernel.walk([&](memref::AllocaOp alloca) {
      if (alloca->getBlock() != &entry && alloca.getDynamicSizes().empty() &&
          alloca.getSymbolOperands().empty() &&
          !alloca->getParentOfType<memref::AllocaScopeOp>())
        buffers.push_back(alloca);
    });
    for (memref::AllocaOp alloca : buffers)
      alloca->moveBefore(&entry, entry.begin());
  }

  LogicalResult outline(ModuleOp module, scf::ParallelOp loop,
                        unsigned index) {
    if (loop.getNumResults() != 0)
      return loop.emitOpError()
             << "has reductions across the grid, which kernels do not support";
    MLIRContext *ctx = &getContext();
    Location loc = loop.getLoc();
    std::optional<unsigned> chosen = chooseGridDimension(loop);
    // Loops without a unit-step dimension, and loops too small to be worth
    // a dispatch, stay sequential in the entry.
    if (!chosen || isSmall(loop))
      return success();
    unsigned gridDim = *chosen;

    // Everything the loop reads from outside, its bounds included. Constants
    // are rematerialized inside the kernel instead: LLVM must see unit steps
    // and static trip counts to vectorize.
    SetVector<Value> used;
    for (Value operand : loop->getOperands())
      used.insert(operand);
    getUsedValuesDefinedAbove(loop.getRegion(), used);
    SetVector<Value> captured;
    SmallVector<Operation *> constants;
    for (Value value : used) {
      Operation *def = value.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>())
        constants.push_back(def);
      else
        captured.insert(value);
    }

    SmallVector<Type> argumentTypes;
    for (Value value : captured)
      argumentTypes.push_back(value.getType());
    argumentTypes.push_back(IndexType::get(ctx));
    argumentTypes.push_back(IndexType::get(ctx));

    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    std::string name =
        (hetc::x86::kKernelPrefix + llvm::Twine(index)).str();
    auto kernel = func::FuncOp::create(
        b, loc, name, FunctionType::get(ctx, argumentTypes, {}));
    kernel.setPrivate();
    Block *body = kernel.addEntryBlock();
    b.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [value, argument] :
         llvm::zip(captured, body->getArguments().drop_back(2)))
      mapping.map(value, argument);
    for (Operation *constant : constants)
      b.clone(*constant, mapping);
    auto clone = cast<scf::ParallelOp>(b.clone(*loop, mapping));
    // Each call covers [begin, end) of the grid dimension.
    clone.getLowerBoundMutable()[gridDim].set(body->getArgument(captured.size()));
    clone.getUpperBoundMutable()[gridDim].set(
        body->getArgument(captured.size() + 1));
    func::ReturnOp::create(b, loc);
    hoistStackBuffers(kernel);

    b.setInsertionPoint(loop);
    SmallVector<Value> operands(captured.begin(), captured.end());
    operands.push_back(loop.getLowerBound()[gridDim]);
    operands.push_back(loop.getUpperBound()[gridDim]);
    func::CallOp::create(b, loc, kernel, operands);
    loop.erase();
    return success();
  }
};

} // namespace
