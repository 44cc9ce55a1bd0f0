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
    int64_t blockSize =
        static_cast<int64_t>(op.getBlockSize().value_or(0));
    Value numTokens = tensor::DimOp::create(rewriter, loc, keys, 0);
    Value zero = indexConstant(rewriter, loc, 0);
    Value one = indexConstant(rewriter, loc, 1);
    auto loop = scf::ForOp::create(
        rewriter, loc, zero, numTokens, one, ValueRange{adaptor.getCache()},
        [&](OpBuilder &b, Location l, Value token, ValueRange carried) {
          Value position = cacheSlot(
              b, l,
              integerToIndex(
                  b, l, tensor::ExtractOp::create(b, l, positions, token)),
              adaptor.getBlocks(), blockSize, token);
          auto rowType = RankedTensorType::get({kvHeads, headDim}, elementType);
          SmallVector<OpFoldResult> rowOffsets = {token, b.getIndexAttr(0),
                                                  b.getIndexAttr(0)};
          SmallVector<OpFoldResult> rowSizes = {b.getIndexAttr(1),
                                                b.getIndexAttr(kvHeads),
                                                b.getIndexAttr(headDim)};
          SmallVector<OpFoldResult> rowStrides(3, b.getIndexAttr(1));
          SmallVector<OpFoldResult> cacheSizes = {
              b.getIndexAttr(1), b.getIndexAttr(kvHeads), b.getIndexAttr(1),
              b.getIndexAttr(headDim)};
          SmallVector<OpFoldResult> cacheStrides(4, b.getIndexAttr(1));
          Value cache = carried[0];
          SmallVector<Value, 2> sources = {keys, values};
          for (auto [part, source] : llvm::enumerate(sources)) {
            Value row = tensor::ExtractSliceOp::create(
                b, l, rowType, source, rowOffsets, rowSizes, rowStrides);
            SmallVector<OpFoldResult> cacheOffsets = {
                b.getIndexAttr(static_cast<int64_t>(part)), b.getIndexAttr(0),
                position, b.getIndexAttr(0)};
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
    int64_t headDim = queryType.getDimSize(2);
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(static_cast<double>(headDim));
    std::optional<double> softcap;
    if (op.getSoftcap())
      softcap = op.getSoftcap()->convertToDouble();
    std::optional<int64_t> window;
    if (op.getWindow())
      window = static_cast<int64_t>(*op.getWindow());

    // Tokens attend tile by tile: the scores over the whole context would
    // not fit the caches, causal tiles skip the keys past their last
    // position, and a decode step (one tile) streams its keys in blocks with
    // an online softmax: nothing grows with the context but the reads.
    int64_t blockSize = static_cast<int64_t>(op.getBlockSize().value_or(0));
    if (attentionKeyTile(blockSize) == 0)
      return op.emitOpError()
             << "block_size " << blockSize << " is neither a multiple nor a "
             << "divisor of the " << kAttentionKeyTile
             << " keys a step of the tiled attention takes; page the cache "
                "in blocks of a power of two";
    TiledAttentionParams params{scale,  op.getCausal(),      softcap,
                                window, adaptor.getBlocks(), blockSize};
    rewriter.replaceOp(op, buildTiledAttention(
                               rewriter, op.getLoc(), params, adaptor.getQuery(),
                               adaptor.getCache(), adaptor.getPositions()));
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
