// hetc-x86-block-attention: the x86 CPU's register blocking of the two
// products in each step of convert-llm-to-linalg's tiled attention (see
// Passes.td): scores `q · kᵀ` as blocks of query rows × keys with one vector
// accumulator per pair, and `acc += p · v` as blocks of query rows × vectors
// of the head dimension held in registers across the keys.
#include "passes/target/x86/Passes.h"

#include "passes/target/x86/BlockBytes.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86BLOCKATTENTIONPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;
using hetc::x86::indexConstant;

namespace {

/// Query rows per block: each vector of keys or values read serves them all.
/// A product with fewer rows, statically (a decode step), takes blocks of
/// its own row count instead of repeating its rows.
constexpr int64_t kMaxBlockRows = 4;

int64_t blockRowsOf(Value rowsOperand) {
  auto type = cast<RankedTensorType>(rowsOperand.getType());
  return type.isDynamicDim(0) ? kMaxBlockRows
                              : std::min(kMaxBlockRows, type.getDimSize(0));
}

struct Tiles {
  OpBuilder &b;
  Location loc;
  int64_t lanes;

  VectorType f32Vector() const {
    return VectorType::get({lanes}, b.getF32Type());
  }

  /// Elements [column, column + lanes) of row `row` of a 2-D tensor, as f32.
  Value readRow(Value tensor, Value row, int64_t column) const {
    Type element = cast<RankedTensorType>(tensor.getType()).getElementType();
    Value padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
    Value values = vector::TransferReadOp::create(
        b, loc, VectorType::get({lanes}, element), tensor,
        ValueRange{row, indexConstant(b, loc, column)}, padding,
        ArrayRef<bool>{true});
    if (!element.isF32())
      values = arith::ExtFOp::create(b, loc, f32Vector(), values);
    return values;
  }

  /// The lane sums of each of `vectors` (a power of two, at most `lanes` of
  /// them). Pairs are folded into one vector half by half — after the first
  /// step a vector holds the half-sums of two inputs, then quarter-sums of
  /// four — and the groups left are summed by butterflies: fewer shuffles
  /// and adds than a full reduction of each vector.
  SmallVector<Value> reduceEach(ArrayRef<Value> vectors,
                                arith::FastMathFlagsAttr fastMath) const {
    SmallVector<Value> level(vectors);
    int64_t groupSize = lanes;
    while (level.size() > 1) {
      SmallVector<int64_t> low, high;
      for (int64_t source = 0; source < 2; ++source)
        for (int64_t first = 0; first < lanes; first += groupSize)
          for (int64_t k = 0; k < groupSize / 2; ++k) {
            low.push_back(source * lanes + first + k);
            high.push_back(source * lanes + first + groupSize / 2 + k);
          }
      SmallVector<Value> next;
      for (size_t k = 0; k < level.size(); k += 2)
        next.push_back(arith::AddFOp::create(
            b, loc,
            vector::ShuffleOp::create(b, loc, level[k], level[k + 1], low),
            vector::ShuffleOp::create(b, loc, level[k], level[k + 1], high),
            fastMath));
      level = std::move(next);
      groupSize /= 2;
    }
    Value folded = level[0];
    for (int64_t step = groupSize / 2; step >= 1; step /= 2) {
      SmallVector<int64_t> partner;
      for (int64_t lane = 0; lane < lanes; ++lane)
        partner.push_back(lane ^ step);
      folded = arith::AddFOp::create(
          b, loc, folded,
          vector::ShuffleOp::create(b, loc, folded, folded, partner), fastMath);
    }
    SmallVector<Value> sums;
    for (size_t k = 0; k < vectors.size(); ++k)
      sums.push_back(vector::ExtractOp::create(
          b, loc, folded, static_cast<int64_t>(k) * groupSize));
    return sums;
  }

  /// `first + k` clamped to `count - 1` for k in [0, n): a block's rows past
  /// the end repeat the last one, so every read stays in bounds and a
  /// repeated row is written twice with the same values.
  SmallVector<Value> clampedIndices(Value first, Value count, int64_t n) const {
    Value last = arith::SubIOp::create(b, loc, count, indexConstant(b, loc, 1));
    SmallVector<Value> indices;
    for (int64_t k = 0; k < n; ++k)
      indices.push_back(arith::MinUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, first, indexConstant(b, loc, k)),
          last));
    return indices;
  }
};

