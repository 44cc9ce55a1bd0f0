// Prefill attention tiled over the keys with an online softmax (the
// flash-attention recurrence): each (block of query tokens, head) walks the
// cached keys in blocks, keeping a running row maximum, row sum and weighted
// value sum, so no score matrix over the whole context is ever materialized
// and, with a causal mask, key blocks past a query block's last position are
// never visited.
#include "Patterns.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace hetc::conversion {

namespace {

using utils::IteratorType;

/// Query tokens per tile: the tile's scores, weights and accumulators stay in
/// the first-level cache for head dimensions up to 128.
constexpr int64_t kQueryTile = 32;

Value minIndex(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  return arith::MinSIOp::create(b, loc, lhs, rhs);
}

/// A rank-reduced [sizes] slice of `source` at `offsets` with unit strides.
Value slice(OpBuilder &b, Location loc, RankedTensorType type, Value source,
            ArrayRef<OpFoldResult> offsets, ArrayRef<OpFoldResult> sizes) {
  SmallVector<OpFoldResult> strides(offsets.size(), b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(b, loc, type, source, offsets, sizes,
                                        strides);
}

/// An elementwise generic over `rank` loops whose inputs are read through
/// `inputMaps` and whose single result has `resultType` (identity map).
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange inputs, ArrayRef<AffineMap> inputMaps,
                  function_ref<Value(OpBuilder &, Location, ValueRange)> body,
                  Value init = Value()) {
  MLIRContext *ctx = b.getContext();
  unsigned rank = resultType.getRank();
  if (!init)
    init = tensor::EmptyOp::create(b, loc, getMixedSizes(b, loc, inputs[0]),
                                   resultType.getElementType());
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(identityMap(ctx, rank));
  return linalg::GenericOp::create(
             b, loc, resultType, inputs, ValueRange{init}, maps,
             SmallVector<IteratorType>(rank, IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(nb, l, body(nb, l, args));
             })
      .getResult(0);
}

/// Row maxima and sums over a block of keys may be taken in any order (they
/// vectorize); scores are never NaN where a model's activations are finite,
/// and a non-finite one reaches the logits regardless.
arith::FastMathFlagsAttr reductionFastMath(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::nnan);
}

/// The running maximum as the exponent's offset: a row that has seen only
/// masked keys has a maximum of -inf, and every exponent of it must be 0
/// (exp(-inf - 0)), not NaN (exp(-inf + inf)).
Value finiteOffset(OpBuilder &b, Location loc, Value maximum) {
  Value unseen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                       maximum, f32Constant(b, loc, -INFINITY));
  return arith::SelectOp::create(b, loc, unseen, f32Constant(b, loc, 0.0),
                                 maximum);
}

/// One past the largest of `positions` (a 1-D integer tensor), as an
/// index: the end of the cached keys they attend to.
Value positionsEnd(OpBuilder &b, Location loc, Value positions) {
  MLIRContext *ctx = b.getContext();
  Type element = cast<RankedTensorType>(positions.getType()).getElementType();
  Value lowest =
      arith::ConstantOp::create(b, loc, b.getIntegerAttr(element, 0));
  Value maxInit =
      linalg::FillOp::create(
          b, loc, ValueRange{lowest},
          ValueRange{tensor::EmptyOp::create(b, loc, ArrayRef<OpFoldResult>{},
                                             element)})
          .getResult(0);
  Value largest =
      linalg::GenericOp::create(
          b, loc, maxInit.getType(), ValueRange{positions}, ValueRange{maxInit},
          SmallVector<AffineMap>{identityMap(ctx, 1),
                                 AffineMap::get(1, 0, {}, ctx)},
          {IteratorType::reduction},
          [](OpBuilder &nb, Location l, ValueRange args) {
            linalg::YieldOp::create(
                nb, l,
                arith::MaxSIOp::create(nb, l, args[0], args[1]).getResult());
          })
          .getResult(0);
  Value last = arith::IndexCastOp::create(
      b, loc, b.getIndexType(),
      tensor::ExtractOp::create(b, loc, largest, ValueRange{}));
  return arith::AddIOp::create(b, loc, last, indexConstant(b, loc, 1));
}

} // namespace

Value cacheSlot(OpBuilder &b, Location loc, Value position, Value blocks,
                int64_t blockSize, Value token) {
  if (!blocks)
    return position;
  Value size = indexConstant(b, loc, blockSize);
  Value logical = arith::DivUIOp::create(b, loc, position, size);
  SmallVector<Value, 2> at = {logical};
  if (cast<RankedTensorType>(blocks.getType()).getRank() == 2)
    at.insert(at.begin(), token);
  Value physical = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, blocks, at));
  return arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, physical, size),
      arith::RemUIOp::create(b, loc, position, size));
}

