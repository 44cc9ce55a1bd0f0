// llm → linalg for the ops that read weight matrices: get_weight, embedding,
// matmul and logits.
#include "Patterns.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace hetc::conversion {

namespace {

using utils::IteratorType;

/// `x` [M, K] viewed as [M, K / inner, inner] (or with more trailing dims).
Value expandColumns(OpBuilder &b, Location loc, Value x,
                    ArrayRef<int64_t> trailing) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape = {type.getDimSize(0)};
  shape.append(trailing.begin(), trailing.end());
  SmallVector<OpFoldResult> outputShape = {tensor::getMixedSize(b, loc, x, 0)};
  for (int64_t size : trailing)
    outputShape.push_back(b.getIndexAttr(size));
  ReassociationIndices inner;
  for (size_t i = 0; i < trailing.size(); ++i)
    inner.push_back(static_cast<int64_t>(i + 1));
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), x,
      ArrayRef<ReassociationIndices>{{0}, inner}, outputShape);
}

/// The little-endian f16 made of bytes `low`, `high` (i8), as f32.
Value halfFromBytes(OpBuilder &b, Location loc, Value low, Value high) {
  Type i16 = b.getI16Type();
  Value lo = arith::ExtUIOp::create(b, loc, i16, low);
  Value hi = arith::ExtUIOp::create(b, loc, i16, high);
  Value eight = arith::ConstantOp::create(b, loc, b.getI16IntegerAttr(8));
  Value bits = arith::OrIOp::create(b, loc, lo,
                                    arith::ShLIOp::create(b, loc, hi, eight));
  Value half = arith::BitcastOp::create(b, loc, b.getF16Type(), bits);
  return arith::ExtFOp::create(b, loc, b.getF32Type(), half);
}

