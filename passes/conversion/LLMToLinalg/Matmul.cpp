// llm → linalg for the ops that read weight matrices: get_weight, embedding,
// matmul and logits.
#include "Patterns.h"

#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace hetc::conversion {

namespace {

using utils::IteratorType;

/// `x · wᵀ` for activations `x` [M, K] (f32) and a weight [N, K] stored as
/// `storageType` (converted value `weight`), into a new [M, N] f32 tensor: one
/// dot product per output element, the weight decoded element by element.
/// This portable form is tagged with the weight's storage type
/// (`llm.matmul_weight`) so a target may replace it with a blocking of its
/// own (the x86 target's is hetc-x86-block-matmuls).
Value buildMatmul(OpBuilder &b, Location loc, Value x, Value weight,
                  Type storageType, int64_t outFeatures) {
  MLIRContext *ctx = b.getContext();
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, x, 0),
                                     b.getIndexAttr(outFeatures)};
  Value init = createFilled(b, loc, sizes, b.getF32Type(), 0.0);
  // Loops run (n, m, k): each weight row is read from memory once and stays
  // in cache while every activation row of a prefill passes over it.
  AffineExpr n, m, k;
  bindDims(ctx, n, m, k);
  auto resultType =
      RankedTensorType::get({cast<RankedTensorType>(x.getType()).getDimSize(0),
                             outFeatures},
                            b.getF32Type());
  SmallVector<IteratorType> iterators = {
      IteratorType::parallel, IteratorType::parallel, IteratorType::reduction};
  linalg::GenericOp generic;
  if (!isa<llm::QuantType>(storageType)) {
    // Float weights are a regular operand, so later tiling sees their accesses.
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                   AffineMap::get(3, 0, {n, k}, ctx),
                                   AffineMap::get(3, 0, {m, n}, ctx)};
    generic = linalg::GenericOp::create(
        b, loc, resultType, ValueRange{x, weight}, ValueRange{init}, maps,
        iterators, [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(
              nb, nloc, multiplyAccumulate(nb, nloc, args[0], args[1], args[2]));
        });
  } else {
    SmallVector<AffineMap> maps = {AffineMap::get(3, 0, {m, k}, ctx),
                                   AffineMap::get(3, 0, {m, n}, ctx)};
    generic = linalg::GenericOp::create(
        b, loc, resultType, ValueRange{x}, ValueRange{init}, maps, iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          Value row = linalg::IndexOp::create(nb, nloc, 0);
          Value column = linalg::IndexOp::create(nb, nloc, 2);
          Value w = loadWeightElement(nb, nloc, storageType, weight,
                                      ValueRange{row}, column);
          linalg::YieldOp::create(
              nb, nloc, multiplyAccumulate(nb, nloc, args[0], w, args[1]));
        });
  }
  generic->setAttr(llm::kMatmulWeightAttrName, TypeAttr::get(storageType));
  return generic.getResult(0);
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
