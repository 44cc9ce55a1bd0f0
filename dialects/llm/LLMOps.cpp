// Verifiers of the llm ops. Each check names the rule (C1, C2, ...) documented in
// the op's description in LLMOps.td.
#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace hetc::llm;

namespace {
/// Checks the rule shared by norms and bias: a 1-D parameter vector that matches
/// the innermost dimension of the input.
LogicalResult verifyFeatureVector(Operation *op, StringRef what,
                                  RankedTensorType vector,
                                  RankedTensorType input) {
  if (failed(verifyRank(op, what, vector, 1)))
    return failure();
  if (input.getRank() == 0)
    return op->emitOpError() << "expects input to have rank at least 1";
  return verifyDim(op, what, vector, 0, "the innermost dimension of input",
                   input.getShape().back());
}

LogicalResult verifyPositive(Operation *op, StringRef what, double value) {
  if (value > 0 && std::isfinite(value))
    return success();
  return op->emitOpError() << "expects " << what
                           << " to be positive and finite, got " << value;
}
} // namespace

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  RankedTensorType type = getTensorType();
  // C1
  if (!type.hasStaticShape())
    return emitOpError() << "expects a static shape for weight @"
                         << getSymName() << ", got " << type;
  // C2
  if (failed(verifyBlockAligned(*this, "weight", type)))
    return failure();
  // C3
  if (std::optional<uint64_t> offset = getDataOffset())
    if (static_cast<int64_t>(*offset) < 0)
      return emitOpError() << "expects data_offset to be non-negative, got "
                           << static_cast<int64_t>(*offset);
  return success();
}

LogicalResult
GetWeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // C1
  auto weight =
      symbolTable.lookupNearestSymbolFrom<WeightOp>(*this, getNameAttr());
  if (!weight)
    return emitOpError() << "expects @" << getName()
                         << " to name an llm.weight op";
  // C2
  return verifySameType(*this, "result", getResult().getType(),
                        "the declared weight", weight.getType());
}

//===----------------------------------------------------------------------===//
// Embedding, norms, elementwise
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  RankedTensorType tokens = getTokens().getType();
  RankedTensorType table = getTable().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "tokens", tokens, 1)) ||   // C1
      failed(verifyRank(*this, "table", table, 2)) ||     // C2
      failed(verifyBlockAligned(*this, "table", table)) || // C3
      failed(verifyRank(*this, "result", result, 2)))     // C4
    return failure();
  if (failed(verifyDim(*this, "result", result, 0, "the token count",
                       tokens.getDimSize(0))))
    return failure();
  return verifyDim(*this, "result", result, 1, "the table row length",
                   table.getDimSize(1));
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyFeatureVector(*this, "weight", getWeight().getType(),
                                 getInput().getType()))) // C1
    return failure();
  if (failed(verifySameType(*this, "result", getResult().getType(), "input",
                            getInput().getType()))) // C2
    return failure();
  return verifyPositive(*this, "epsilon", getEpsilon().convertToDouble()); // C3
}

LogicalResult LayerNormOp::verify() {
  if (failed(verifyFeatureVector(*this, "weight", getWeight().getType(),
                                 getInput().getType()))) // C1
    return failure();
  if (failed(verifySameType(*this, "result", getResult().getType(), "input",
                            getInput().getType()))) // C2
    return failure();
  if (failed(verifyPositive(*this, "epsilon",
                            getEpsilon().convertToDouble()))) // C3
    return failure();
  if (Value bias = getBias()) // C4
    return verifySameType(*this, "bias", bias.getType(), "weight",
                          getWeight().getType());
  return success();
}

LogicalResult ScaleOp::verify() {
  // C2 (C1 is the SameOperandsAndResultType trait)
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor))
    return emitOpError() << "expects factor to be finite, got " << factor;
  return success();
}

LogicalResult BiasAddOp::verify() {
  if (failed(verifyFeatureVector(*this, "bias", getBias().getType(),
                                 getInput().getType()))) // C1
    return failure();
  return verifySameType(*this, "result", getResult().getType(), "input",
                        getInput().getType()); // C2
}

LogicalResult SoftmaxOp::verify() {
  // C2 (C1 is the SameOperandsAndResultType trait)
  if (getInput().getType().getRank() < 1)
    return emitOpError() << "expects input to have rank at least 1";
  return success();
}