/// `x · wᵀ` for a Q8_0 or Q4_0 weight, a group of blocks per body: loops run
/// over (n, m, group) and the body, for each block of its group, reads the
/// block's 32 activations and packed bytes as vectors, decodes the quantized
/// values in registers and accumulates x·q·scale into a vector; one horizontal
/// sum per group ends the body. Groups of up to 8 blocks (256 elements) keep
/// the horizontal sums rare without unrolling too much code.
Value buildBlockMatmul(OpBuilder &b, Location loc, Value x, Value weight,
                       llm::QuantType quant, Value init,
                       RankedTensorType resultType) {
  MLIRContext *ctx = b.getContext();
  auto weightType = cast<RankedTensorType>(weight.getType());
  int64_t blockBytes = quant.getBytesPerBlock();
  int64_t numBlocks = weightType.getDimSize(1) / blockBytes;
  int64_t groupSize = 8;
  while (numBlocks % groupSize != 0)
    groupSize /= 2;
  int64_t numGroups = numBlocks / groupSize;
  bool q4 = quant.getFormat() == llm::QuantFormat::q4_0;
  int64_t rows = weightType.getDimSize(0);
  // Weight rows as [N, blocks, bytes of a block] for the reads, and as
  // [N, groups, bytes of a group] to give the loop its group dimension;
  // activations as [M, blocks, 32].
  Value blocks = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({rows, numBlocks, blockBytes},
                                    weightType.getElementType()),
      weight, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  Value groups = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({rows, numGroups, groupSize * blockBytes},
                            weightType.getElementType()),
      weight, ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  Value xBlocks = expandColumns(b, loc, x, {numBlocks, 32});
  AffineExpr n, m, group;
  bindDims(ctx, n, m, group);
  SmallVector<AffineMap> maps = {
      AffineMap::get(3, 0, {n, group, getAffineConstantExpr(0, ctx)}, ctx),
      AffineMap::get(3, 0, {m, n}, ctx)};
  auto fastMath = accumulationFastMath(b);
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{groups}, ValueRange{init}, maps,
             {utils::IteratorType::parallel, utils::IteratorType::parallel,
              utils::IteratorType::reduction},
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value column = linalg::IndexOp::create(nb, nloc, 0);
               Value row = linalg::IndexOp::create(nb, nloc, 1);
               Value groupIndex = linalg::IndexOp::create(nb, nloc, 2);
               Value zeroIndex = indexConstant(nb, nloc, 0);
               Value oneIndex = indexConstant(nb, nloc, 1);
               Value two = indexConstant(nb, nloc, 2);
               auto f32Vector = VectorType::get({32}, nb.getF32Type());
               Value i8Pad =
                   arith::ConstantOp::create(nb, nloc, nb.getI8IntegerAttr(0));
               Value sums = arith::ConstantOp::create(
                   nb, nloc,
                   DenseElementsAttr::get(f32Vector, nb.getF32FloatAttr(0.0f)));
               Value firstBlock = arith::MulIOp::create(
                   nb, nloc, groupIndex, indexConstant(nb, nloc, groupSize));
               for (int64_t i = 0; i < groupSize; ++i) {
                 Value block = arith::AddIOp::create(
                     nb, nloc, firstBlock, indexConstant(nb, nloc, i));
                 Value activations = vector::TransferReadOp::create(
                     nb, nloc, f32Vector, xBlocks,
                     ValueRange{row, block, zeroIndex},
                     f32Constant(nb, nloc, 0.0), ArrayRef<bool>{true});
                 Value quantized;
                 if (!q4) {
                   quantized = vector::TransferReadOp::create(
                       nb, nloc, VectorType::get({32}, nb.getI8Type()), blocks,
                       ValueRange{column, block, two}, i8Pad,
                       ArrayRef<bool>{true});
                 } else {
                   // Byte i holds element i (low nibble) and i + 16 (high).
                   auto bytesType = VectorType::get({16}, nb.getI8Type());
                   Value packed = vector::TransferReadOp::create(
                       nb, nloc, bytesType, blocks,
                       ValueRange{column, block, two}, i8Pad,
                       ArrayRef<bool>{true});
                   auto splat = [&](int value) -> Value {
                     return arith::ConstantOp::create(
                         nb, nloc,
                         DenseElementsAttr::get(bytesType,
                                                nb.getI8IntegerAttr(value)));
                   };
                   Value low =
                       arith::AndIOp::create(nb, nloc, packed, splat(15));
                   Value high =
                       arith::ShRUIOp::create(nb, nloc, packed, splat(4));
                   SmallVector<int64_t> order;
                   for (int64_t e = 0; e < 32; ++e)
                     order.push_back(e);
                   Value nibbles =
                       vector::ShuffleOp::create(nb, nloc, low, high, order);
                   Value eight = arith::ConstantOp::create(
                       nb, nloc,
                       DenseElementsAttr::get(
                           VectorType::get({32}, nb.getI8Type()),
                           nb.getI8IntegerAttr(8)));
                   quantized = arith::SubIOp::create(nb, nloc, nibbles, eight);
                 }
                 Value values =
                     arith::SIToFPOp::create(nb, nloc, f32Vector, quantized);
                 Value scaleLow = tensor::ExtractOp::create(
                     nb, nloc, blocks, ValueRange{column, block, zeroIndex});
                 Value scaleHigh = tensor::ExtractOp::create(
                     nb, nloc, blocks, ValueRange{column, block, oneIndex});
                 Value scale = vector::BroadcastOp::create(
                     nb, nloc, f32Vector,
                     halfFromBytes(nb, nloc, scaleLow, scaleHigh));
                 Value weights =
                     arith::MulFOp::create(nb, nloc, values, scale, fastMath);
                 Value products = arith::MulFOp::create(
                     nb, nloc, activations, weights, fastMath);
                 sums = arith::AddFOp::create(nb, nloc, sums, products, fastMath);
               }
               Value dot = vector::ReductionOp::create(
                   nb, nloc, vector::CombiningKind::ADD, sums, Value(),
                   fastMath.getValue());
               linalg::YieldOp::create(
                   nb, nloc,
                   arith::AddFOp::create(nb, nloc, args[1], dot, fastMath)
                       .getResult());
             })
      .getResult(0);
}

