// Types of the llm dialect: block-quantized element types and the KV cache.
#ifndef HETC_LLM_TYPES_TD
#define HETC_LLM_TYPES_TD

include "dialects/llm/LLMDialect.td"
include "dialects/llm/LLMEnums.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def LLM_QuantType : LLM_Type<"Quant", "quant"> {
  let summary = "A block-quantized element type (GGUF/ggml formats)";
  let description = [{
    The element type of a tensor stored in a block-quantized format: each run of
    `blockSize` consecutive elements along the innermost dimension is stored as one
    block of `bytesPerBlock` bytes (scales and packed integers).

    | format | elements per block | bytes per block |
    |--------|--------------------|-----------------|
    | q8_0   | 32                 | 34              |
    | q4_0   | 32                 | 18              |
    | q2_k   | 256                | 84              |
    | q3_k   | 256                | 110             |
    | q4_k   | 256                | 144             |
    | q5_k   | 256                | 176             |
    | q6_k   | 256                | 210             |

    A tensor with this element type must have an innermost dimension that is a
    multiple of the block size; ops that take such tensors verify it.

    ```mlir
    llm.weight @"blk.0.attn_q.weight" : tensor<4096x4096x!llm.quant<q4_0>>
    ```
  }];
  let parameters = (ins EnumParameter<LLM_QuantFormat>:$format);
  let assemblyFormat = "`<` $format `>`";
  let extraClassDeclaration = [{
    /// Elements stored together in one block.
    int64_t getBlockSize() const;
    /// Bytes one block occupies.
    int64_t getBytesPerBlock() const;
  }];
}

def LLM_KVCacheType : LLM_Type<"KVCache", "kv_cache"> {
  let summary = "The key/value cache of one attention layer";
  let description = [{
    Keys and values of up to `capacity` token positions for `kvHeads` heads of
    `headDim` elements, stored as `elementType` (a float type or a block-quantized
    `!llm.quant`). Ops use it with value semantics: `llm.kv_append` returns the
    cache with new positions written; the runtime updates it in place.

    ```mlir
    !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
    ```
  }];
  let parameters = (ins "int64_t":$capacity, "int64_t":$kvHeads,
                        "int64_t":$headDim, "::mlir::Type":$elementType);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bytes of keys plus values stored for `positions` token positions.
    int64_t getBytesForPositions(int64_t positions) const;
  }];
}

def LLM_AnyQuant : Type<CPred<"::llvm::isa<::hetc::llm::QuantType>($_self)">,
                        "block-quantized type", "::hetc::llm::QuantType">;

// Weights: float or block-quantized storage.
def LLM_WeightElement : AnyTypeOf<[F32, F16, BF16, LLM_AnyQuant]>;
def LLM_WeightTensor : RankedTensorOf<[LLM_WeightElement]>;
// Activations and norm parameters: floating point.
def LLM_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
// Token ids and positions.
def LLM_IndexTensor : RankedTensorOf<[I32, I64]>;
def LLM_QuantTensor : RankedTensorOf<[LLM_AnyQuant]>;

#endif // HETC_LLM_TYPES_TD
