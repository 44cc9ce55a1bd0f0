// convert-llm-to-linalg: the type converter, the conversion target and the
// weight-data argument; the patterns live in the per-family files.
#include "Patterns.h"

#include "passes/conversion/Passes.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "convert-llm-to-linalg"

namespace hetc::conversion {
#define GEN_PASS_DEF_CONVERTLLMTOLINALGPASS
#include "passes/conversion/Passes.h.inc"
} // namespace hetc::conversion

using namespace mlir;

namespace hetc::conversion {

LLMToLinalgTypeConverter::LLMToLinalgTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](RankedTensorType type) -> Type {
    auto quant = dyn_cast<llm::QuantType>(type.getElementType());
    if (!quant || type.getRank() == 0)
      return type;
    // Each innermost row becomes its stored bytes.
    SmallVector<int64_t> shape(type.getShape());
    int64_t columns = shape.back();
    shape.back() = ShapedType::isDynamic(columns)
                       ? ShapedType::kDynamic
                       : columns / quant.getBlockSize() * quant.getBytesPerBlock();
    return RankedTensorType::get(shape, IntegerType::get(type.getContext(), 8));
  });
  // Head-major: a head's keys (and values) are one contiguous run, so
  // attention streams them front to back instead of taking a headDim-sized
  // piece of every position's row.
  addConversion([](llm::KVCacheType type) -> Type {
    return RankedTensorType::get(
        {2, type.getKvHeads(), type.getCapacity(), type.getHeadDim()},
        type.getElementType());
  });
}

namespace {

struct ConvertLLMToLinalgPass
    : impl::ConvertLLMToLinalgPassBase<ConvertLLMToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // Functions that use weights take the mapped data as a leading argument.
    auto weightsType = MemRefType::get({ShapedType::kDynamic},
                                       IntegerType::get(ctx, 8));
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !usesWeights(func))
        continue;
      if (func.getNumArguments() > 0 &&
          func.getArgAttr(0, kWeightsArgAttrName))
        continue;
      if (failed(func.insertArgument(
              0, weightsType,
              DictionaryAttr::get(
                  ctx, {NamedAttribute(StringAttr::get(ctx, kWeightsArgAttrName),
                                       UnitAttr::get(ctx))}),
              func.getLoc())))
        return signalPassFailure();
    }

    LLMToLinalgTypeConverter converter;
    ConversionTarget target(*ctx);
    target.addIllegalDialect<llm::LLMDialect>();
    // Declarations are removed after the references are lowered.
    target.addLegalOp<llm::WeightOp>();
    target.addLegalDialect<arith::ArithDialect, bufferization::BufferizationDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateLLMToLinalgMatmulPatterns(converter, patterns);
    populateLLMToLinalgAttentionPatterns(converter, patterns);
    populateLLMToLinalgElementwisePatterns(converter, patterns);
    // Expand/collapse/slice of converted tensors keep their (f32) types.
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // Every reference now views the mapped data directly; the declarations
    // have nothing left to describe.
    for (auto weight : llvm::make_early_inc_range(module.getOps<llm::WeightOp>()))
      weight.erase();
  }

  static bool usesWeights(func::FuncOp func) {
    return func
        .walk([](llm::GetWeightOp) { return WalkResult::interrupt(); })
        .wasInterrupted();
  }
};

} // namespace
} // namespace hetc::conversion
