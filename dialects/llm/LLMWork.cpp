// WorkOpInterface of every llm op: FLOPs and bytes moved for the cost model.
// Counts follow the straightforward algorithm (an FMA is 2 FLOPs, every operand
// read once, every result written once); weights count their stored bytes.
#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMShapes.h"

#include <algorithm>

using namespace mlir;
using namespace hetc::llm;

namespace {
int64_t bytesOf(Value value, const WorkContext &context) {
  return getTensorBytes(cast<ShapedType>(value.getType()), context.numTokens);
}

int64_t elementsOf(Value value, const WorkContext &context) {
  return getNumElements(cast<ShapedType>(value.getType()), context.numTokens);
}

/// An elementwise op doing `flopsPerElement` operations per result element.
OpWork elementwiseWork(Operation *op, int64_t flopsPerElement,
                       const WorkContext &context) {
  OpWork work;
  work.flops = flopsPerElement * elementsOf(op->getResult(0), context);
  for (Value operand : op->getOperands())
    work.bytesRead += bytesOf(operand, context);
  work.bytesWritten = bytesOf(op->getResult(0), context);
  return work;
}

/// `rows` activation rows of length K times an [N, K] weight.
OpWork matrixWork(int64_t rows, RankedTensorType activation,
                  RankedTensorType weight, RankedTensorType result,
                  const WorkContext &context) {
  int64_t outFeatures = weight.getDimSize(weight.getRank() - 2);
  int64_t inFeatures = weight.getShape().back();
  OpWork work;
  work.flops = 2 * rows * outFeatures * inFeatures;
  work.weightBytesRead = getTensorBytes(weight, context.numTokens);
  work.bytesRead = work.weightBytesRead +
                   rows * getStorageBytes(activation.getElementType(),
                                          inFeatures)
                              .value_or(0);
  work.bytesWritten = getTensorBytes(result, context.numTokens);
  return work;
}
} // namespace

OpWork WeightOp::getWork(const WorkContext &) { return {}; }
OpWork GetWeightOp::getWork(const WorkContext &) { return {}; }

OpWork EmbeddingOp::getWork(const WorkContext &context) {
  int64_t numTokens = elementsOf(getTokens(), context);
  OpWork work;
  // Dequantizing a gathered row is one multiply per element.
  work.flops = elementsOf(getResult(), context);
  work.weightBytesRead = numTokens * getRowBytes(getTable().getType());
  work.bytesRead = work.weightBytesRead + bytesOf(getTokens(), context);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}

// Square, accumulate, scale, multiply by the weight.
OpWork RMSNormOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 4, context);
}

// Mean, subtract, square, accumulate, scale, weight, bias.
OpWork LayerNormOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 7, context);
}

OpWork AddOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 1, context);
}

OpWork ScaleOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 1, context);
}

OpWork BiasAddOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 1, context);
}

// x * 1 / (1 + exp(-x)): negate, exp, add, divide, multiply.
OpWork SiLUOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 5, context);
}

// The tanh form: cube, fma, scale, tanh, add, two multiplies; erf costs alike.
OpWork GELUOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 8, context);
}

OpWork GLUOp::getWork(const WorkContext &context) {
  int64_t activationFlops =
      getActivation() == GatedActivation::silu ? 5 : 8;
  return elementwiseWork(*this, activationFlops + 1, context);
}

// Max, subtract, exp, accumulate, divide.
OpWork SoftmaxOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 5, context);
}

OpWork MatmulOp::getWork(const WorkContext &context) {
  int64_t rows = resolveDim(getInput().getType().getDimSize(0),
                            context.numTokens);
  return matrixWork(rows, getInput().getType(), getWeight().getType(),
                    getResult().getType(), context);
}

OpWork QuantizeOp::getWork(const WorkContext &context) {
  // Absolute maximum, then a scale and a round per element.
  return elementwiseWork(*this, 3, context);
}

OpWork DequantizeOp::getWork(const WorkContext &context) {
  return elementwiseWork(*this, 1, context);
}

OpWork RoPEOp::getWork(const WorkContext &context) {
  RankedTensorType input = getInput().getType();
  int64_t rotatedPairs = resolveDim(input.getDimSize(0), context.numTokens) *
                         resolveDim(input.getDimSize(1), context.numTokens) *
                         static_cast<int64_t>(getRotaryDim()) / 2;
  OpWork work;
  // Per pair: four multiplies, an add and a subtract (angles are tabulated).
  work.flops = 6 * rotatedPairs;
  work.bytesRead = bytesOf(getInput(), context) +
                   bytesOf(getPositions(), context) +
                   (getFreqFactors() ? bytesOf(getFreqFactors(), context) : 0);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}