//===----------------------------------------------------------------------===//
// Matmuls and quantization
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType weight = getWeight().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "input", input, 2)) || // C1
      failed(verifyRank(*this, "weight", weight, 2)))
    return failure();
  if (!areDimsCompatible(input.getDimSize(1), weight.getDimSize(1))) // C2
    return emitOpError() << "expects the inner dimension of input ("
                         << formatDim(input.getDimSize(1))
                         << ") to equal the inner dimension of weight ("
                         << formatDim(weight.getDimSize(1)) << ")";
  if (failed(verifyBlockAligned(*this, "weight", weight))) // C3
    return failure();
  if (failed(verifyRank(*this, "result", result, 2)) || // C4
      failed(verifyDim(*this, "result", result, 0, "the rows of input",
                       input.getDimSize(0))))
    return failure();
  return verifyDim(*this, "result", result, 1, "the rows of weight",
                   weight.getDimSize(0));
}

/// The rules of quantize and dequantize: one shape, whole blocks.
static LogicalResult verifyQuantConversion(Operation *op,
                                           RankedTensorType floatType,
                                           RankedTensorType quantType) {
  if (floatType.getShape() != quantType.getShape()) // C1
    return op->emitOpError()
           << "expects operand and result to have the same shape, got "
           << op->getOperand(0).getType() << " and "
           << op->getResult(0).getType();
  return verifyBlockAligned(op, "the quantized tensor", quantType); // C2
}

LogicalResult QuantizeOp::verify() {
  return verifyQuantConversion(*this, getInput().getType(),
                               getResult().getType());
}

LogicalResult DequantizeOp::verify() {
  return verifyQuantConversion(*this, getResult().getType(),
                               getInput().getType());
}

//===----------------------------------------------------------------------===//
// Positions, attention and the KV cache
//===----------------------------------------------------------------------===//

/// Rule shared by rope, kv_append and attention: one position per token.
static LogicalResult verifyPositions(Operation *op, RankedTensorType positions,
                                     int64_t numTokens, StringRef tokensWhat) {
  if (failed(verifyRank(op, "positions", positions, 1)))
    return failure();
  return verifyDim(op, "positions", positions, 0, tokensWhat, numTokens);
}

/// A paged cache's block table and block size: both or neither, the table
/// 1-D (one sequence) or 2-D with a row per token (a sequence per token),
/// the size positive and a divisor of the pool's slots.
static LogicalResult verifyPages(Operation *op, Value blocks,
                                 std::optional<uint64_t> blockSize,
                                 KVCacheType cache, int64_t numTokens) {
  if (!blocks && !blockSize)
    return success();
  if (!blocks || !blockSize)
    return op->emitOpError()
           << "expects a block table (pages) and block_size together";
  auto table = cast<RankedTensorType>(blocks.getType());
  if (table.getRank() != 1 &&
      (failed(verifyRank(op, "blocks", table, 2)) ||
       failed(verifyDim(op, "blocks", table, 0, "the token count",
                        numTokens))))
    return failure();
  auto size = static_cast<int64_t>(*blockSize);
  if (size <= 0 || cache.getCapacity() % size != 0)
    return op->emitOpError()
           << "expects block_size (" << size
           << ") to be positive and divide the cache's capacity ("
           << cache.getCapacity() << ")";
  return success();
}

LogicalResult RoPEOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(verifyRank(*this, "input", input, 3))) // C1
    return failure();
  if (failed(verifyPositions(*this, getPositions().getType(),
                             input.getDimSize(0),
                             "the token count of input"))) // C2
    return failure();
  int64_t rotaryDim = getRotaryDim();
  int64_t headDim = input.getDimSize(2);
  if (rotaryDim <= 0 || rotaryDim % 2 != 0) // C3
    return emitOpError() << "expects rotary_dim (" << rotaryDim
                         << ") to be even and positive";
  if (!ShapedType::isDynamic(headDim) && rotaryDim > headDim)
    return emitOpError() << "expects rotary_dim (" << rotaryDim
                         << ") to be at most head_dim (" << headDim << ")";
  if (failed(verifyPositive(*this, "theta",
                            getTheta().convertToDouble()))) // C4
    return failure();
  if (Value factors = getFreqFactors()) { // C5
    auto factorsType = cast<RankedTensorType>(factors.getType());
    if (failed(verifyRank(*this, "freq_factors", factorsType, 1)) ||
        failed(verifyDim(*this, "freq_factors", factorsType, 0,
                         "rotary_dim / 2", rotaryDim / 2)))
      return failure();
  }
  if (getScaling().has_value() != getScalingFactor().has_value()) // C6
    return emitOpError()
           << "expects scaling and scaling_factor to be given together";
  if (auto factor = getScalingFactor())
    if (failed(verifyPositive(*this, "scaling_factor",
                              factor->convertToDouble())))
      return failure();
  if (getScaling() == RopeScaling::yarn) { // C7
    std::optional<uint64_t> original = getOriginalContext();
    if (!original || static_cast<int64_t>(*original) <= 0)
      return emitOpError()
             << "expects yarn scaling to have a positive original_context";
  }
  return verifySameType(*this, "result", getResult().getType(), "input",
                        input); // C8
}

