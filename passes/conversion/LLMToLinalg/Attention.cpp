// llm → linalg for positions and attention: RoPE, KV-cache append and grouped
// causal attention over the cached prefix.
#include "Patterns.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace hetc::conversion {

namespace {

using utils::IteratorType;

Value indexToF32(OpBuilder &b, Location loc, Value index) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

Value integerToIndex(OpBuilder &b, Location loc, Value integer) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
}

struct RoPELowering : OpConversionPattern<llm::RoPEOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::RoPEOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType type = op.getInput().getType();
    if (!type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 activations");
    if (op.getScaling() == llm::RopeScaling::yarn)
      return op.emitOpError() << "yarn scaling is not lowered to linalg yet";
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    Value factors = adaptor.getFreqFactors();
    int64_t rotaryDim = static_cast<int64_t>(op.getRotaryDim());
    bool neox = op.getMode() == llm::RopeMode::neox;
    double theta = op.getTheta().convertToDouble();
    double positionScale =
        op.getScalingFactor() ? 1.0 / op.getScalingFactor()->convertToDouble()
                              : 1.0;
    int64_t headDim = type.getDimSize(2);
    int64_t half = rotaryDim / 2;
    // cos and sin of every (token, pair) once, not per head: the table has
    // head_dim / 2 columns so every element's pair index is in range (pairs
    // past the rotary part are computed and never used).
    int64_t tableWidth = std::max<int64_t>(headDim / 2, 1);
    OpFoldResult numTokens = tensor::getMixedSize(rewriter, loc, x, 0);
    auto tableType = RankedTensorType::get({type.getDimSize(0), tableWidth},
                                           rewriter.getF32Type());
    SmallVector<OpFoldResult> tableSizes = {numTokens,
                                            rewriter.getIndexAttr(tableWidth)};
    Value cosInit = tensor::EmptyOp::create(rewriter, loc, tableSizes,
                                            rewriter.getF32Type());
    Value sinInit = tensor::EmptyOp::create(rewriter, loc, tableSizes,
                                            rewriter.getF32Type());
    AffineExpr ts, tj;
    bindDims(ctx, ts, tj);
    auto table = linalg::GenericOp::create(
        rewriter, loc, TypeRange{tableType, tableType},
        ValueRange{adaptor.getPositions()}, ValueRange{cosInit, sinInit},
        SmallVector<AffineMap>{AffineMap::get(2, 0, {ts}, ctx),
                               identityMap(ctx, 2), identityMap(ctx, 2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value pair = linalg::IndexOp::create(b, l, 1);
          // θ_j = theta^(-2j / rotaryDim), divided by the frequency factor.
          Value exponent = arith::MulFOp::create(
              b, l, indexToF32(b, l, pair),
              f32Constant(b, l, -2.0 / static_cast<double>(rotaryDim)));
          Value frequency =
              math::PowFOp::create(b, l, f32Constant(b, l, theta), exponent);
          if (factors) {
            Value clamped = arith::MinUIOp::create(
                b, l, pair, indexConstant(b, l, std::max<int64_t>(half - 1, 0)));
            frequency = arith::DivFOp::create(
                b, l, frequency,
                tensor::ExtractOp::create(b, l, factors, ValueRange{clamped}));
          }
          Value position =
              arith::SIToFPOp::create(b, l, b.getF32Type(), args[0]);
          if (positionScale != 1.0)
            position = arith::MulFOp::create(b, l, position,
                                             f32Constant(b, l, positionScale));
          Value angle = arith::MulFOp::create(b, l, position, frequency);
          linalg::YieldOp::create(
              b, l,
              ValueRange{math::CosOp::create(b, l, angle).getResult(),
                         math::SinOp::create(b, l, angle).getResult()});
        });

    AffineExpr s, h, i;
    bindDims(ctx, s, h, i);
    AffineExpr pairOf = neox ? i % half : i.floorDiv(2);
    Value init = tensor::EmptyOp::create(rewriter, loc,
                                         getMixedSizes(rewriter, loc, x),
                                         rewriter.getF32Type());
    SmallVector<AffineMap> maps = {identityMap(ctx, 3),
                                   AffineMap::get(3, 0, {s, pairOf}, ctx),
                                   AffineMap::get(3, 0, {s, pairOf}, ctx),
                                   identityMap(ctx, 3)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type,
        ValueRange{x, table.getResult(0), table.getResult(1)}, ValueRange{init},
        maps,
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value token = linalg::IndexOp::create(b, l, 0);
          Value head = linalg::IndexOp::create(b, l, 1);
          Value element = linalg::IndexOp::create(b, l, 2);
          Value rotated = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::ult, element,
              indexConstant(b, l, rotaryDim));
          // The partner element and the sign of its term: normal pairs
          // (2j, 2j + 1); NeoX pairs (j, j + rotaryDim / 2).
          Value partner, first;
          if (neox) {
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                          element, indexConstant(b, l, half));
            partner = arith::SelectOp::create(
                b, l, first,
                arith::AddIOp::create(b, l, element, indexConstant(b, l, half)),
                arith::SubIOp::create(b, l, element,
                                      indexConstant(b, l, half)));
          } else {
            Value parity = arith::RemUIOp::create(b, l, element,
                                                  indexConstant(b, l, 2));
            first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                          parity, indexConstant(b, l, 0));
            partner = arith::XOrIOp::create(b, l, element,
                                            indexConstant(b, l, 1));
          }
          // Elements past the rotary part read themselves, in bounds.
          partner = arith::SelectOp::create(b, l, rotated, partner, element);
          Value partnerValue = tensor::ExtractOp::create(
              b, l, x, ValueRange{token, head, partner});
          Value signedPartner = arith::SelectOp::create(
              b, l, first, arith::NegFOp::create(b, l, partnerValue),
              partnerValue);
          Value result = arith::AddFOp::create(
              b, l, arith::MulFOp::create(b, l, args[0], args[1]),
              arith::MulFOp::create(b, l, signedPartner, args[2]));
          linalg::YieldOp::create(
              b, l,
              arith::SelectOp::create(b, l, rotated, result, args[0])
                  .getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// `values` converted to `elementType` when the cache stores another type.
Value castElements(OpBuilder &b, Location loc, Value values, Type elementType) {
  auto type = cast<RankedTensorType>(values.getType());
  if (type.getElementType() == elementType)
    return values;
  Value init = tensor::EmptyOp::create(b, loc, getMixedSizes(b, loc, values),
                                       elementType);
  unsigned rank = type.getRank();
  return linalg::GenericOp::create(
             b, loc, type.clone(elementType), ValueRange{values},
             ValueRange{init},
             SmallVector<AffineMap>(2, identityMap(b.getContext(), rank)),
             SmallVector<IteratorType>(rank, IteratorType::parallel),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   arith::TruncFOp::create(nb, l, elementType, args[0])
                       .getResult());
             })
      .getResult(0);
}

