// A prompt's matmuls of element-major f32, f16 and bf16 weights through AMX
// bf16 tiles (tdpbf16ps): the activation rows rounded to bf16 once per
// matmul, each group's weights turned into the VNNI pair layout the tile
// product reads, and the sums kept in tile registers across all of K.
#include "passes/target/x86/InterleavedWeights.h"

#include "passes/target/x86/BlockBytes.h"
#include "passes/target/x86/MatmulGrid.h"

#include "abi/WeightLayout.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using hetrt::format::kInterleavedRows;

namespace hetc::x86 {

namespace {

/// Rows of every tile, and K per tile product: a row of a bf16 tile is 64
/// bytes, 32 elements.
constexpr int64_t kTileRows = 16;
constexpr int64_t kTileElements = 32;
/// Activation tiles and weight groups per block: 2 + 2 input tiles and
/// 2 × 2 accumulators fill AMX's 8 tile registers.
constexpr int64_t kBlockTiles = 2;
constexpr int64_t kBlockRows = kBlockTiles * kTileRows;

/// `x` [M, K] f32 rounded to bf16 (to nearest, ties to even), its rows
/// padded to a multiple of `padRowsTo` (PaddedRows).
Value roundRowsToBf16(OpBuilder &b, Location loc, Value x, int64_t padRowsTo) {
  int64_t columns = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Type bf16 = b.getBF16Type();
  const int64_t kLanes = 16;
  PaddedRows padded = PaddedRows::of(b, loc, x, padRowsTo);
  Value empty = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{padded.rows, b.getIndexAttr(columns)},
      bf16);
  auto forall = scf::ForallOp::create(b, loc,
                                      ArrayRef<OpFoldResult>{padded.rows},
                                      ValueRange{empty}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value row = body->getArgument(0);
  Value sourceRow = padded.sourceRow(b, loc, row);
  SmallVector<OpFoldResult> offsets = {row, b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                     b.getIndexAttr(columns)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value slice = tensor::ExtractSliceOp::create(b, loc, body->getArgument(1),
                                               offsets, sizes, strides);
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), indexConstant(b, loc, columns / kLanes),
      indexConstant(b, loc, 1), ValueRange{slice},
      [&](OpBuilder &lb, Location lloc, Value step, ValueRange current) {
        Value first = arith::MulIOp::create(lb, lloc, step,
                                            indexConstant(lb, lloc, kLanes));
        Value values = vector::TransferReadOp::create(
            lb, lloc, VectorType::get({kLanes}, lb.getF32Type()), x,
            ValueRange{sourceRow, first},
            arith::ConstantOp::create(lb, lloc, lb.getF32FloatAttr(0.0f)),
            ArrayRef<bool>{true});
        Value rounded = arith::TruncFOp::create(
            lb, lloc, VectorType::get({kLanes}, bf16), values);
        Value written = vector::TransferWriteOp::create(
                            lb, lloc, rounded, current[0],
                            ValueRange{indexConstant(lb, lloc, 0), first},
                            ArrayRef<bool>{true})
                            .getResult();
        scf::YieldOp::create(lb, lloc, written);
      });
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(0),
                                        body->getArgument(1), offsets, sizes,
                                        strides);
  return forall.getResult(0);
}

} // namespace

bool canUseFloatTiles(Type storage, int64_t outFeatures, int64_t inFeatures) {
  return (storage.isF32() || storage.isF16() || storage.isBF16()) &&
         outFeatures % (kBlockTiles * kInterleavedRows) == 0 &&
         inFeatures % kTileElements == 0;
}

