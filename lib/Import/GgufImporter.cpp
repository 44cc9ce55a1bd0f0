// GGUF → llm: declares every tensor as an llm.weight and builds the decoder
// graph of the llama family (llama, mistral, qwen2) as prefill and decode entry
// points.
#include "hetc/Import/GgufImporter.h"

#include "dialects/llm/LLMTypes.h"

#include "dialects/llm/LLMOps.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using hetrt::format::BlockFormat;
using hetrt::format::GgufFile;
using hetrt::format::GgufTensorInfo;
using hetrt::format::ModelConfig;

namespace hetc::import {

namespace {

/// The element type a GGUF storage format becomes in the llm dialect.
Type elementTypeOf(MLIRContext &context, BlockFormat format) {
  switch (format) {
  case BlockFormat::F32:
    return Float32Type::get(&context);
  case BlockFormat::F16:
    return Float16Type::get(&context);
  case BlockFormat::BF16:
    return BFloat16Type::get(&context);
  case BlockFormat::Q8_0:
    return llm::QuantType::get(&context, llm::QuantFormat::q8_0);
  case BlockFormat::Q4_0:
    return llm::QuantType::get(&context, llm::QuantFormat::q4_0);
  case BlockFormat::Q2_K:
    return llm::QuantType::get(&context, llm::QuantFormat::q2_k);
  case BlockFormat::Q3_K:
    return llm::QuantType::get(&context, llm::QuantFormat::q3_k);
  case BlockFormat::Q4_K:
    return llm::QuantType::get(&context, llm::QuantFormat::q4_k);
  case BlockFormat::Q5_K:
    return llm::QuantType::get(&context, llm::QuantFormat::q5_k);
  case BlockFormat::Q6_K:
    return llm::QuantType::get(&context, llm::QuantFormat::q6_k);
  }
  return {};
}

/// Builds one entry point's body. Weight lookups are memoized per function, so
/// each weight has one llm.get_weight per function.
class GraphBuilder {
public:
  GraphBuilder(OpBuilder &builder, const ModelConfig &config,
               const llvm::StringMap<RankedTensorType> &weightTypes,
               std::string &error)
      : b(builder), config(config), weightTypes(weightTypes), error(error) {}

  /// Emits the function `name` with `numTokens` tokens (dynamic when < 0);
  /// with `sequencePerToken`, each token is a sequence of its own and
  /// every token's logits are returned.
  LogicalResult build(StringRef name, int64_t numTokens,
                      llm::KVCacheType cacheType,
                      bool sequencePerToken = false) {
    MLIRContext *ctx = b.getContext();
    Location loc = b.getUnknownLoc();
    Type f32 = b.getF32Type();
    Type i32 = b.getI32Type();
    int64_t tokensDim = numTokens < 0 ? ShapedType::kDynamic : numTokens;
    auto tokensType = RankedTensorType::get({tokensDim}, i32);
    SmallVector<Type> inputs = {tokensType, tokensType};
    SmallVector<Type> results = {RankedTensorType::get(
        {sequencePerToken ? ShapedType::kDynamic : 1, config.vocabSize}, f32)};
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      inputs.push_back(cacheType);
      results.push_back(cacheType);
    }
    auto func = func::FuncOp::create(b, loc, name,
                                       FunctionType::get(ctx, inputs, results));
    if (sequencePerToken)
      func->setAttr(llm::kSequencePerTokenAttrName, b.getUnitAttr());
    Block *entry = func.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    weights.clear();

    Value tokens = entry->getArgument(0);
    Value positions = entry->getArgument(1);
    this->numTokens = tokensDim;
    this->numTokensValue =
        ShapedType::isDynamic(tokensDim)
            ? tensor::DimOp::create(b, loc, tokens, 0).getResult()
            : Value();