/// `x · wᵀ` for activations `x` [M, K] (f32) and a weight [N, K] stored as
/// `storageType` (converted value `weight`), into a new [M, N] f32 tensor.
Value buildMatmul(OpBuilder &b, Location loc, Value x, Value weight,
                  Type storageType, int64_t outFeatures) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, x, 0),
                                     b.getIndexAttr(outFeatures)};
  Value init = createFilled(b, loc, sizes, b.getF32Type(), 0.0);
  // Loops run (n, m, k): each weight row is read from memory once and stays
  // in L1 while every activation row of a prefill passes over it.
  AffineExpr n, m, k;
  bindDims(ctx, n, m, k);
  auto resultType =
      RankedTensorType::get({cast<RankedTensorType>(x.getType()).getDimSize(0),
                             outFeatures},
                            b.getF32Type());
  SmallVector<IteratorType> iterators = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::reduction};
  if (!isa<llm::QuantType>(storageType)) {
    // Float weights are a regular operand, so later tiling sees their accesses.
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                   AffineMap::get(3, 0, {n, k}, ctx),
                                   AffineMap::get(3, 0, {m, n}, ctx)};
    return linalg::GenericOp::create(
               b, loc, resultType, ValueRange{x, weight}, ValueRange{init},
               maps, iterators,
               [](OpBuilder &nb, Location nloc, ValueRange args) {
                 linalg::YieldOp::create(
                     nb, nloc,
                     multiplyAccumulate(nb, nloc, args[0], args[1], args[2]));
               })
        .getResult(0);
  }
  if (auto quant = dyn_cast<llm::QuantType>(storageType))
    if (quant.getFormat() == llm::QuantFormat::q8_0 ||
        quant.getFormat() == llm::QuantFormat::q4_0)
      return buildBlockMatmul(b, loc, x, weight, quant, init, resultType);
  SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                 AffineMap::get(3, 0, {m, n}, ctx)};
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{x}, ValueRange{init}, maps,
             iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value row = linalg::IndexOp::create(nb, nloc, 0);
               Value column = linalg::IndexOp::create(nb, nloc, 2);
               Value w = loadWeightElement(nb, nloc, storageType, weight,
                                           ValueRange{row}, column);
               linalg::YieldOp::create(
                   nb, nloc, multiplyAccumulate(nb, nloc, args[0], w, args[1]));
             })
      .getResult(0);
}

struct GetWeightLowering : OpConversionPattern<llm::GetWeightOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::GetWeightOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto func = op->getParentOfType<func::FuncOp>();
    if (!func || func.getNumArguments() == 0 ||
        !func.getArgAttr(0, kWeightsArgAttrName))
      return rewriter.notifyMatchFailure(op, "no weight-data argument");
    auto weight = SymbolTable::lookupNearestSymbolFrom<llm::WeightOp>(
        op, op.getNameAttr());
    if (!weight || !weight.getDataOffset())
      return op.emitOpError()
             << "refers to a weight without a data_offset; import the model "
                "from its file so weights can be bound to the mapped data";
    auto tensorType = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getResult().getType()));
    auto memrefType =
        MemRefType::get(tensorType.getShape(), tensorType.getElementType());
    Location loc = op.getLoc();
    Value offset = indexConstant(rewriter, loc,
                                 static_cast<int64_t>(*weight.getDataOffset()));
    Value view = memref::ViewOp::create(rewriter, loc, memrefType,
                                        func.getArgument(0), offset,
                                        ValueRange{});
    // The mapped file is read-only and aliases nothing the program writes.
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, tensorType, view, rewriter.getUnitAttr(), UnitAttr());
    return success();
  }
};