OpWork KVAppendOp::getWork(const WorkContext &context) {
  int64_t numTokens =
      resolveDim(getKeys().getType().getDimSize(0), context.numTokens);
  OpWork work;
  KVCacheType cache = getCache().getType();
  if (isa<QuantType>(cache.getElementType()))
    work.flops = 3 * 2 * elementsOf(getKeys(), context);
  work.bytesRead = bytesOf(getKeys(), context) + bytesOf(getValues(), context) +
                   bytesOf(getPositions(), context);
  work.bytesWritten = cache.getBytesForPositions(numTokens);
  return work;
}

OpWork AttentionOp::getWork(const WorkContext &context) {
  RankedTensorType query = getQuery().getType();
  int64_t numTokens = resolveDim(query.getDimSize(0), context.numTokens);
  int64_t numHeads = resolveDim(query.getDimSize(1), context.numTokens);
  int64_t headDim = resolveDim(query.getDimSize(2), context.numTokens);
  int64_t contextLength = std::max(context.contextLength, numTokens);
  int64_t window = getWindow() ? static_cast<int64_t>(*getWindow())
                               : contextLength;
  // Keys each query scores: causal queries see the positions up to their own
  // (the new tokens are the last `numTokens` positions), bounded by the window.
  int64_t scoredKeys = 0;
  int64_t firstQueryPosition = contextLength - numTokens;
  for (int64_t t = 0; t < numTokens; ++t) {
    int64_t visible =
        getCausal() ? firstQueryPosition + t + 1 : contextLength;
    scoredKeys += std::min(visible, window);
  }
  // Positions any query reads: the last `window` before the first query and
  // everything after it.
  int64_t readPositions =
      std::min(contextLength,
               getWindow() ? window + numTokens - 1 : contextLength);
  OpWork work;
  // q·k and p·v are 2·headDim each; the softmax about 5 per score.
  work.flops = scoredKeys * numHeads * (4 * headDim + 5);
  work.bytesRead = bytesOf(getQuery(), context) +
                   bytesOf(getPositions(), context) +
                   getCache().getType().getBytesForPositions(readPositions);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}

OpWork MoERouterOp::getWork(const WorkContext &context) {
  OpWork work;
  // Softmax over the experts, then a top-k selection pass per selected expert.
  int64_t scores = elementsOf(getLogits(), context);
  work.flops = scores * (5 + static_cast<int64_t>(getTopK()));
  work.bytesRead = bytesOf(getLogits(), context);
  work.bytesWritten =
      bytesOf(getWeights(), context) + bytesOf(getIndices(), context);
  return work;
}

OpWork ExpertMatmulOp::getWork(const WorkContext &context) {
  RankedTensorType weight = getWeight().getType();
  RankedTensorType indices = getIndices().getType();
  int64_t numTokens = resolveDim(indices.getDimSize(0), context.numTokens);
  int64_t topK = resolveDim(indices.getDimSize(1), context.numTokens);
  int64_t numExperts = weight.getDimSize(0);
  int64_t outFeatures = weight.getDimSize(1);
  int64_t inFeatures = weight.getDimSize(2);
  // At most one read of each expert's matrix, and never more experts than the
  // tokens selected.
  int64_t expertsTouched = std::min(numExperts, numTokens * topK);
  OpWork work;
  work.flops = 2 * numTokens * topK * outFeatures * inFeatures;
  work.weightBytesRead = expertsTouched * outFeatures *
                         getStorageBytes(weight.getElementType(), inFeatures)
                             .value_or(0);
  work.bytesRead = work.weightBytesRead + bytesOf(getInput(), context) +
                   bytesOf(getIndices(), context);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}

OpWork MoECombineOp::getWork(const WorkContext &context) {
  OpWork work;
  work.flops = 2 * elementsOf(getExpertOut(), context);
  work.bytesRead =
      bytesOf(getExpertOut(), context) + bytesOf(getWeights(), context);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}

OpWork LogitsOp::getWork(const WorkContext &context) {
  RankedTensorType result = getResult().getType();
  int64_t rows = resolveDim(result.getDimSize(0), context.numTokens);
  OpWork work = matrixWork(rows, getHidden().getType(), getOutput().getType(),
                           result, context);
  if (getSoftcap())
    work.flops += 3 * getNumElements(result, context.numTokens);
  return work;
}

OpWork SampleOp::getWork(const WorkContext &context) {
  OpWork work;
  // Penalty, temperature, a selection pass and a softmax over the vocabulary.
  work.flops = 8 * elementsOf(getLogits(), context);
  work.bytesRead = bytesOf(getLogits(), context) +
                   (getHistory() ? bytesOf(getHistory(), context) : 0);
  work.bytesWritten = bytesOf(getResult(), context);
  return work;
}