struct KVAppendLowering : OpConversionPattern<llm::KVAppendOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::KVAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    llm::KVCacheType cacheType = op.getCache().getType();
    if (isa<llm::QuantType>(cacheType.getElementType()))
      return op.emitOpError()
             << "block-quantized KV caches are not lowered to linalg yet";
    Location loc = op.getLoc();
    int64_t kvHeads = cacheType.getKvHeads();
    int64_t headDim = cacheType.getHeadDim();
    Type elementType = cacheType.getElementType();
    Value keys = castElements(rewriter, loc, adaptor.getKeys(), elementType);
    Value values =
        castElements(rewriter, loc, adaptor.getValues(), elementType);
    Value positions = adaptor.getPositions();
    Value numTokens = tensor::DimOp::create(rewriter, loc, keys, 0);
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, numTokens, one, ValueRange{adaptor.getCache()},
        [&](OpBuilder &b, Location l, Value token, ValueRange carried) {
          Value position = integerToIndex(
              b, l, tensor::ExtractOp::create(b, l, positions, token));
          auto rowType = RankedTensorType::get({kvHeads, headDim}, elementType);
          SmallVector<OpFoldResult> rowOffsets = {token, b.getIndexAttr(0),
                                                  b.getIndexAttr(0)};
          SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1),
                                                b.getIndexAttr(kvHeads),
                                                b.getIndexAttr(headDim)};
          SmallVector<OpFoldResult> rowStrides(3, b.getIndexAttr(1));
          SmallVector<OpFoldResult> cacheSizes = {
              b.getIndexAttr(1), b.getIndexAttr(1), b.getIndexAttr(kvHeads),
              b.getIndexAttr(headDim)};
          SmallVector<OpFoldResult> cacheStrides(4, b.getIndexAttr(1));
          Value cache = carried[0];
          SmallVector<Value, 2> sources = {keys, values};
          for (auto [part, source] : llvm::enumerate(sources)) {
            Value row = tensor::ExtractSliceOp::create(
                b, l, rowType, source, rowOffsets, rowSizes, rowStrides);
            SmallVector<OpFoldResult> cacheOffsets = {
                b.getIndexAttr(static_cast<int64_t>(part)), position,
                b.getIndexAttr(0), b.getIndexAttr(0)};
            // Copy through linalg so bufferization writes the row straight
            // into the cache, with loops rather than a runtime copy call.
            Value slot = tensor::ExtractSliceOp::create(
                b, l, rowType, cache, cacheOffsets, cacheSizes, cacheStrides);
            Value written =
                linalg::CopyOp::create(b, l, ValueRange{row}, ValueRange{slot})
                    .getResult(0);
            cache = tensor::InsertSliceOp::create(
                b, l, written, cache, cacheOffsets, cacheSizes, cacheStrides);
          }
          scf::YieldOp::create(b, l, cache);
        });
    rewriter.replaceOp(op, loop.getResult(0));
    return success();
  }
};