struct EmbeddingLowering : OpConversionPattern<llm::EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType resultType = op.getResult().getType();
    if (!resultType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 activations");
    RankedTensorType tableType = op.getTable().getType();
    Type storage = tableType.getElementType();
    Value table = adaptor.getTable();
    int64_t vocab = tableType.getDimSize(0);
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getTokens(), 0),
        rewriter.getIndexAttr(resultType.getDimSize(1))};
    Value init = tensor::EmptyOp::create(rewriter, loc, sizes,
                                         rewriter.getF32Type());
    AffineExpr t, d;
    bindDims(ctx, t, d);
    SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {t}, ctx),
                                   AffineMap::get(2, 0, {t, d}, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{adaptor.getTokens()},
        ValueRange{init}, maps,
        {utils::IteratorType::parallel, utils::IteratorType::parallel},
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          // Ids are validated by the runtime; clamping keeps a bad id from
          // ever reading outside the table.
          Value id = arith::IndexCastOp::create(b, nloc, b.getIndexType(),
                                                args[0]);
          id = arith::MaxSIOp::create(b, nloc, id, indexConstant(b, nloc, 0));
          id = arith::MinSIOp::create(b, nloc, id,
                                      indexConstant(b, nloc, vocab - 1));
          Value column = linalg::IndexOp::create(b, nloc, 1);
          Value value =
              loadWeightElement(b, nloc, storage, table, ValueRange{id}, column);
          linalg::YieldOp::create(b, nloc, value);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct MatmulLowering : OpConversionPattern<llm::MatmulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getInput().getType().getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 activations");
    RankedTensorType weightType = op.getWeight().getType();
    Value result = buildMatmul(rewriter, op.getLoc(), adaptor.getInput(),
                               adaptor.getWeight(), weightType.getElementType(),
                               weightType.getDimSize(0));
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LogitsLowering : OpConversionPattern<llm::LogitsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::LogitsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (!op.getHidden().getType().getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "only f32 activations");
    Value hidden = adaptor.getHidden();
    int64_t dim = op.getHidden().getType().getDimSize(1);
    if (!op.getAllTokens()) {
      // Decoding needs the last token's logits only.
      Value rows = tensor::DimOp::create(rewriter, loc, hidden, 0);
      Value last = arith::SubIOp::create(rewriter, loc, rows,
                                         indexConstant(rewriter, loc, 1));
      SmallVector<OpFoldResult> offsets = {last, rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(1),
                                         rewriter.getIndexAttr(dim)};
      SmallVector<OpFoldResult> strides = {rewriter.getIndexAttr(1),
                                           rewriter.getIndexAttr(1)};
      hidden = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get({1, dim}, rewriter.getF32Type()),
          hidden, offsets, sizes, strides);
    }
    RankedTensorType outputType = op.getOutput().getType();
    Value logits =
        buildMatmul(rewriter, loc, hidden, adaptor.getOutput(),
                    outputType.getElementType(), outputType.getDimSize(0));
    if (std::optional<APFloat> cap = op.getSoftcap()) {
      double c = cap->convertToDouble();
      auto type = cast<RankedTensorType>(logits.getType());
      AffineMap identity = identityMap(rewriter.getContext(), 2);
      logits =
          linalg::GenericOp::create(
              rewriter, loc, type, ValueRange{}, ValueRange{logits},
              SmallVector<AffineMap>{identity},
              {utils::IteratorType::parallel, utils::IteratorType::parallel},
              [&](OpBuilder &b, Location nloc, ValueRange args) {
                Value scaled =
                    arith::MulFOp::create(b, nloc, args[0], f32Constant(b, nloc, 1.0 / c));
                Value capped = math::TanhOp::create(b, nloc, scaled);
                linalg::YieldOp::create(
                    b, nloc,
                    arith::MulFOp::create(b, nloc, capped, f32Constant(b, nloc, c))
                        .getResult());
              })
              .getResult(0);
    }
    if (logits.getType() != op.getResult().getType())
      logits = tensor::CastOp::create(rewriter, loc, op.getResult().getType(),
                                      logits);
    rewriter.replaceOp(op, logits);
    return success();
  }
};

} // namespace

void populateLLMToLinalgMatmulPatterns(const TypeConverter &converter,
                                       RewritePatternSet &patterns) {
  patterns.add<GetWeightLowering, EmbeddingLowering, MatmulLowering,
               LogitsLowering>(converter, patterns.getContext());
}

} // namespace hetc::conversion