LogicalResult KVAppendOp::verify() {
  if (failed(verifySameType(*this, "values", getValues().getType(), "keys",
                            getKeys().getType()))) // C1
    return failure();
  RankedTensorType keys = getKeys().getType();
  KVCacheType cache = getCache().getType();
  if (failed(verifyRank(*this, "keys", keys, 3)) || // C2
      failed(verifyDim(*this, "keys", keys, 1, "the cache's kvHeads",
                       cache.getKvHeads())) ||
      failed(verifyDim(*this, "keys", keys, 2, "the cache's headDim",
                       cache.getHeadDim())))
    return failure();
  if (failed(verifyPositions(*this, getPositions().getType(),
                             keys.getDimSize(0),
                             "the token count of keys"))) // C3
    return failure();
  if (failed(verifySameType(*this, "result", getResult().getType(), "cache",
                            cache))) // C4
    return failure();
  return verifyPages(*this, getBlocks(), getBlockSize(), cache,
                     keys.getDimSize(0)); // C5
}

LogicalResult AttentionOp::verify() {
  RankedTensorType query = getQuery().getType();
  KVCacheType cache = getCache().getType();
  if (failed(verifyRank(*this, "query", query, 3))) // C1
    return failure();
  if (failed(verifyDim(*this, "query", query, 2, "the cache's headDim",
                       cache.getHeadDim()))) // C2
    return failure();
  int64_t numHeads = getNumHeads();
  if (!ShapedType::isDynamic(numHeads) &&
      numHeads % cache.getKvHeads() != 0) // C3
    return emitOpError() << "expects num_heads (" << numHeads
                         << ") to be a multiple of num_kv_heads ("
                         << cache.getKvHeads() << ")";
  if (failed(verifyPositions(*this, getPositions().getType(),
                             query.getDimSize(0),
                             "the token count of query"))) // C4
    return failure();
  if (std::optional<uint64_t> window = getWindow()) // C5
    if (static_cast<int64_t>(*window) <= 0)
      return emitOpError() << "expects window to be positive, got "
                           << static_cast<int64_t>(*window);
  if (auto scale = getScale()) // C6
    if (failed(verifyPositive(*this, "scale", scale->convertToDouble())))
      return failure();
  if (auto softcap = getSoftcap())
    if (failed(verifyPositive(*this, "softcap", softcap->convertToDouble())))
      return failure();
  if (failed(verifySameType(*this, "result", getResult().getType(), "query",
                            query))) // C7
    return failure();
  return verifyPages(*this, getBlocks(), getBlockSize(), cache,
                     query.getDimSize(0)); // C8
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

LogicalResult MoERouterOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (failed(verifyRank(*this, "logits", logits, 2))) // C1
    return failure();
  int64_t topK = static_cast<int64_t>(getTopK());
  int64_t numExperts = logits.getDimSize(1);
  if (topK < 1 || (!ShapedType::isDynamic(numExperts) && topK > numExperts))
    return emitOpError() << "expects top_k (" << topK
                         << ") to be between 1 and num_experts ("
                         << formatDim(numExperts) << ")"; // C2
  for (auto [what, type] :
       {std::pair<StringRef, RankedTensorType>{"weights",
                                               getWeights().getType()},
        {"indices", getIndices().getType()}}) { // C3
    if (failed(verifyRank(*this, what, type, 2)) ||
        failed(verifyDim(*this, what, type, 0, "the token count of logits",
                         logits.getDimSize(0))) ||
        failed(verifyDim(*this, what, type, 1, "top_k", topK)))
      return failure();
  }
  return success();
}

LogicalResult ExpertMatmulOp::verify() {
  RankedTensorType input = getInput().getType();
  RankedTensorType weight = getWeight().getType();
  RankedTensorType indices = getIndices().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "weight", weight, 3)) ||  // C1
      failed(verifyRank(*this, "indices", indices, 2)))  // C2
    return failure();
  int64_t numTokens = indices.getDimSize(0);
  int64_t topK = indices.getDimSize(1);
  int64_t inner = weight.getDimSize(2);
  // C3
  if (input.getRank() != 2 && input.getRank() != 3)
    return emitOpError() << "expects input to be [tokens, in] or [tokens, "
                            "top_k, in], got rank "
                         << input.getRank();
  if (failed(verifyDim(*this, "input", input, 0, "the token count of indices",
                       numTokens)))
    return failure();
  if (input.getRank() == 3 &&
      failed(verifyDim(*this, "input", input, 1, "top_k of indices", topK)))
    return failure();
  if (failed(verifyDim(*this, "input", input, input.getRank() - 1,
                       "the inner dimension of weight", inner)))
    return failure();
  if (failed(verifyBlockAligned(*this, "weight", weight))) // C4
    return failure();
  if (failed(verifyRank(*this, "result", result, 3)) || // C5
      failed(verifyDim(*this, "result", result, 0, "the token count",
                       numTokens)) ||
      failed(verifyDim(*this, "result", result, 1, "top_k", topK)))
    return failure();
  return verifyDim(*this, "result", result, 2, "the rows of weight",
                   weight.getDimSize(1));
}