/// scores[i, j] = Σ_d q[i, d] · k[j, d] for `queries` [rows, D] and `keys`
/// [cols, D]: blocks of query rows (blockRowsOf) × `blockKeys` keys, one vector
/// accumulator per pair over D, reduced at the end of the block.
Value blockScores(OpBuilder &b, Location loc, Value queries, Value keys,
                  int64_t headDim, int64_t lanes, int64_t blockKeys) {
  const int64_t blockRows = blockRowsOf(queries);
  Value zero = indexConstant(b, loc, 0);
  Value rows = tensor::DimOp::create(b, loc, queries, 0);
  Value cols = tensor::DimOp::create(b, loc, keys, 0);
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{rows, cols},
                                       b.getF32Type());
  auto fastMath = arith::FastMathFlagsAttr::get(
      b.getContext(),
      arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  auto rowLoop = scf::ForOp::create(
      b, loc, zero, rows, indexConstant(b, loc, blockRows), ValueRange{init},
      [&](OpBuilder &rb, Location rl, Value firstRow, ValueRange rowCarried) {
        Tiles rt{rb, rl, lanes};
        SmallVector<Value> rowIndices =
            rt.clampedIndices(firstRow, rows, blockRows);
        auto keyLoop = scf::ForOp::create(
            rb, rl, zero, cols, indexConstant(rb, rl, blockKeys),
            ValueRange{rowCarried[0]},
            [&](OpBuilder &kb, Location kl, Value firstKey,
                ValueRange keyCarried) {
              Tiles kt{kb, kl, lanes};
              SmallVector<Value> keyIndices =
                  kt.clampedIndices(firstKey, cols, blockKeys);
              Value zeroVector = arith::ConstantOp::create(
                  kb, kl,
                  DenseElementsAttr::get(kt.f32Vector(), kb.getF32FloatAttr(0)));
              SmallVector<Value> sums(blockRows * blockKeys, zeroVector);
              for (int64_t column = 0; column < headDim; column += lanes) {
                SmallVector<Value> q, k;
                for (Value row : rowIndices)
                  q.push_back(kt.readRow(queries, row, column));
                for (Value key : keyIndices)
                  k.push_back(kt.readRow(keys, key, column));
                for (int64_t i = 0; i < blockRows; ++i)
                  for (int64_t j = 0; j < blockKeys; ++j) {
                    Value &sum = sums[i * blockKeys + j];
                    sum = vector::FMAOp::create(kb, kl, q[i], k[j], sum);
                  }
              }
              Value scores = keyCarried[0];
              for (int64_t i = 0; i < blockRows; ++i) {
                SmallVector<Value> dots = kt.reduceEach(
                    ArrayRef<Value>(sums).slice(i * blockKeys, blockKeys),
                    fastMath);
                for (int64_t j = 0; j < blockKeys; ++j)
                  scores = tensor::InsertOp::create(
                      kb, kl, dots[j], scores,
                      ValueRange{rowIndices[i], keyIndices[j]});
              }
              scf::YieldOp::create(kb, kl, scores);
            });
        scf::YieldOp::create(rb, rl, keyLoop.getResult(0));
      });
  return rowLoop.getResult(0);
}

