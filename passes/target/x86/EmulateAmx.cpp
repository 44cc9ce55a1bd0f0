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
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"

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
      user->emitError() << "hetc-x86-emulate-amx: the tile operand is not "
                           "defined by an amx operation earlier in the same "
                           "block (block arguments and tiles passed between "
                           "regions are not emulated)";
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
    Value tile = vectorFor(op, op.getVal());
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

  /// acc[m][n] += Σ_k ext(lhs[m][4k+i]) · ext(rhs[k][4n+i]), i = 0..3, per
  /// the tdpb{s,u}{s,u}d instructions; the signed × unsigned case (tdpbsud)
  /// with 16 columns is one vpdpbusd per row and k.
  Value multiply(OpBuilder &b, amx::TileMulIOp op) {
    Value lhs = vectorFor(op, op.getLhs());
    Value rhs = lhs ? vectorFor(op, op.getRhs()) : Value();
    Value acc = rhs ? vectorFor(op, op.getAcc()) : Value();
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

  void runOnOperation() override {
    // A pass instance may run on several modules: no tile of an earlier one
    // may stand for a value of this one.
    emulated.clear();
    SmallVector<Operation *> tileOps;
    getOperation()->walk([&](Operation *op) {
      if (isa<amx::AMXDialect>(op->getDialect()))
        tileOps.push_back(op);
    });
    for (Operation *op : tileOps) {
      OpBuilder b(op);
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
      } else {
        op->emitError() << "hetc-x86-emulate-amx: " << op->getName()
                        << " is not emulated (tile_zero, tile_load, "
                           "tile_store and tile_muli are)";
        return signalPassFailure();
      }
      emulated[op->getResult(0)] = replacement;
    }
    for (Operation *op : llvm::reverse(tileOps))
      op->erase();
  }
};

} // namespace