LogicalResult MoECombineOp::verify() {
  RankedTensorType expertOut = getExpertOut().getType();
  RankedTensorType weights = getWeights().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "expert_out", expertOut, 3))) // C1
    return failure();
  if (failed(verifyRank(*this, "weights", weights, 2)) || // C2
      failed(verifyDim(*this, "weights", weights, 0,
                       "the token count of expert_out",
                       expertOut.getDimSize(0))) ||
      failed(verifyDim(*this, "weights", weights, 1, "top_k of expert_out",
                       expertOut.getDimSize(1))))
    return failure();
  if (failed(verifyRank(*this, "result", result, 2)) || // C3
      failed(verifyDim(*this, "result", result, 0,
                       "the token count of expert_out",
                       expertOut.getDimSize(0))))
    return failure();
  return verifyDim(*this, "result", result, 1, "the dim of expert_out",
                   expertOut.getDimSize(2));
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

LogicalResult LogitsOp::verify() {
  RankedTensorType hidden = getHidden().getType();
  RankedTensorType output = getOutput().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "hidden", hidden, 2)) || // C1
      failed(verifyRank(*this, "output", output, 2)))
    return failure();
  if (!areDimsCompatible(hidden.getDimSize(1), output.getDimSize(1))) // C2
    return emitOpError() << "expects the inner dimension of hidden ("
                         << formatDim(hidden.getDimSize(1))
                         << ") to equal the inner dimension of output ("
                         << formatDim(output.getDimSize(1)) << ")";
  if (failed(verifyBlockAligned(*this, "output", output))) // C3
    return failure();
  if (failed(verifyRank(*this, "result", result, 2))) // C4
    return failure();
  if (getAllTokens()) {
    if (failed(verifyDim(*this, "result", result, 0,
                         "the token count of hidden", hidden.getDimSize(0))))
      return failure();
  } else if (result.getDimSize(0) != 1) {
    return emitOpError() << "expects dimension 0 of result ("
                         << formatDim(result.getDimSize(0))
                         << ") to be 1, the last token; set all_tokens for "
                            "logits of every token";
  }
  if (failed(verifyDim(*this, "result", result, 1, "the vocabulary size",
                       output.getDimSize(0))))
    return failure();
  if (auto softcap = getSoftcap()) // C5
    return verifyPositive(*this, "softcap", softcap->convertToDouble());
  return success();
}

LogicalResult SampleOp::verify() {
  RankedTensorType logits = getLogits().getType();
  RankedTensorType result = getResult().getType();
  if (failed(verifyRank(*this, "logits", logits, 2))) // C1
    return failure();
  if (failed(verifyRank(*this, "result", result, 1)) || // C2
      failed(verifyDim(*this, "result", result, 0, "the rows of logits",
                       logits.getDimSize(0))))
    return failure();
  double temperature = getTemperature().convertToDouble();
  if (!(temperature >= 0) || !std::isfinite(temperature)) // C3
    return emitOpError() << "expects temperature to be non-negative, got "
                         << temperature;
  int64_t topK = static_cast<int64_t>(getTopK());
  int64_t vocab = logits.getDimSize(1);
  if (topK < 0 || (!ShapedType::isDynamic(vocab) && topK > vocab)) // C4
    return emitOpError() << "expects top_k (" << topK
                         << ") to be between 0 and the vocabulary size ("
                         << formatDim(vocab) << ")";
  double topP = getTopP().convertToDouble();
  if (!(topP > 0 && topP <= 1)) // C5
    return emitOpError() << "expects top_p to be in (0, 1], got " << topP;
  if (auto penalty = getRepetitionPenalty()) { // C6
    if (failed(verifyPositive(*this, "repetition_penalty",
                              penalty->convertToDouble())))
      return failure();
    if (!getHistory())
      return emitOpError()
             << "expects a history operand when repetition_penalty is set";
  }
  if (Value history = getHistory()) // C7
    return verifyRank(*this, "history",
                      cast<RankedTensorType>(history.getType()), 1);
  return success();
}

#define GET_OP_CLASSES
#include "dialects/llm/LLMOps.cpp.inc"