    Value table = weight("token_embd.weight");
    if (!table)
      return failure();
    Value x = llm::EmbeddingOp::create(b, 
        named("token_embd"), activationType(config.dim), tokens, table);
    SmallVector<Value> newCaches;
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      Value cache = entry->getArgument(2 + layer);
      Value newCache;
      if (failed(buildLayer(layer, x, positions, cache, x, newCache)))
        return failure();
      newCaches.push_back(newCache);
    }
    Value norm = weight("output_norm.weight");
    Value output =
        weight(config.tiedOutput ? "token_embd.weight" : "output.weight");
    if (!norm || !output)
      return failure();
    Value normed = rmsNorm(named("output_norm"), x, norm);
    Value logits = llm::LogitsOp::create(b, 
        named(config.tiedOutput ? "token_embd" : "output"), results[0],
        normed, output,
        /*all_tokens=*/sequencePerToken ? b.getUnitAttr() : nullptr,
        /*softcap=*/nullptr);
    SmallVector<Value> returned = {logits};
    returned.append(newCaches);
    func::ReturnOp::create(b, loc, returned);
    return success();
  }

private:
  Location named(const Twine &name) {
    return NameLoc::get(b.getStringAttr(name));
  }

  RankedTensorType activationType(ArrayRef<int64_t> featureDims) {
    SmallVector<int64_t> shape = {numTokens};
    shape.append(featureDims.begin(), featureDims.end());
    return RankedTensorType::get(shape, b.getF32Type());
  }

  /// The value of weight `name`, emitting its llm.get_weight on first use.
  Value weight(StringRef name) {
    auto known = weights.find(name);
    if (known != weights.end())
      return known->second;
    auto type = weightTypes.find(name);
    if (type == weightTypes.end()) {
      error = "tensor \"" + name.str() +
              "\" is missing; the model file is incomplete for architecture \"" +
              config.architecture + "\"";
      return {};
    }
    Value value = llm::GetWeightOp::create(b, 
        named(name), type->second, FlatSymbolRefAttr::get(b.getContext(), name));
    weights[name] = value;
    return value;
  }