struct AttentionLowering : OpConversionPattern<llm::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    RankedTensorType queryType = op.getQuery().getType();
    if (!queryType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 activations");
    llm::KVCacheType cacheType = op.getCache().getType();
    if (isa<llm::QuantType>(cacheType.getElementType()))
      return op.emitOpError()
             << "block-quantized KV caches are not lowered to linalg yet";
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type f32 = rewriter.getF32Type();
    Value query = adaptor.getQuery();
    Value cache = adaptor.getCache();
    Value positions = adaptor.getPositions();
    int64_t numHeads = queryType.getDimSize(1);
    int64_t headDim = queryType.getDimSize(2);
    int64_t kvHeads = cacheType.getKvHeads();
    int64_t group = numHeads / kvHeads;
    Type cacheElement = cacheType.getElementType();
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(headDim));
    std::optional<double> softcap;
    if (op.getSoftcap())
      softcap = op.getSoftcap()->convertToDouble();
    std::optional<int64_t> window;
    if (op.getWindow())
      window = static_cast<int64_t>(*op.getWindow());
    bool causal = op.getCausal();

    // Only the prefix up to the largest position holds keys.
    Type positionType =
        cast<RankedTensorType>(positions.getType()).getElementType();
    Value minimum = arith::ConstantOp::create(
        rewriter, loc, rewriter.getIntegerAttr(positionType, 0));
    Value maxInit = linalg::FillOp::create(
                        rewriter, loc, ValueRange{minimum},
                        ValueRange{tensor::EmptyOp::create(
                            rewriter, loc, ArrayRef<OpFoldResult>{},
                            positionType)})
                        .getResult(0);
    Value maxPosition =
        linalg::GenericOp::create(
            rewriter, loc, maxInit.getType(), ValueRange{positions},
            ValueRange{maxInit},
            SmallVector<AffineMap>{identityMap(ctx, 1),
                                   AffineMap::get(1, 0, {}, ctx)},
            {IteratorType::reduction},
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, arith::MaxSIOp::create(b, l, args[0], args[1])
                            .getResult());
            })
            .getResult(0);
    Value contextLength = arith::AddIOp::create(
        rewriter, loc,
        integerToIndex(rewriter, loc,
                       tensor::ExtractOp::create(rewriter, loc, maxPosition,
                                                 ValueRange{})),
        indexConstant(rewriter, loc, 1));

    // A prompt's tokens attend tile by tile: the scores over the whole
    // context would not fit the caches, and causal tiles skip the keys past
    // their last position.
    if (queryType.isDynamicDim(0)) {
      TiledAttentionParams params{scale, causal, softcap, window};
      rewriter.replaceOp(op, buildTiledAttention(rewriter, loc, params, query,
                                                 cache, positions,
                                                 contextLength));
      return success();
    }

    auto prefixType = RankedTensorType::get(
        {ShapedType::kDynamic, kvHeads, headDim}, cacheElement);
    auto prefix = [&](int64_t part) -> Value {
      SmallVector<OpFoldResult> offsets = {
          rewriter.getIndexAttr(part), rewriter.getIndexAttr(0),
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {
          rewriter.getIndexAttr(1), contextLength,
          rewriter.getIndexAttr(kvHeads), rewriter.getIndexAttr(headDim)};
      SmallVector<OpFoldResult> strides(4, rewriter.getIndexAttr(1));
      return tensor::ExtractSliceOp::create(rewriter, loc, prefixType, cache,
                                            offsets, sizes, strides);
    };
    Value keys = prefix(0);
    Value values = prefix(1);

    OpFoldResult numTokens = tensor::getMixedSize(rewriter, loc, query, 0);

    // scores[s, h, p] = Σ_d q[s, h, d] · k[p, h / group, d]
    AffineExpr s, h, p, d;
    bindDims(ctx, s, h, p, d);
    auto scoresType = RankedTensorType::get(
        {queryType.getDimSize(0), numHeads, ShapedType::kDynamic}, f32);
    Value scoresInit = createFilled(
        rewriter, loc, {numTokens, rewriter.getIndexAttr(numHeads), contextLength},
        f32, 0.0);
    Value scores =
        linalg::GenericOp::create(
            rewriter, loc, scoresType, ValueRange{query, keys},
            ValueRange{scoresInit},
            SmallVector<AffineMap>{
                AffineMap::get(4, 0, {s, h, d}, ctx),
                AffineMap::get(4, 0, {p, h.floorDiv(group), d}, ctx),
                AffineMap::get(4, 0, {s, h, p}, ctx)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel, IteratorType::reduction},
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, multiplyAccumulate(b, l, args[0], args[1], args[2]));
            })
            .getResult(0);

    // Scale, soft-cap and mask, then exponentiate against the row maximum.
    AffineExpr s3, h3, p3;
    bindDims(ctx, s3, h3, p3);
    Value maskedInit = tensor::EmptyOp::create(
        rewriter, loc, getMixedSizes(rewriter, loc, scores), f32);
    Value masked =
        linalg::GenericOp::create(
            rewriter, loc, scoresType, ValueRange{scores, positions},
            ValueRange{maskedInit},
            SmallVector<AffineMap>{identityMap(ctx, 3),
                                   AffineMap::get(3, 0, {s3}, ctx),
                                   identityMap(ctx, 3)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel},
            [&](OpBuilder &b, Location l, ValueRange args) {
              Value score =
                  arith::MulFOp::create(b, l, args[0], f32Constant(b, l, scale));
              if (softcap)
                score = arith::MulFOp::create(
                    b, l,
                    math::TanhOp::create(
                        b, l,
                        arith::MulFOp::create(b, l, score,
                                              f32Constant(b, l, 1.0 / *softcap))),
                    f32Constant(b, l, *softcap));
              Value key = arith::IndexCastOp::create(
                  b, l, b.getI64Type(), linalg::IndexOp::create(b, l, 2));
              Value own = arith::ExtSIOp::create(b, l, b.getI64Type(), args[1]);
              if (args[1].getType().isInteger(64))
                own = args[1];
              Value hidden = arith::ConstantOp::create(b, l, b.getBoolAttr(false));
              if (causal)
                hidden = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sgt,
                                               key, own);
              if (window) {
                // Sliding window: keys more than window - 1 behind are gone.
                Value oldest = arith::SubIOp::create(
                    b, l, own,
                    arith::ConstantOp::create(
                        b, l, b.getI64IntegerAttr(*window - 1)));
                hidden = arith::OrIOp::create(
                    b, l, hidden,
                    arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, key,
                                          oldest));
              }
              linalg::YieldOp::create(
                  b, l,
                  arith::SelectOp::create(b, l, hidden,
                                          f32Constant(b, l, -INFINITY), score)
                      .getResult());
            })
            .getResult(0);

    SmallVector<OpFoldResult> rowSizes = {numTokens,
                                          rewriter.getIndexAttr(numHeads)};
    auto rowType =
        RankedTensorType::get({queryType.getDimSize(0), numHeads}, f32);
    SmallVector<AffineMap> reduceMaps = {identityMap(ctx, 3),
                                         AffineMap::get(3, 0, {s3, h3}, ctx)};
    SmallVector<IteratorType> reduceIterators = {
        IteratorType::parallel, IteratorType::parallel, IteratorType::reduction};
    Value rowMax =
        linalg::GenericOp::create(
            rewriter, loc, rowType, ValueRange{masked},
            ValueRange{createFilled(rewriter, loc, rowSizes, f32, -INFINITY)},
            reduceMaps, reduceIterators,
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, arith::MaximumFOp::create(b, l, args[0], args[1])
                            .getResult());
            })
            .getResult(0);
    Value exps =
        linalg::GenericOp::create(
            rewriter, loc, scoresType, ValueRange{masked, rowMax},
            ValueRange{maskedInit},
            SmallVector<AffineMap>{identityMap(ctx, 3), reduceMaps[1],
                                   identityMap(ctx, 3)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel},
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  math::ExpOp::create(
                      b, l, arith::SubFOp::create(b, l, args[0], args[1]))
                      .getResult());
            })
            .getResult(0);
    Value rowSum =
        linalg::GenericOp::create(
            rewriter, loc, rowType, ValueRange{exps},
            ValueRange{createFilled(rewriter, loc, rowSizes, f32, 0.0)},
            reduceMaps, reduceIterators,
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  arith::AddFOp::create(b, l, args[0], args[1]).getResult());
            })
            .getResult(0);

    // out[s, h, d] = Σ_p e[s, h, p] · v[p, h / group, d] / Σ_p e[s, h, p]
    // Loops run (s, h, p, d): the innermost loop walks a contiguous row of v
    // and of the output, so it vectorizes, and heads form the kernel grid.
    AffineExpr so, ho, po, dd;
    bindDims(ctx, so, ho, po, dd);
    Value weighted =
        linalg::GenericOp::create(
            rewriter, loc, queryType, ValueRange{exps, values},
            ValueRange{createFilled(rewriter, loc,
                                    getMixedSizes(rewriter, loc, query), f32,
                                    0.0)},
            SmallVector<AffineMap>{
                AffineMap::get(4, 0, {so, ho, po}, ctx),
                AffineMap::get(4, 0, {po, ho.floorDiv(group), dd}, ctx),
                AffineMap::get(4, 0, {so, ho, dd}, ctx)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::reduction, IteratorType::parallel},
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l, multiplyAccumulate(b, l, args[0], args[1], args[2]));
            })
            .getResult(0);
    Value output =
        linalg::GenericOp::create(
            rewriter, loc, queryType, ValueRange{weighted, rowSum},
            ValueRange{tensor::EmptyOp::create(
                rewriter, loc, getMixedSizes(rewriter, loc, query), f32)},
            SmallVector<AffineMap>{identityMap(ctx, 3), reduceMaps[1],
                                   identityMap(ctx, 3)},
            {IteratorType::parallel, IteratorType::parallel,
             IteratorType::parallel},
            [](OpBuilder &b, Location l, ValueRange args) {
              linalg::YieldOp::create(
                  b, l,
                  arith::DivFOp::create(b, l, args[0], args[1]).getResult());
            })
            .getResult(0);
    rewriter.replaceOp(op, output);
    return success();
  }
};

} // namespace

void populateLLMToLinalgAttentionPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns) {
  patterns.add<RoPELowering, KVAppendLowering, AttentionLowering>(
      converter, patterns.getContext());
}

} // namespace hetc::conversion