Value buildFloatTileMatmul(OpBuilder &b, Location loc, Value x, Value weight,
                           int64_t outFeatures, int64_t chunkRows) {
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  int64_t inFeatures = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type();
  Value view = elementMajorView(b, loc, weight, outFeatures, inFeatures);

  // The tiles read the rounded activations from memory.
  Value activations = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, inFeatures}, bf16),
      roundRowsToBf16(b, loc, x, kBlockRows), /*readOnly=*/true);

  OpBuilder::InsertionGuard guard(b);
  MatmulGrid grid =
      MatmulGrid::build(b, loc, x, outFeatures, kBlockRows,
                        kBlockTiles * kInterleavedRows, chunkRows);
  Value firstGroup = arith::MulIOp::create(
      b, loc, grid.columnBlock, indexConstant(b, loc, kBlockTiles));
  auto rowType = VectorType::get({kInterleavedRows}, f32);
  // The block's stack buffers: hetc-x86-outline-kernels allocates them once
  // per kernel call (a memref.alloca_scope must stay one block, which the K
  // loop does not once lowered to branches).
  SmallVector<Value> rows;
  {
    // Per weight group, tile row j holds the pairs (element 2j, element
    // 2j + 1) of each of the group's 16 rows: the VNNI layout of
    // tdpbf16ps's second operand.
    Value pairs = memref::AllocaOp::create(
        b, loc, MemRefType::get({kBlockTiles * kTileRows, kTileElements}, bf16),
        b.getI64IntegerAttr(64));
    Value products = memref::AllocaOp::create(
        b, loc,
        MemRefType::get({kBlockRows, kBlockTiles * kInterleavedRows}, f32),
        b.getI64IntegerAttr(64));
    auto sumsType = amx::TileType::get({kTileRows, kInterleavedRows}, f32);
    auto inputType = amx::TileType::get({kTileRows, kTileElements}, bf16);
    SmallVector<Value> zeros;
    for (int64_t t = 0; t < kBlockTiles * kBlockTiles; ++t)
      zeros.push_back(amx::TileZeroOp::create(b, loc, sumsType));
    Value pad = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
    auto halfType = VectorType::get({kInterleavedRows}, element);
    auto loop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0),
        indexConstant(b, loc, inFeatures / kTileElements),
        indexConstant(b, loc, 1), zeros,
        [&](OpBuilder &lb, Location lloc, Value step, ValueRange current) {
          Value first = arith::MulIOp::create(
              lb, lloc, step, indexConstant(lb, lloc, kTileElements));
          for (int64_t g = 0; g < kBlockTiles; ++g) {
            Value group = arith::AddIOp::create(lb, lloc, firstGroup,
                                                indexConstant(lb, lloc, g));
            for (int64_t j = 0; j < kTileRows; ++j) {
              SmallVector<Value> halves;
              for (int64_t half = 0; half < 2; ++half) {
                Value k = arith::AddIOp::create(
                    lb, lloc, first, indexConstant(lb, lloc, 2 * j + half));
                halves.push_back(vector::TransferReadOp::create(
                    lb, lloc, halfType, view,
                    ValueRange{group, k, indexConstant(lb, lloc, 0)}, pad,
                    ArrayRef<bool>{true}));
              }
              Value interleaved =
                  vector::InterleaveOp::create(lb, lloc, halves[0], halves[1]);
              if (!element.isBF16())
                interleaved = arith::TruncFOp::create(
                    lb, lloc, VectorType::get({kTileElements}, bf16),
                    element.isF32() ? interleaved
                                    : arith::ExtFOp::create(
                                          lb, lloc,
                                          VectorType::get({kTileElements}, f32),
                                          interleaved)
                                          .getResult());
              vector::StoreOp::create(
                  lb, lloc, interleaved, pairs,
                  ValueRange{indexConstant(lb, lloc, g * kTileRows + j),
                             indexConstant(lb, lloc, 0)});
            }
          }
          SmallVector<Value> weightTiles, sums(current.begin(), current.end());
          for (int64_t g = 0; g < kBlockTiles; ++g)
            weightTiles.push_back(amx::TileLoadOp::create(
                lb, lloc, inputType, pairs,
                ValueRange{indexConstant(lb, lloc, g * kTileRows),
                           indexConstant(lb, lloc, 0)}));
          for (int64_t r = 0; r < kBlockTiles; ++r) {
            Value activationTile = amx::TileLoadOp::create(
                lb, lloc, inputType, activations,
                ValueRange{arith::AddIOp::create(
                               lb, lloc, grid.firstRow,
                               indexConstant(lb, lloc, r * kTileRows)),
                           first});
            for (int64_t g = 0; g < kBlockTiles; ++g) {
              Value &sum = sums[r * kBlockTiles + g];
              sum = amx::TileMulFOp::create(lb, lloc, sumsType, activationTile,
                                            weightTiles[g], sum);
            }
          }
          scf::YieldOp::create(lb, lloc, sums);
        });
    for (int64_t r = 0; r < kBlockTiles; ++r)
      for (int64_t g = 0; g < kBlockTiles; ++g)
        amx::TileStoreOp::create(
            b, loc, products,
            ValueRange{indexConstant(b, loc, r * kTileRows),
                       indexConstant(b, loc, g * kInterleavedRows)},
            loop.getResult(r * kBlockTiles + g));
    for (int64_t i = 0; i < kBlockRows; ++i)
      for (int64_t g = 0; g < kBlockTiles; ++g)
        rows.push_back(vector::LoadOp::create(
            b, loc, rowType, products,
            ValueRange{indexConstant(b, loc, i),
                       indexConstant(b, loc, g * kInterleavedRows)}));
  }
  return grid.write(b, loc, [&](int64_t i) {
    return SmallVector<Value>(
        ArrayRef<Value>(rows).slice(i * kBlockTiles, kBlockTiles));
  });
}

} // namespace hetc::x86