  /// `weight`, checked to have `shape` (outer to inner).
  Value weight(StringRef name, ArrayRef<int64_t> shape) {
    Value value = weight(name);
    if (!value)
      return {};
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getShape() != shape) {
      std::string expected, actual;
      llvm::raw_string_ostream e(expected), a(actual);
      llvm::interleave(shape, e, "x");
      llvm::interleave(type.getShape(), a, "x");
      error = "tensor \"" + name.str() + "\" has shape " + actual +
              " but the model's metadata implies " + expected;
      return {};
    }
    return value;
  }

  Value rmsNorm(Location loc, Value x, Value w) {
    return llm::RMSNormOp::create(b, loc, x.getType(), x, w,
                                    b.getF32FloatAttr(config.rmsEpsilon),
                                    /*unit_offset=*/nullptr);
  }

  Value matmul(Location loc, Value x, Value w, int64_t outFeatures) {
    return llm::MatmulOp::create(b, loc, activationType(outFeatures), x, w);
  }

  Value splitHeads(Location loc, Value x, int64_t heads) {
    auto type = activationType({heads, config.headDim});
    OpFoldResult tokens = ShapedType::isDynamic(numTokens)
                              ? OpFoldResult(numTokensValue)
                              : OpFoldResult(b.getIndexAttr(numTokens));
    SmallVector<OpFoldResult> outputShape = {tokens, b.getIndexAttr(heads),
                                             b.getIndexAttr(config.headDim)};
    return tensor::ExpandShapeOp::create(b, 
        loc, type, x, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        outputShape);
  }

  Value rope(Location loc, Value x, Value positions) {
    llm::RopeMode mode = config.ropeStyle == hetrt::format::RopeStyle::NeoX
                             ? llm::RopeMode::neox
                             : llm::RopeMode::normal;
    Value factors = config.ropeFreqFactors ? weight("rope_freqs.weight") : Value();
    return llm::RoPEOp::create(b, 
        loc, x.getType(), x, positions, factors,
        llm::RopeModeAttr::get(b.getContext(), mode),
        b.getF32FloatAttr(config.ropeTheta), b.getI64IntegerAttr(config.ropeDim),
        /*scaling=*/nullptr, /*scaling_factor=*/nullptr,
        /*original_context=*/nullptr);
  }

  LogicalResult buildLayer(int64_t layer, Value x, Value positions, Value cache,
                           Value &out, Value &newCache) {
    std::string prefix = "blk." + std::to_string(layer) + ".";
    auto at = [&](StringRef part) { return named(prefix + part); };
    auto w = [&](StringRef part, ArrayRef<int64_t> shape) {
      return weight(prefix + part.str() + ".weight", shape);
    };
    int64_t dim = config.dim;
    int64_t qDim = config.numHeads * config.headDim;
    int64_t kvDim = config.numKvHeads * config.headDim;
    Value attnNorm = w("attn_norm", {dim});
    Value wq = w("attn_q", {qDim, dim});
    Value wk = w("attn_k", {kvDim, dim});
    Value wv = w("attn_v", {kvDim, dim});
    Value wo = w("attn_output", {dim, qDim});
    Value ffnNorm = w("ffn_norm", {dim});
    Value wGate = w("ffn_gate", {config.ffnDim, dim});
    Value wUp = w("ffn_up", {config.ffnDim, dim});
    Value wDown = w("ffn_down", {dim, config.ffnDim});
    if (!attnNorm || !wq || !wk || !wv || !wo || !ffnNorm || !wGate || !wUp ||
        !wDown)
      return failure();

    Value xn = rmsNorm(at("attn_norm"), x, attnNorm);
    Value q = matmul(at("attn_q"), xn, wq, qDim);
    Value k = matmul(at("attn_k"), xn, wk, kvDim);
    Value v = matmul(at("attn_v"), xn, wv, kvDim);
    if (config.qkvBias) {
      Value bq = weight(prefix + "attn_q.bias", {qDim});
      Value bk = weight(prefix + "attn_k.bias", {kvDim});
      Value bv = weight(prefix + "attn_v.bias", {kvDim});
      if (!bq || !bk || !bv)
        return failure();
      q = llm::BiasAddOp::create(b, at("attn_q.bias"), q.getType(), q, bq);
      k = llm::BiasAddOp::create(b, at("attn_k.bias"), k.getType(), k, bk);
      v = llm::BiasAddOp::create(b, at("attn_v.bias"), v.getType(), v, bv);
    }
    Value q3 = rope(at("rope_q"), splitHeads(at("attn_q"), q, config.numHeads),
                    positions);
    Value k3 = rope(at("rope_k"), splitHeads(at("attn_k"), k, config.numKvHeads),
                    positions);
    Value v3 = splitHeads(at("attn_v"), v, config.numKvHeads);
    newCache = llm::KVAppendOp::create(b, at("kv_append"), cache.getType(), k3,
                                         v3, cache, positions,
                                         /*blocks=*/Value(),
                                         /*block_size=*/nullptr);
    IntegerAttr window =
        config.slidingWindow ? b.getI64IntegerAttr(*config.slidingWindow)
                             : IntegerAttr();
    Value attention = llm::AttentionOp::create(b, 
        at("attention"), q3.getType(), q3, newCache, positions,
        /*blocks=*/Value(), /*causal=*/b.getUnitAttr(), window,
        /*scale=*/nullptr, /*softcap=*/nullptr, /*block_size=*/nullptr);
    Value merged = tensor::CollapseShapeOp::create(b, 
        at("attention"), activationType(qDim), attention,
        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    Value projected = matmul(at("attn_output"), merged, wo, dim);
    Value h = llm::AddOp::create(b, at("attn_residual"), x, projected);

    Value hn = rmsNorm(at("ffn_norm"), h, ffnNorm);
    Value gate = matmul(at("ffn_gate"), hn, wGate, config.ffnDim);
    Value up = matmul(at("ffn_up"), hn, wUp, config.ffnDim);
    Value act = llm::GLUOp::create(b, 
        at("ffn_glu"), gate.getType(), gate, up,
        llm::GatedActivationAttr::get(b.getContext(),
                                      llm::GatedActivation::silu));
    Value down = matmul(at("ffn_down"), act, wDown, dim);
    out = llm::AddOp::create(b, at("ffn_residual"), h, down);
    return success();
  }

  OpBuilder &b;
  const ModelConfig &config;
  const llvm::StringMap<RankedTensorType> &weightTypes;
  std::string &error;
  llvm::StringMap<Value> weights;
  int64_t numTokens = ShapedType::kDynamic;
  Value numTokensValue;
};

} // namespace

