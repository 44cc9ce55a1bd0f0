// llm → linalg for norms, activations, residual adds, scale and softmax: maps
// over every element, with reductions along the innermost dimension.
#include "Patterns.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;

namespace hetc::conversion {

namespace {

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

/// Loop iterators: all parallel, or the innermost a reduction.
SmallVector<utils::IteratorType> iterators(unsigned rank, bool reduceInner) {
  SmallVector<utils::IteratorType> result(rank, utils::IteratorType::parallel);
  if (reduceInner)
    result.back() = utils::IteratorType::reduction;
  return result;
}

/// The map from `rank` loops to all but the innermost.
AffineMap outerMap(MLIRContext *ctx, unsigned rank) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i + 1 < rank; ++i)
    exprs.push_back(getAffineDimExpr(i, ctx));
  return AffineMap::get(rank, 0, exprs, ctx);
}

/// The map from `rank` loops to the innermost only.
AffineMap innerMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
}

/// A map over the shape of `like` computing `body` from `inputs` (read through
/// `inputMaps`).
Value mapElements(OpBuilder &b, Location loc, Value like, ValueRange inputs,
                  ArrayRef<AffineMap> inputMaps, BodyFn body) {
  auto type = cast<RankedTensorType>(like.getType());
  unsigned rank = type.getRank();
  Value init = tensor::EmptyOp::create(b, loc, getMixedSizes(b, loc, like),
                                       type.getElementType());
  SmallVector<AffineMap> maps(inputMaps.begin(), inputMaps.end());
  maps.push_back(identityMap(b.getContext(), rank));
  return linalg::GenericOp::create(
             b, loc, type, inputs, ValueRange{init}, maps,
             iterators(rank, false),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       body(nb, nloc, args.drop_back()));
             })
      .getResult(0);
}

/// Reduces the innermost dimension of `input` with `combine`, starting from
/// `initial`, in `accumulatorType`.
Value reduceInner(OpBuilder &b, Location loc, Value input,
                  Type accumulatorType, double initial,
                  function_ref<Value(OpBuilder &, Location, Value, Value)>
                      combine) {
  auto type = cast<RankedTensorType>(input.getType());
  unsigned rank = type.getRank();
  SmallVector<OpFoldResult> sizes = getMixedSizes(b, loc, input);
  sizes.pop_back();
  Value init = createFilled(b, loc, sizes, accumulatorType, initial);
  SmallVector<int64_t> shape(type.getShape().drop_back());
  auto resultType = RankedTensorType::get(shape, accumulatorType);
  SmallVector<AffineMap> maps = {identityMap(b.getContext(), rank),
                                 outerMap(b.getContext(), rank)};
  return linalg::GenericOp::create(
             b, loc, resultType, ValueRange{input}, ValueRange{init}, maps,
             iterators(rank, true),
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc,
                                       combine(nb, nloc, args[0], args[1]));
             })
      .getResult(0);
}

/// The f32 sum of the innermost dimension of `input`.
Value sumInner(OpBuilder &b, Location loc, Value input) {
  return reduceInner(b, loc, input, b.getF32Type(), 0.0,
                     [](OpBuilder &nb, Location l, Value element, Value acc) {
                       return arith::AddFOp::create(nb, l, acc, element)
                           .getResult();
                     });
}

Value silu(OpBuilder &b, Location loc, Value x) {
  // x / (1 + exp(-x)), as ggml computes it.
  Value negated = arith::NegFOp::create(b, loc, x);
  Value denominator = arith::AddFOp::create(
      b, loc, f32Constant(b, loc, 1.0), math::ExpOp::create(b, loc, negated));
  return arith::DivFOp::create(b, loc, x, denominator);
}

Value gelu(OpBuilder &b, Location loc, Value x, bool tanhForm) {
  Value half = f32Constant(b, loc, 0.5);
  Value one = f32Constant(b, loc, 1.0);
  Value inner;
  if (tanhForm) {
    Value cube = arith::MulFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value poly = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, f32Constant(b, loc, 0.044715), cube));
    inner = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(b, loc,
                              f32Constant(b, loc, std::sqrt(2.0 / M_PI)),
                              poly));
  } else {
    inner = math::ErfOp::create(
        b, loc,
        arith::MulFOp::create(b, loc, x, f32Constant(b, loc, M_SQRT1_2)));
  }
  return arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, half, x),
      arith::AddFOp::create(b, loc, one, inner));
}

