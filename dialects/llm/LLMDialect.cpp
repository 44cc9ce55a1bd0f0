// Registration of the llm dialect, its types and attributes.
#include "dialects/llm/LLMDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMShapes.h"
#include "dialects/llm/LLMTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "abi/BlockFormats.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hetc::llm;

#include "dialects/llm/LLMDialect.cpp.inc"
#include "dialects/llm/LLMEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/llm/LLMTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/llm/LLMAttrs.cpp.inc"

void LLMDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "dialects/llm/LLMOps.cpp.inc"
      >();
}

void LLMDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/llm/LLMAttrs.cpp.inc"
      >();
}

LogicalResult LLMDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  if (attribute.getName() == kMatmulWeightAttrName) {
    auto storage = dyn_cast<TypeAttr>(attribute.getValue());
    bool storable = storage && (storage.getValue().isF32() ||
                                storage.getValue().isF16() ||
                                storage.getValue().isBF16() ||
                                isa<QuantType>(storage.getValue()));
    if (!storable)
      return op->emitOpError()
             << "expects '" << kMatmulWeightAttrName
             << "' to be the weight's storage type (f32, f16, bf16 or "
                "!llm.quant), got "
             << attribute.getValue();
    return success();
  }
  if (attribute.getName() == kAttentionScoresAttrName ||
      attribute.getName() == kAttentionValuesAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()) ||
        op->getName().getStringRef() != "linalg.generic")
      return op->emitOpError()
             << "expects '" << attribute.getName().getValue()
             << "' as a unit attribute on a linalg.generic (a product of a "
                "tiled attention step), got "
             << attribute.getValue();
    return success();
  }
  if (attribute.getName() == kSequencePerTokenAttrName) {
    if (!isa<UnitAttr>(attribute.getValue()) ||
        !isa<FunctionOpInterface>(op))
      return op->emitOpError()
             << "expects '" << kSequencePerTokenAttrName
             << "' as a unit attribute on a function (a batched decode "
                "step), got "
             << attribute.getValue();
    return success();
  }
  if (attribute.getName() != kModelAttrName)
    return op->emitOpError()
           << "has unknown llm attribute '" << attribute.getName().getValue()
           << "'; the llm dialect defines '" << kModelAttrName
           << "' on modules, '" << kSequencePerTokenAttrName
           << "' on batched decode functions, '" << kMatmulWeightAttrName
           << "' on lowered matmuls and '" << kAttentionScoresAttrName
           << "' and '" << kAttentionValuesAttrName
           << "' on the products of tiled attention";
  if (!isa<ModuleOp>(op) || !isa<ModelAttr>(attribute.getValue()))
    return op->emitOpError()
           << "expects '" << kModelAttrName
           << "' only on a module, as a #llm.model attribute (hetc import "
              "writes it), got "
           << attribute.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// ModelAttr
//===----------------------------------------------------------------------===//

LogicalResult ModelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                StringRef architecture, int64_t layers,
                                int64_t dim, int64_t heads, int64_t kvHeads,
                                int64_t headDim, int64_t ffnDim, int64_t vocab,
                                int64_t contextLength, int64_t experts,
                                int64_t expertsUsed) {
  const std::pair<const char *, int64_t> sizes[] = {
      {"layers", layers},     {"dim", dim},         {"heads", heads},
      {"kv_heads", kvHeads},  {"head_dim", headDim}, {"ffn_dim", ffnDim},
      {"vocab", vocab},       {"context_length", contextLength}};
  for (const auto &[name, value] : sizes)
    if (value <= 0)
      return emitError() << "expects " << name << " to be positive, got "
                         << value;
  if (experts < 0 || expertsUsed < 0)
    return emitError() << "expects experts and experts_used to be "
                          "non-negative";
  if (heads % kvHeads != 0)
    return emitError() << "expects heads (" << heads
                       << ") to be a multiple of kv_heads (" << kvHeads << ")";
  if ((experts > 0) != (expertsUsed > 0) || expertsUsed > experts)
    return emitError() << "expects experts_used (" << expertsUsed
                       << ") in [1, experts] for a mixture of experts and 0 "
                          "otherwise (experts = "
                       << experts << ")";
  if (architecture != "llama" && architecture != "mistral" &&
      architecture != "mixtral" && architecture != "qwen2")
    return emitError() << "expects an architecture hetc imports (llama, "
                          "mistral, mixtral, qwen2), got \""
                       << architecture << "\"";
  return success();
}

void LLMDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/llm/LLMTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// QuantType
//===----------------------------------------------------------------------===//

// The enum values are the ggml type ids, so the contract's table is the one
// source of block sizes for compiler and runtime alike; these checks keep the
// dialect's enum and the contract's in step.
static_assert(static_cast<uint32_t>(QuantFormat::q8_0) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q8_0));
static_assert(static_cast<uint32_t>(QuantFormat::q4_0) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q4_0));
static_assert(static_cast<uint32_t>(QuantFormat::q2_k) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q2_K));
static_assert(static_cast<uint32_t>(QuantFormat::q3_k) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q3_K));
static_assert(static_cast<uint32_t>(QuantFormat::q4_k) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q4_K));
static_assert(static_cast<uint32_t>(QuantFormat::q5_k) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q5_K));
static_assert(static_cast<uint32_t>(QuantFormat::q6_k) ==
              static_cast<uint32_t>(hetrt::format::BlockFormat::Q6_K));
static hetrt::format::BlockLayout layoutOf(QuantFormat format) {
  return hetrt::format::blockLayout(
      static_cast<hetrt::format::BlockFormat>(static_cast<uint32_t>(format)));
}

std::optional<hetrt::format::BlockFormat>
hetc::llm::weightStorageFormat(Type element) {
  using hetrt::format::BlockFormat;
  if (element.isF32())
    return BlockFormat::F32;
  if (element.isF16())
    return BlockFormat::F16;
  if (element.isBF16())
    return BlockFormat::BF16;
  if (auto quant = dyn_cast<QuantType>(element))
    // The dialect's formats carry the runtime's numbering.
    return static_cast<BlockFormat>(static_cast<uint32_t>(quant.getFormat()));
  return std::nullopt;
}

int64_t QuantType::getBlockSize() const {
  return layoutOf(getFormat()).blockSize;
}

int64_t QuantType::getBytesPerBlock() const {
  return layoutOf(getFormat()).bytesPerBlock;
}

//===----------------------------------------------------------------------===//
// KVCacheType
//===----------------------------------------------------------------------===//

LogicalResult
KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                    int64_t capacity, int64_t kvHeads, int64_t headDim,
                    Type elementType) {
  if (capacity <= 0)
    return emitError() << "kv_cache capacity must be positive, got "
                       << capacity;
  if (kvHeads <= 0)
    return emitError() << "kv_cache kvHeads must be positive, got " << kvHeads;
  if (headDim <= 0)
    return emitError() << "kv_cache headDim must be positive, got " << headDim;
  if (auto quant = dyn_cast<QuantType>(elementType)) {
    if (headDim % quant.getBlockSize() != 0)
      return emitError() << "kv_cache headDim (" << headDim
                         << ") must be a multiple of the "
                         << stringifyQuantFormat(quant.getFormat())
                         << " block size (" << quant.getBlockSize() << ")";
    return success();
  }
  if (!isa<Float32Type, Float16Type, BFloat16Type>(elementType))
    return emitError() << "kv_cache elementType must be f32, f16, bf16 or "
                          "!llm.quant, got "
                       << elementType;
  return success();
}

int64_t KVCacheType::getBytesForPositions(int64_t positions) const {
  int64_t rowBytes =
      getStorageBytes(getElementType(), getHeadDim()).value_or(0);
  // Keys and values: two rows per head per position.
  return 2 * positions * getKvHeads() * rowBytes;
}