OwningOpRef<ModuleOp> importGguf(MLIRContext &context, const GgufFile &file,
                                 const ImportOptions &options,
                                 std::string &error) {
  context.loadDialect<llm::LLMDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  std::optional<ModelConfig> config = ModelConfig::fromGguf(file, error);
  if (!config)
    return nullptr;
  int64_t capacity =
      options.contextLength > 0 ? options.contextLength : config->contextLength;
  if (capacity > hetrt::format::kMaxContextLength) {
    error = "--context " + std::to_string(capacity) + " is larger than the " +
            std::to_string(hetrt::format::kMaxContextLength) +
            " positions hetc addresses (positions are 32-bit); give a smaller "
            "--context";
    return nullptr;
  }

  OpBuilder b(&context);
  Location fileLoc = FileLineColLoc::get(&context, file.path(), 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  b.setInsertionPointToEnd(module->getBody());

  llvm::StringMap<RankedTensorType> weightTypes;
  for (const GgufTensorInfo &tensor : file.tensors()) {
    // GGUF lists dimensions innermost first; tensors are written outer first.
    SmallVector<int64_t> shape(tensor.dims.rbegin(), tensor.dims.rend());
    auto type =
        RankedTensorType::get(shape, elementTypeOf(context, tensor.format));
    weightTypes[tensor.name] = type;
    llm::WeightOp::create(b, NameLoc::get(b.getStringAttr(tensor.name)),
                            tensor.name, type,
                            b.getI64IntegerAttr(static_cast<int64_t>(tensor.offset)));
  }

  Type cacheElement;
  if (options.kvElementType == "f32")
    cacheElement = b.getF32Type();
  else if (options.kvElementType == "f16")
    cacheElement = b.getF16Type();
  else if (options.kvElementType == "bf16")
    cacheElement = b.getBF16Type();
  else {
    error = "KV-cache element type \"" + options.kvElementType +
            "\" is not one of f32, f16, bf16";
    return nullptr;
  }
  auto cacheType = llm::KVCacheType::get(&context, capacity, config->numKvHeads,
                                         config->headDim, cacheElement);
  (*module)->setAttr(
      llm::kModelAttrName,
      llm::ModelAttr::get(&context, config->architecture, config->numLayers,
                          config->dim, config->numHeads, config->numKvHeads,
                          config->headDim, config->ffnDim, config->vocabSize,
                          capacity, /*experts=*/0, /*experts_used=*/0));

  GraphBuilder graph(b, *config, weightTypes, error);
  if (failed(graph.build("prefill", /*numTokens=*/-1, cacheType)) ||
      failed(graph.build("decode", /*numTokens=*/1, cacheType)) ||
      (options.batchedDecode &&
       failed(graph.build("decode_batch", /*numTokens=*/-1, cacheType,
                          /*sequencePerToken=*/true)))) {
    error = file.path() + ": " + error;
    return nullptr;
  }
  if (failed(verify(*module))) {
    error = file.path() + ": the imported module does not verify (see the "
                          "diagnostics above); this is a bug in hetc's importer";
    return nullptr;
  }
  return module;
}

} // namespace hetc::import
