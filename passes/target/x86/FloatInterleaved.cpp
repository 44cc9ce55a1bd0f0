// Matmul kernels of f32, f16 and bf16 weights stored element-major in groups of 16
// rows (abi/WeightLayout.h): a 512-bit vector holds one element of each of a
// group's 16 rows, so a broadcast activation element times it adds into the
// 16 rows' sums at once. No horizontal sums remain, and per element a block
// reads one vector per weight group and one scalar per activation row: the
// outer product of the two, where the row-by-row dot products read a vector
// of both for every multiply-add pair.
#include "passes/target/x86/InterleavedWeights.h"

#include "passes/target/x86/BlockBytes.h"
#include "passes/target/x86/MatmulGrid.h"

#include "abi/WeightLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using hetrt::format::kInterleavedRows;

namespace hetc::x86 {

bool canInterleaveFloat(Type storage, int64_t outFeatures,
                        int64_t inFeatures, int64_t vectorBits) {
  return vectorBits == 512 &&
         (storage.isF32() || storage.isF16() || storage.isBF16()) &&
         outFeatures % kInterleavedRows == 0 && inFeatures % 4 == 0;
}

Value elementMajorView(OpBuilder &b, Location loc, Value weight,
                       int64_t outFeatures, int64_t inFeatures) {
  Type element = cast<RankedTensorType>(weight.getType()).getElementType();
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({outFeatures * inFeatures}, element),
      weight, ArrayRef<ReassociationIndices>{{0, 1}});
  return tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get(
          {outFeatures / kInterleavedRows, inFeatures, kInterleavedRows},
          element),
      flat, ArrayRef<ReassociationIndices>{{0, 1, 2}});
}

Value buildInterleavedFloatMatmul(OpBuilder &b, Location loc, Value x,
                                  Value weight, int64_t outFeatures,
                                  int64_t chunkRows) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto weightType = cast<RankedTensorType>(weight.getType());
  Type element = weightType.getElementType();
  int64_t inFeatures = xType.getDimSize(1);
  int64_t staticRows = xType.getDimSize(0);
  bool rowsKnown = !ShapedType::isDynamic(staticRows);
  Type f32 = b.getF32Type();
  auto lanes = VectorType::get({kInterleavedRows}, f32);

  Value view = elementMajorView(b, loc, weight, outFeatures, inFeatures);

  // Prefill: 16 accumulators, f32 as 8 activation rows × 2 groups (32
  // weight rows; per element 2 vector loads and 8 broadcasts), f16 as 4
  // rows × 4 groups (64 weight rows). Measured on llama-1B at one thread:
  // f32 8 × 2 53 tokens/s, 4 × 4 52, 12 × 2 46; f16 4 × 4 52.5, 8 × 2 49,
  // 16 × 1 27 (more activation rows 8 KiB apart than L1 has ways, likely).
  // Decode: one group streamed front to back (one contiguous run per group,
  // which the prefetchers follow), along 4 chains of elements.
  bool halves = !element.isF32();
  int64_t maxRows = halves ? 4 : 8, maxGroups = halves ? 4 : 2;
  int64_t blockRows =
      rowsKnown ? std::min<int64_t>(staticRows, maxRows) : maxRows;
  int64_t groups = 1;
  if (blockRows > 1)
    while (groups < maxGroups &&
           outFeatures % (2 * groups * kInterleavedRows) == 0)
      groups *= 2;
  int64_t blockColumns = groups * kInterleavedRows;
  int64_t chains = blockRows == 1 ? 4 : 1;
  // Elements per loop iteration: each chain gets one.
  const int64_t kUnroll = 4;
  OpBuilder::InsertionGuard guard(b);
  MatmulGrid grid = MatmulGrid::build(b, loc, x, outFeatures, blockRows,
                                      blockColumns, chunkRows);
  Value firstGroup = arith::MulIOp::create(b, loc, grid.columnBlock,
                                           indexConstant(b, loc, groups));
  ArrayRef<Value> rows = grid.rows;
  SmallVector<Value> weightGroups;
  for (int64_t g = 0; g < groups; ++g)
    weightGroups.push_back(
        arith::AddIOp::create(b, loc, firstGroup, indexConstant(b, loc, g)));

  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(lanes, b.getF32FloatAttr(0.0f)));
  int64_t sums = blockRows * groups;
  SmallVector<Value> inits(chains * sums, zeros);
  Value pad = arith::ConstantOp::create(
      b, loc, b.getZeroAttr(element));
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0),
      indexConstant(b, loc, inFeatures / kUnroll), indexConstant(b, loc, 1),
      inits,
      [&](OpBuilder &lb, Location lloc, Value iteration, ValueRange current) {
        SmallVector<Value> acc(current.begin(), current.end());
        for (int64_t u = 0; u < kUnroll; ++u) {
          Value k = arith::AddIOp::create(
              lb, lloc,
              arith::MulIOp::create(lb, lloc, iteration,
                                    indexConstant(lb, lloc, kUnroll)),
              indexConstant(lb, lloc, u));
          SmallVector<Value> columns;
          for (Value group : weightGroups) {
            Value values = vector::TransferReadOp::create(
                lb, lloc, VectorType::get({kInterleavedRows}, element), view,
                ValueRange{group, k, indexConstant(lb, lloc, 0)}, pad,
                ArrayRef<bool>{true});
            if (element != f32)
              values = arith::ExtFOp::create(lb, lloc, lanes, values);
            columns.push_back(values);
          }
          int64_t chain = u % chains;
          for (int64_t i = 0; i < blockRows; ++i) {
            Value a = vector::BroadcastOp::create(
                lb, lloc, lanes,
                tensor::ExtractOp::create(lb, lloc, x,
                                          ValueRange{rows[i], k}));
            for (int64_t g = 0; g < groups; ++g) {
              Value &sum = acc[chain * sums + i * groups + g];
              sum = vector::FMAOp::create(lb, lloc, a, columns[g], sum);
            }
          }
        }
        scf::YieldOp::create(lb, lloc, acc);
      });
  SmallVector<Value> results;
  for (int64_t s = 0; s < sums; ++s) {
    Value sum = loop.getResult(s);
    for (int64_t chain = 1; chain < chains; ++chain)
      sum = arith::AddFOp::create(b, loc, sum, loop.getResult(chain * sums + s));
    results.push_back(sum);
  }

  return grid.write(b, loc, [&](int64_t i) {
    return SmallVector<Value>(
        ArrayRef<Value>(results).slice(i * groups, groups));
  });
}

} // namespace hetc::x86