Value buildTiledAttention(OpBuilder &b, Location loc,
                          const TiledAttentionParams &params, Value query,
                          Value cache, Value positions) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  auto queryType = cast<RankedTensorType>(query.getType());
  auto cacheType = cast<RankedTensorType>(cache.getType());
  Type cacheElement = cacheType.getElementType();
  int64_t numHeads = queryType.getDimSize(1);
  int64_t headDim = queryType.getDimSize(2);
  int64_t kvHeads = cacheType.getDimSize(1);
  int64_t group = numHeads / kvHeads;
  auto positionType = cast<RankedTensorType>(positions.getType());
  Type positionElement = positionType.getElementType();
  constexpr int64_t dyn = ShapedType::kDynamic;

  Value numTokens = tensor::DimOp::create(b, loc, query, 0);
  // Only the prefix up to the largest position holds keys.
  Value contextLength = positionsEnd(b, loc, positions);
  // Tokens with block tables of their own (a batch of sequences, one token
  // each) attend over different keys: each is a tile of its own.
  bool tablePerToken =
      params.blocks &&
      cast<RankedTensorType>(params.blocks.getType()).getRank() == 2;
  int64_t queryTileSize = tablePerToken ? 1 : kQueryTile;
  Value queryTile = indexConstant(b, loc, queryTileSize);
  Value numQueryTiles = arith::CeilDivSIOp::create(b, loc, numTokens, queryTile);
  Value outputInit = tensor::EmptyOp::create(b, loc, getMixedSizes(b, loc, query),
                                             f32);

  // A static count of tokens that fits one tile (a decode step) keeps its
  // tile's rows static, so the products know they hold that many rows.
  int64_t tileRows = tablePerToken ? 1
                     : !queryType.isDynamicDim(0) &&
                             queryType.getDimSize(0) <= kQueryTile
                         ? queryType.getDimSize(0)
                         : dyn;
  auto rowsType = RankedTensorType::get({tileRows}, f32);
  auto tileType = RankedTensorType::get({tileRows, headDim}, f32);
  auto scoresType = RankedTensorType::get({tileRows, dyn}, f32);
  auto keysType = RankedTensorType::get({dyn, headDim}, cacheElement);
  AffineExpr i, j, d;
  bindDims(ctx, i, j, d);
  AffineMap rowOf2 = AffineMap::get(2, 0, {i}, ctx);
  AffineMap identity1 = identityMap(ctx, 1);
  AffineMap identity2 = identityMap(ctx, 2);

  // Heads are the grid: a static extent the kernel outliner can split.
  auto forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{numQueryTiles, b.getIndexAttr(numHeads)},
      ValueRange{outputInit}, std::nullopt);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forall.getBody());
  Value tileIndex = forall.getInductionVar(0);
  Value head = forall.getInductionVar(1);
  Value output = forall.getRegionIterArgs()[0];
  Value firstToken = arith::MulIOp::create(b, loc, tileIndex, queryTile);
  OpFoldResult rows =
      ShapedType::isDynamic(tileRows)
          ? OpFoldResult(minIndex(
                b, loc, queryTile,
                arith::SubIOp::create(b, loc, numTokens, firstToken)))
          : OpFoldResult(b.getIndexAttr(tileRows));
  Value kvHead = arith::DivUIOp::create(b, loc, head,
                                        indexConstant(b, loc, group));

  // The tile's queries, scaled once here instead of every score.
  Value queries = slice(b, loc, tileType, query,
                        {firstToken, head, b.getIndexAttr(0)},
                        {rows, b.getIndexAttr(1), b.getIndexAttr(headDim)});
  queries = elementwise(b, loc, tileType, ValueRange{queries}, {identity2},
                        [&](OpBuilder &nb, Location l, ValueRange args) {
                          return arith::MulFOp::create(
                                     nb, l, args[0],
                                     f32Constant(nb, l, params.scale))
                              .getResult();
                        });
  auto tilePositionsType = RankedTensorType::get({tileRows}, positionElement);
  Value tilePositions =
      slice(b, loc, tilePositionsType, positions, {firstToken}, {rows});

  // Keys past the tile's last position are masked for all its rows.
  Value keyEnd = contextLength;
  if (params.causal)
    keyEnd = minIndex(b, loc, contextLength,
                      positionsEnd(b, loc, tilePositions));

  SmallVector<OpFoldResult> rowSizes = {rows};
  SmallVector<OpFoldResult> tileSizes = {rows, b.getIndexAttr(headDim)};
  Value maxInit = createFilled(b, loc, rowSizes, f32, -INFINITY);
  Value sumInit = createFilled(b, loc, rowSizes, f32, 0.0);
  Value accInit = createFilled(b, loc, tileSizes, f32, 0.0);
  // A paged cache's tiles stay within a block (the lowering checked that
  // such a tile exists), so each tile's keys are one contiguous slice.
  Value keyTile =
      indexConstant(b, loc, attentionKeyTile(params.blockSize));
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0), keyEnd, keyTile,
      ValueRange{maxInit, sumInit, accInit},
      [&](OpBuilder &lb, Location l, Value firstKey, ValueRange carried) {
        Value runningMax = carried[0];
        Value runningSum = carried[1];
        Value accumulator = carried[2];
        Value cols = minIndex(lb, l, keyTile,
                              arith::SubIOp::create(lb, l, keyEnd, firstKey));
        Value firstSlot =
            cacheSlot(lb, l, firstKey, params.blocks, params.blockSize,
                      tablePerToken ? firstToken : Value());
        auto cacheSlice = [&](int64_t part) {
          return slice(lb, l, keysType, cache,
                       {lb.getIndexAttr(part), kvHead, firstSlot,
                        lb.getIndexAttr(0)},
                       {lb.getIndexAttr(1), lb.getIndexAttr(1), cols,
                        lb.getIndexAttr(headDim)});
        };
        Value keys = cacheSlice(0);
        Value values = cacheSlice(1);

        // scores[i, j] = Σ_d q[i, d] · k[j, d], then soft-cap and mask.
        SmallVector<OpFoldResult> scoreSizes = {rows, cols};
        Value scores =
            linalg::GenericOp::create(
                lb, l, scoresType, ValueRange{queries, keys},
                ValueRange{createFilled(lb, l, scoreSizes, f32, 0.0)},
                SmallVector<AffineMap>{AffineMap::get(3, 0, {i, d}, ctx),
                                       AffineMap::get(3, 0, {j, d}, ctx),
                                       AffineMap::get(3, 0, {i, j}, ctx)},
                {IteratorType::parallel, IteratorType::parallel,
                 IteratorType::reduction},
                [](OpBuilder &nb, Location bl, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, bl,
                      multiplyAccumulate(nb, bl, args[0], args[1], args[2]));
                })
                .getResult(0);
        scores.getDefiningOp()->setAttr(llm::kAttentionScoresAttrName,
                                        lb.getUnitAttr());
        scores = elementwise(
            lb, l, scoresType, ValueRange{scores, tilePositions},
            {identity2, rowOf2},
            [&](OpBuilder &nb, Location bl, ValueRange args) {
              Value score = args[0];
              if (params.softcap)
                score = arith::MulFOp::create(
                    nb, bl,
                    math::TanhOp::create(
                        nb, bl,
                        arith::MulFOp::create(
                            nb, bl, score,
                            f32Constant(nb, bl, 1.0 / *params.softcap))),
                    f32Constant(nb, bl, *params.softcap));
              Value key = arith::IndexCastOp::create(
                  nb, bl, nb.getI64Type(),
                  arith::AddIOp::create(nb, bl, firstKey,
                                        linalg::IndexOp::create(nb, bl, 1)));
              Value own = args[1];
              if (!own.getType().isInteger(64))
                own = arith::ExtSIOp::create(nb, bl, nb.getI64Type(), own);
              Value hidden =
                  arith::ConstantOp::create(nb, bl, nb.getBoolAttr(false));
              if (params.causal)
                hidden = arith::CmpIOp::create(
                    nb, bl, arith::CmpIPredicate::sgt, key, own);
              if (params.window) {
                Value oldest = arith::SubIOp::create(
                    nb, bl, own,
                    arith::ConstantOp::create(
                        nb, bl, nb.getI64IntegerAttr(*params.window - 1)));
                hidden = arith::OrIOp::create(
                    nb, bl, hidden,
                    arith::CmpIOp::create(nb, bl, arith::CmpIPredicate::slt,
                                          key, oldest));
              }
              return arith::SelectOp::create(
                         nb, bl, hidden, f32Constant(nb, bl, -INFINITY), score)
                  .getResult();
            });

        // m' = max(m, max_j s[i, j]); α = exp(m − m'); the block's weights
        // p[i, j] = exp(s[i, j] − m'). The running values are updated in
        // their own buffers, so the loop allocates nothing per step.
        Value blockMax =
            linalg::GenericOp::create(
                lb, l, rowsType, ValueRange{scores},
                ValueRange{createFilled(lb, l, rowSizes, f32, -INFINITY)},
                SmallVector<AffineMap>{identity2, rowOf2},
                {IteratorType::parallel, IteratorType::reduction},
                [](OpBuilder &nb, Location bl, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, bl,
                      arith::MaxNumFOp::create(nb, bl, args[0], args[1],
                                               reductionFastMath(nb))
                          .getResult());
                })
                .getResult(0);
        auto update = linalg::GenericOp::create(
            lb, l, TypeRange{rowsType, rowsType}, ValueRange{blockMax},
            ValueRange{runningMax,
                       tensor::EmptyOp::create(lb, l, rowSizes, f32)},
            SmallVector<AffineMap>(3, identity1),
            {IteratorType::parallel},
            [](OpBuilder &nb, Location bl, ValueRange args) {
              Value newMax =
                  arith::MaximumFOp::create(nb, bl, args[0], args[1]);
              Value rescale = math::ExpOp::create(
                  nb, bl,
                  arith::SubFOp::create(nb, bl, args[1],
                                        finiteOffset(nb, bl, newMax)));
              linalg::YieldOp::create(nb, bl, ValueRange{newMax, rescale});
            });
        Value newMax = update.getResult(0);
        Value rescale = update.getResult(1);
        Value weights = elementwise(
            lb, l, scoresType, ValueRange{scores, newMax}, {identity2, rowOf2},
            [](OpBuilder &nb, Location bl, ValueRange args) {
              return math::ExpOp::create(
                         nb, bl,
                         arith::SubFOp::create(nb, bl, args[0],
                                               finiteOffset(nb, bl, args[1])))
                  .getResult();
            });

        // l' = α·l + Σ_j p[i, j]
        Value scaledSum = elementwise(
            lb, l, rowsType, ValueRange{rescale}, {identity1},
            [](OpBuilder &nb, Location bl, ValueRange args) {
              return arith::MulFOp::create(nb, bl, args[1], args[0])
                  .getResult();
            },
            runningSum);
        Value newSum =
            linalg::GenericOp::create(
                lb, l, rowsType, ValueRange{weights}, ValueRange{scaledSum},
                SmallVector<AffineMap>{identity2, rowOf2},
                {IteratorType::parallel, IteratorType::reduction},
                [](OpBuilder &nb, Location bl, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, bl,
                      arith::AddFOp::create(nb, bl, args[0], args[1],
                                            reductionFastMath(nb))
                          .getResult());
                })
                .getResult(0);

        // acc' = α·acc + Σ_j p[i, j] · v[j, :]; loops (i, j, d) so the
        // innermost walks a row of v and of the accumulator.
        Value scaledAcc = elementwise(
            lb, l, tileType, ValueRange{rescale}, {rowOf2},
            [](OpBuilder &nb, Location bl, ValueRange args) {
              return arith::MulFOp::create(nb, bl, args[1], args[0])
                  .getResult();
            },
            accumulator);
        Value newAcc =
            linalg::GenericOp::create(
                lb, l, tileType, ValueRange{weights, values},
                ValueRange{scaledAcc},
                SmallVector<AffineMap>{AffineMap::get(3, 0, {i, j}, ctx),
                                       AffineMap::get(3, 0, {j, d}, ctx),
                                       AffineMap::get(3, 0, {i, d}, ctx)},
                {IteratorType::parallel, IteratorType::reduction,
                 IteratorType::parallel},
                [](OpBuilder &nb, Location bl, ValueRange args) {
                  linalg::YieldOp::create(
                      nb, bl,
                      multiplyAccumulate(nb, bl, args[0], args[1], args[2]));
                })
                .getResult(0);
        newAcc.getDefiningOp()->setAttr(llm::kAttentionValuesAttrName,
                                         lb.getUnitAttr());
        scf::YieldOp::create(lb, l, ValueRange{newMax, newSum, newAcc});
      });

  // out = acc / l: every row has seen its own position, so l > 0. Written
  // straight into the output's rows (no copy of a strided tile).
  Value outputRows =
      slice(b, loc, tileType, output, {firstToken, head, b.getIndexAttr(0)},
            {rows, b.getIndexAttr(1), b.getIndexAttr(headDim)});
  Value normalized = elementwise(
      b, loc, tileType, ValueRange{loop.getResult(2), loop.getResult(1)},
      {identity2, rowOf2},
      [](OpBuilder &nb, Location l, ValueRange args) {
        return arith::DivFOp::create(nb, l, args[0], args[1]).getResult();
      },
      outputRows);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  tensor::ParallelInsertSliceOp::create(
      b, loc, normalized, output,
      ArrayRef<OpFoldResult>{firstToken, head, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{rows, b.getIndexAttr(1), b.getIndexAttr(headDim)},
      strides);
  return forall.getResult(0);
}

} // namespace hetc::conversion
