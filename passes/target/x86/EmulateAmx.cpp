// hetc-x86-emulate-amx: AMX tile operations rewritten as AVX-512 vector code
// with the same results (see Passes.td), so the tile kernels are checked on
// CPUs without AMX.
#include "passes/target/x86/Passes.h"

#include "passes/target/x86/BlockBytes.h"
#include "passes/target/x86/Int8Dot.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

#include <array>

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86EMULATEAMXPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

using hetc::x86::indexConstant;

VectorType vectorOf(amx::TileType tile) {
  return VectorType::get(tile.getShape(), tile.getElementType());
}

/// The indices of row `row` of a tile at `indices` of `base`: with an
/// explicit stride the innermost index moves `row` strides, otherwise the
/// second innermost moves `row` (the buffer's own row stride).
SmallVector<Value> rowIndices(OpBuilder &b, Location loc, ValueRange indices,
                              Value stride, int64_t row) {
  SmallVector<Value> at(indices.begin(), indices.end());
  if (row == 0)
    return at;
  Value &moved = stride ? at.back() : at[at.size() - 2];
  Value offset = indexConstant(b, loc, row);
  if (stride)
    offset = arith::MulIOp::create(b, loc, offset, stride);
  moved = arith::AddIOp::create(b, loc, moved, offset);
  return at;
}