template <typename OpTy>
LogicalResult requireF32(OpTy op, ConversionPatternRewriter &rewriter) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (!type.getElementType().isF32())
    return rewriter.notifyMatchFailure(op, "only f32 activations");
  return success();
}

struct RMSNormLowering : OpConversionPattern<llm::RMSNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requireF32(op, rewriter)))
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    auto type = op.getInput().getType();
    unsigned rank = type.getRank();
    double count = static_cast<double>(type.getShape().back());
    // Sum of squares in f64, as ggml accumulates it.
    Value sumSquares = reduceInner(
        rewriter, loc, x, rewriter.getF64Type(), 0.0,
        [](OpBuilder &b, Location l, Value element, Value acc) {
          Value wide = arith::ExtFOp::create(b, l, b.getF64Type(), element);
          Value square = arith::MulFOp::create(b, l, wide, wide);
          return arith::AddFOp::create(b, l, acc, square).getResult();
        });
    double epsilon = op.getEpsilon().convertToDouble();
    bool unitOffset = op.getUnitOffset();
    Value result = mapElements(
        rewriter, loc, x, ValueRange{x, sumSquares, adaptor.getWeight()},
        {identityMap(ctx, rank), outerMap(ctx, rank), innerMap(ctx, rank)},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value mean = arith::DivFOp::create(
              b, l, args[1],
              arith::ConstantOp::create(b, l, b.getF64FloatAttr(count)));
          Value mean32 = arith::TruncFOp::create(b, l, b.getF32Type(), mean);
          Value denominator = math::SqrtOp::create(
              b, l, arith::AddFOp::create(b, l, mean32,
                                          f32Constant(b, l, epsilon)));
          Value scale =
              arith::DivFOp::create(b, l, f32Constant(b, l, 1.0), denominator);
          Value weight = args[2];
          if (unitOffset)
            weight = arith::AddFOp::create(b, l, weight, f32Constant(b, l, 1.0));
          Value normalized = arith::MulFOp::create(b, l, args[0], scale);
          return arith::MulFOp::create(b, l, normalized, weight).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LayerNormLowering : OpConversionPattern<llm::LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requireF32(op, rewriter)))
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    unsigned rank = op.getInput().getType().getRank();
    double count = static_cast<double>(op.getInput().getType().getShape().back());
    Value sum = sumInner(rewriter, loc, x);
    Value centered = mapElements(
        rewriter, loc, x, ValueRange{x, sum},
        {identityMap(ctx, rank), outerMap(ctx, rank)},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value mean =
              arith::DivFOp::create(b, l, args[1], f32Constant(b, l, count));
          return arith::SubFOp::create(b, l, args[0], mean).getResult();
        });
    Value variance = reduceInner(
        rewriter, loc, centered, rewriter.getF32Type(), 0.0,
        [](OpBuilder &b, Location l, Value e, Value acc) {
          return arith::AddFOp::create(b, l, acc,
                                       arith::MulFOp::create(b, l, e, e))
              .getResult();
        });
    SmallVector<Value> inputs = {centered, variance, adaptor.getWeight()};
    SmallVector<AffineMap> maps = {identityMap(ctx, rank), outerMap(ctx, rank),
                                   innerMap(ctx, rank)};
    if (Value bias = adaptor.getBias()) {
      inputs.push_back(bias);
      maps.push_back(innerMap(ctx, rank));
    }
    double epsilon = op.getEpsilon().convertToDouble();
    Value result = mapElements(
        rewriter, loc, x, inputs, maps,
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value var =
              arith::DivFOp::create(b, l, args[1], f32Constant(b, l, count));
          Value scale = arith::DivFOp::create(
              b, l, f32Constant(b, l, 1.0),
              math::SqrtOp::create(
                  b, l,
                  arith::AddFOp::create(b, l, var, f32Constant(b, l, epsilon))));
          Value y = arith::MulFOp::create(
              b, l, arith::MulFOp::create(b, l, args[0], scale), args[2]);
          if (args.size() > 3)
            y = arith::AddFOp::create(b, l, y, args[3]);
          return y;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Ops computed element by element from same-shaped operands.
template <typename OpTy>
struct ElementwiseLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OpAdaptor = typename OpTy::Adaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requireF32(op, rewriter)))
      return failure();
    ValueRange operands = adaptor.getOperands();
    unsigned rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    SmallVector<AffineMap> maps(operands.size(),
                                identityMap(rewriter.getContext(), rank));
    Value result = mapElements(
        rewriter, op.getLoc(), operands[0], operands, maps,
        [&](OpBuilder &b, Location l, ValueRange args) {
          return compute(op, b, l, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }

  static Value compute(llm::AddOp, OpBuilder &b, Location l, ValueRange args) {
    return arith::AddFOp::create(b, l, args[0], args[1]);
  }
  static Value compute(llm::ScaleOp op, OpBuilder &b, Location l,
                       ValueRange args) {
    return arith::MulFOp::create(
        b, l, args[0], f32Constant(b, l, op.getFactor().convertToDouble()));
  }
  static Value compute(llm::SiLUOp, OpBuilder &b, Location l, ValueRange args) {
    return silu(b, l, args[0]);
  }
  static Value compute(llm::GELUOp op, OpBuilder &b, Location l,
                       ValueRange args) {
    return gelu(b, l, args[0],
                op.getApproximate() == llm::GeluApproximation::tanh);
  }
  static Value compute(llm::GLUOp op, OpBuilder &b, Location l,
                       ValueRange args) {
    Value activated;
    switch (op.getActivation()) {
    case llm::GatedActivation::silu:
      activated = silu(b, l, args[0]);
      break;
    case llm::GatedActivation::gelu:
      activated = gelu(b, l, args[0], /*tanhForm=*/false);
      break;
    case llm::GatedActivation::gelu_tanh:
      activated = gelu(b, l, args[0], /*tanhForm=*/true);
      break;
    }
    return arith::MulFOp::create(b, l, activated, args[1]);
  }
};

struct BiasAddLowering : OpConversionPattern<llm::BiasAddOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::BiasAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requireF32(op, rewriter)))
      return failure();
    MLIRContext *ctx = rewriter.getContext();
    unsigned rank = op.getInput().getType().getRank();
    Value result = mapElements(
        rewriter, op.getLoc(), adaptor.getInput(),
        ValueRange{adaptor.getInput(), adaptor.getBias()},
        {identityMap(ctx, rank), innerMap(ctx, rank)},
        [](OpBuilder &b, Location l, ValueRange args) {
          return arith::AddFOp::create(b, l, args[0], args[1]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxLowering : OpConversionPattern<llm::SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(llm::SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (failed(requireF32(op, rewriter)))
      return failure();
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput();
    unsigned rank = op.getInput().getType().getRank();
    Value max = reduceInner(rewriter, loc, x, rewriter.getF32Type(),
                            -INFINITY,
                            [](OpBuilder &b, Location l, Value e, Value acc) {
                              return arith::MaximumFOp::create(b, l, acc, e)
                                  .getResult();
                            });
    Value exps = mapElements(
        rewriter, loc, x, ValueRange{x, max},
        {identityMap(ctx, rank), outerMap(ctx, rank)},
        [](OpBuilder &b, Location l, ValueRange args) {
          return math::ExpOp::create(
                     b, l, arith::SubFOp::create(b, l, args[0], args[1]))
              .getResult();
        });
    Value sum = sumInner(rewriter, loc, exps);
    Value result = mapElements(
        rewriter, loc, x, ValueRange{exps, sum},
        {identityMap(ctx, rank), outerMap(ctx, rank)},
        [](OpBuilder &b, Location l, ValueRange args) {
          return arith::DivFOp::create(b, l, args[0], args[1]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateLLMToLinalgElementwisePatterns(const TypeConverter &converter,
                                            RewritePatternSet &patterns) {
  patterns.add<RMSNormLowering, LayerNormLowering, BiasAddLowering,
               SoftmaxLowering, ElementwiseLowering<llm::AddOp>,
               ElementwiseLowering<llm::ScaleOp>,
               ElementwiseLowering<llm::SiLUOp>,
               ElementwiseLowering<llm::GELUOp>,
               ElementwiseLowering<llm::GLUOp>>(converter,
                                                patterns.getContext());
}

} // namespace hetc::conversion