/// acc[i, :] += Σ_j p[i, j] · v[j, :] for `weights` [rows, cols], `values`
/// [cols, D] and `accumulator` [rows, D]: blocks of rows (blockRowsOf) ×
/// `blockVectors` vectors of D stay in registers while the keys stream by.
Value blockWeightedValues(OpBuilder &b, Location loc, Value weights,
                          Value values, Value accumulator, int64_t headDim,
                          int64_t lanes, int64_t blockVectors) {
  const int64_t blockRows = blockRowsOf(weights);
  Value zero = indexConstant(b, loc, 0);
  Value one = indexConstant(b, loc, 1);
  Value rows = tensor::DimOp::create(b, loc, weights, 0);
  Value cols = tensor::DimOp::create(b, loc, weights, 1);
  auto rowLoop = scf::ForOp::create(
      b, loc, zero, rows, indexConstant(b, loc, blockRows),
      ValueRange{accumulator},
      [&](OpBuilder &rb, Location rl, Value firstRow, ValueRange rowCarried) {
        Tiles rt{rb, rl, lanes};
        SmallVector<Value> rowIndices =
            rt.clampedIndices(firstRow, rows, blockRows);
        Value acc = rowCarried[0];
        int64_t chunk = blockVectors * lanes;
        for (int64_t first = 0; first < headDim; first += chunk) {
          int64_t vectors = std::min(chunk, headDim - first) / lanes;
          SmallVector<Value> sums;
          for (Value row : rowIndices)
            for (int64_t v = 0; v < vectors; ++v)
              sums.push_back(rt.readRow(acc, row, first + v * lanes));
          auto keyLoop = scf::ForOp::create(
              rb, rl, zero, cols, one, sums,
              [&](OpBuilder &kb, Location kl, Value key, ValueRange carried) {
                Tiles kt{kb, kl, lanes};
                SmallVector<Value> next(carried.begin(), carried.end());
                SmallVector<Value> v;
                for (int64_t n = 0; n < vectors; ++n)
                  v.push_back(kt.readRow(values, key, first + n * lanes));
                for (int64_t i = 0; i < blockRows; ++i) {
                  Value weight = vector::BroadcastOp::create(
                      kb, kl, kt.f32Vector(),
                      tensor::ExtractOp::create(
                          kb, kl, weights, ValueRange{rowIndices[i], key}));
                  for (int64_t n = 0; n < vectors; ++n) {
                    Value &sum = next[i * vectors + n];
                    sum = vector::FMAOp::create(kb, kl, weight, v[n], sum);
                  }
                }
                scf::YieldOp::create(kb, kl, next);
              });
          for (int64_t i = 0; i < blockRows; ++i)
            for (int64_t n = 0; n < vectors; ++n)
              acc = vector::TransferWriteOp::create(
                        rb, rl, keyLoop.getResult(i * vectors + n), acc,
                        ValueRange{rowIndices[i],
                                   indexConstant(rb, rl, first + n * lanes)},
                        ArrayRef<bool>{true})
                        .getResult();
        }
        scf::YieldOp::create(rb, rl, acc);
      });
  return rowLoop.getResult(0);
}

/// The head dimension of a tagged product whose rows are whole vectors, or
/// nothing (the generic stays portable).
std::optional<int64_t> wholeVectorRows(linalg::GenericOp generic,
                                       int64_t lanes) {
  if (generic.getNumDpsInputs() != 2 || generic.getNumResults() != 1)
    return std::nullopt;
  auto second =
      dyn_cast<RankedTensorType>(generic.getDpsInputs()[1].getType());
  if (!second || second.getRank() != 2 || second.isDynamicDim(1))
    return std::nullopt;
  int64_t headDim = second.getDimSize(1);
  if (headDim % lanes != 0)
    return std::nullopt;
  return headDim;
}

struct HetcX86BlockAttentionPass
    : hetc::x86::impl::HetcX86BlockAttentionPassBase<
          HetcX86BlockAttentionPass> {
  using HetcX86BlockAttentionPassBase::HetcX86BlockAttentionPassBase;

  void runOnOperation() override {
    if (!hetc::x86::checkVectorBits(getOperation(), "hetc-x86-block-attention",
                                    vectorBits))
      return signalPassFailure();
    int64_t lanes = vectorBits / 32;
    // AVX-512 has 32 vector registers, the narrower levels 16: blocks of
    // 4 × 4 (or 4 × 2) accumulators leave room for the operands.
    int64_t blockWidth = vectorBits == 512 ? 4 : 2;
    SmallVector<linalg::GenericOp> products;
    getOperation()->walk([&](linalg::GenericOp generic) {
      if (generic->hasAttr(hetc::llm::kAttentionScoresAttrName) ||
          generic->hasAttr(hetc::llm::kAttentionValuesAttrName))
        products.push_back(generic);
    });
    for (linalg::GenericOp generic : products) {
      bool scores = generic->hasAttr(hetc::llm::kAttentionScoresAttrName);
      generic->removeAttr(hetc::llm::kAttentionScoresAttrName);
      generic->removeAttr(hetc::llm::kAttentionValuesAttrName);
      std::optional<int64_t> headDim = wholeVectorRows(generic, lanes);
      if (!headDim)
        continue;
      OpBuilder b(generic);
      Location loc = generic.getLoc();
      Value first = generic.getDpsInputs()[0];
      Value second = generic.getDpsInputs()[1];
      Value blocked =
          scores ? blockScores(b, loc, first, second, *headDim, lanes,
                               blockWidth)
                 : blockWeightedValues(b, loc, first, second,
                                       generic.getDpsInits()[0], *headDim,
                                       lanes, blockWidth);
      generic.getResult(0).replaceAllUsesWith(blocked);
      generic.erase();
    }
  }
};

} // namespace