struct HetcX86EmulateAmxPass
    : hetc::x86::impl::HetcX86EmulateAmxPassBase<HetcX86EmulateAmxPass> {
  using HetcX86EmulateAmxPassBase::HetcX86EmulateAmxPassBase;

  /// The vector standing for each tile rewritten so far in this run.
  llvm::DenseMap<Value, Value> emulated;

  /// The vector standing for tile `tile`, or null after reporting on `user`.
  Value vectorFor(Operation *user, Value tile) {
    Value found = emulated.lookup(tile);
    if (!found)
      user->emitError() << "hetc-x86-emulate-amx: the tile operand is "
                           "defined neither by an amx operation nor as an "
                           "scf.for iter_arg (other block arguments are not "
                           "emulated)";
    return found;
  }

  Value load(OpBuilder &b, amx::TileLoadOp op) {
    auto type = vectorOf(op.getTileType());
    auto rowType = VectorType::get({type.getDimSize(1)}, type.getElementType());
    Value tile = arith::ConstantOp::create(b, op.getLoc(), b.getZeroAttr(type));
    for (int64_t row = 0; row < type.getDimSize(0); ++row) {
      Value values = vector::LoadOp::create(
          b, op.getLoc(), rowType, op.getBase(),
          rowIndices(b, op.getLoc(), op.getIndices(), op.getStride(), row));
      tile = vector::InsertOp::create(b, op.getLoc(), values, tile, row);
    }
    return tile;
  }

  bool store(OpBuilder &b, amx::TileStoreOp op) {
    // Untyped operand access: a tile carried by a loop already has its
    // vector type.
    Value tile = vectorFor(op, op.getValMutable().get());
    if (!tile)
      return false;
    int64_t rows = cast<VectorType>(tile.getType()).getDimSize(0);
    for (int64_t row = 0; row < rows; ++row)
      vector::StoreOp::create(
          b, op.getLoc(), vector::ExtractOp::create(b, op.getLoc(), tile, row),
          op.getBase(),
          rowIndices(b, op.getLoc(), op.getIndices(), op.getStride(), row));
    return true;
  }

  /// The vectors standing for a tile product's operands; a null
  /// accumulator after reporting.
  template <typename Product>
  std::array<Value, 3> productOperands(Product op) {
    // Untyped operand access: a tile carried by a loop already has its
    // vector type.
    Value lhs = vectorFor(op, op.getLhsMutable().get());
    Value rhs = lhs ? vectorFor(op, op.getRhsMutable().get()) : Value();
    Value acc = rhs ? vectorFor(op, op.getAccMutable().get()) : Value();
    return {lhs, rhs, acc};
  }

  /// acc[m][n] += Σ_k ext(lhs[m][4k+i]) · ext(rhs[k][4n+i]), i = 0..3, per
  /// the tdpb{s,u}{s,u}d instructions; the signed × unsigned case (tdpbsud)
  /// with 16 columns is one vpdpbusd per row and k.
  Value multiply(OpBuilder &b, amx::TileMulIOp op) {
    auto [lhs, rhs, acc] = productOperands(op);
    if (!acc)
      return {};
    Location loc = op.getLoc();
    auto lhsType = cast<VectorType>(lhs.getType());
    auto accType = cast<VectorType>(acc.getType());
    int64_t rows = lhsType.getDimSize(0), quads = lhsType.getDimSize(1) / 4;
    int64_t columns = accType.getDimSize(1);
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    auto wordsType = VectorType::get({columns}, i32);
    auto bytesType = VectorType::get({4 * columns}, i8);
    auto widenedType = VectorType::get({4 * columns}, i32);
    bool zextLhs = op.getIsZextLhs(), zextRhs = op.getIsZextRhs();
    auto module = op->getParentOfType<ModuleOp>();
    auto widen = [&](Value bytes, bool zext) -> Value {
      if (zext)
        return arith::ExtUIOp::create(b, loc, widenedType, bytes);
      return arith::ExtSIOp::create(b, loc, widenedType, bytes);
    };
    Value result = acc;
    for (int64_t m = 0; m < rows; ++m) {
      Value sums = vector::ExtractOp::create(b, loc, acc, m);
      Value lhsWords = vector::BitCastOp::create(
          b, loc, VectorType::get({quads}, i32),
          vector::ExtractOp::create(b, loc, lhs, m));
      for (int64_t k = 0; k < quads; ++k) {
        // lhs[m][4k..4k+3] repeated in every column's 4 bytes.
        Value quad = vector::BitCastOp::create(
            b, loc, bytesType,
            vector::BroadcastOp::create(
                b, loc, wordsType,
                vector::ExtractOp::create(b, loc, lhsWords, k)));
        Value rhsRow = vector::ExtractOp::create(b, loc, rhs, k);
        if (!zextLhs && zextRhs && columns == 16) {
          sums = hetc::x86::dotUnsignedSigned(b, loc, module, sums, rhsRow,
                                              quad);
          continue;
        }
        Value products = arith::MulIOp::create(b, loc, widen(quad, zextLhs),
                                               widen(rhsRow, zextRhs));
        Value grouped = vector::ShapeCastOp::create(
            b, loc, VectorType::get({columns, 4}, i32), products);
        sums = vector::MultiDimReductionOp::create(
            b, loc, grouped, sums, ArrayRef<bool>{false, true},
            vector::CombiningKind::ADD);
      }
      result = vector::InsertOp::create(b, loc, sums, result, m);
    }
    return result;
  }

  /// acc[m][n] += Σ_k lhs[m][2k] · rhs[k][2n] + lhs[m][2k+1] · rhs[k][2n+1]
  /// in f32, per tdpbf16ps: a bf16 product is exact in f32, so each
  /// multiply-add rounds once, in the instruction's order (k, then the
  /// pair's two halves). Denormals are not flushed as the instruction
  /// flushes them.
  Value multiply(OpBuilder &b, amx::TileMulFOp op) {
    auto [lhs, rhs, acc] = productOperands(op);
    if (!acc)
      return {};
    Location loc = op.getLoc();
    auto lhsType = cast<VectorType>(lhs.getType());
    auto accType = cast<VectorType>(acc.getType());
    if (!lhsType.getElementType().isBF16()) {
      op.emitError() << "hetc-x86-emulate-amx: only bf16 tile products are "
                        "emulated, not "
                     << lhsType.getElementType();
      return {};
    }
    int64_t rows = lhsType.getDimSize(0), pairs = lhsType.getDimSize(1) / 2;
    int64_t columns = accType.getDimSize(1);
    Type f32 = b.getF32Type();
    auto columnType = VectorType::get({columns}, f32);
    // Per k, the columns' first and second elements of the pair, as f32.
    SmallVector<std::pair<Value, Value>> rhsHalves;
    for (int64_t k = 0; k < pairs; ++k) {
      Value row = arith::ExtFOp::create(
          b, loc, VectorType::get({2 * columns}, f32),
          vector::ExtractOp::create(b, loc, rhs, k).getResult());
      auto halves = vector::DeinterleaveOp::create(b, loc, row);
      rhsHalves.emplace_back(halves.getRes1(), halves.getRes2());
    }
    Value result = acc;
    for (int64_t m = 0; m < rows; ++m) {
      Value sums = vector::ExtractOp::create(b, loc, acc, m);
      Value lhsRow = arith::ExtFOp::create(
          b, loc, VectorType::get({2 * pairs}, f32),
          vector::ExtractOp::create(b, loc, lhs, m).getResult());
      for (int64_t k = 0; k < pairs; ++k)
        for (int64_t half = 0; half < 2; ++half) {
          Value a = vector::BroadcastOp::create(
              b, loc, columnType,
              vector::ExtractOp::create(b, loc, lhsRow, 2 * k + half));
          sums = vector::FMAOp::create(
              b, loc, a, half ? rhsHalves[k].second : rhsHalves[k].first,
              sums);
        }
      result = vector::InsertOp::create(b, loc, sums, result, m);
    }
    return result;
  }

  /// Gives a loop's tile iter_args and results the vector type that stands
  /// for the tile (the operands were emulated earlier); the same values
  /// then stand for themselves.
  void retypeLoop(scf::ForOp loop) {
    for (auto [init, arg, result] :
         llvm::zip(loop.getInitArgsMutable(), loop.getRegionIterArgs(),
                   loop.getResults())) {
      auto tile = dyn_cast<amx::TileType>(arg.getType());
      if (!tile)
        continue;
      init.set(emulated.lookup(init.get()));
      arg.setType(vectorOf(tile));
      result.setType(vectorOf(tile));
      emulated[arg] = arg;
      emulated[result] = result;
    }
  }

  /// Yields the vectors that stand for a loop body's tiles.
  bool retypeYield(scf::YieldOp yield) {
    for (OpOperand &operand : yield->getOpOperands()) {
      if (!isa<amx::TileType>(operand.get().getType()))
        continue;
      Value vector = vectorFor(yield, operand.get());
      if (!vector)
        return false;
      operand.set(vector);
    }
    return true;
  }

  static bool carriesTiles(Operation *op) {
    auto isTile = [](Type type) { return isa<amx::TileType>(type); };
    return llvm::any_of(op->getOperandTypes(), isTile) ||
           llvm::any_of(op->getResultTypes(), isTile);
  }

  void runOnOperation() override {
    // A pass instance may run on several modules: no tile of an earlier one
    // may stand for a value of this one.
    emulated.clear();
    // In program order (a loop before its body), so every tile is emulated
    // before its users.
    SmallVector<Operation *> tileOps;
    bool unsupported = false;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
      bool inLoop = isa<scf::YieldOp>(op) && isa<scf::ForOp>(op->getParentOp());
      if (isa<amx::AMXDialect>(op->getDialect()) || isa<scf::ForOp>(op) ||
          inLoop) {
        tileOps.push_back(op);
      } else if (carriesTiles(op) && !isa<scf::YieldOp>(op)) {
        // (A yield's parent is reported.)
        op->emitError() << "hetc-x86-emulate-amx: tiles pass through "
                        << op->getName()
                        << ", which is not emulated (scf.for is)";
        unsupported = true;
      }
    });
    if (unsupported)
      return signalPassFailure();
    SmallVector<Operation *> erased;
    for (Operation *op : tileOps) {
      OpBuilder b(op);
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        if (carriesTiles(loop)) {
          for (Value init : loop.getInitArgs())
            if (isa<amx::TileType>(init.getType()) && !vectorFor(loop, init))
              return signalPassFailure();
          retypeLoop(loop);
        }
        continue;
      }
      if (auto yield = dyn_cast<scf::YieldOp>(op)) {
        if (!retypeYield(yield))
          return signalPassFailure();
        continue;
      }
      erased.push_back(op);
      Value replacement;
      if (auto zero = dyn_cast<amx::TileZeroOp>(op)) {
        replacement = arith::ConstantOp::create(
            b, op->getLoc(), b.getZeroAttr(vectorOf(zero.getTileType())));
      } else if (auto tileLoad = dyn_cast<amx::TileLoadOp>(op)) {
        replacement = load(b, tileLoad);
      } else if (auto tileStore = dyn_cast<amx::TileStoreOp>(op)) {
        if (!store(b, tileStore))
          return signalPassFailure();
        continue;
      } else if (auto product = dyn_cast<amx::TileMulIOp>(op)) {
        replacement = multiply(b, product);
        if (!replacement)
          return signalPassFailure();
      } else if (auto product = dyn_cast<amx::TileMulFOp>(op)) {
        replacement = multiply(b, product);
        if (!replacement)
          return signalPassFailure();
      } else {
        op->emitError() << "hetc-x86-emulate-amx: " << op->getName()
                        << " is not emulated (tile_zero, tile_load, "
                           "tile_store, tile_muli and tile_mulf are)";
        return signalPassFailure();
      }
      emulated[op->getResult(0)] = replacement;
    }
    for (Operation *op : llvm::reverse(erased))
      op->erase();
  }
};

} // namespace
