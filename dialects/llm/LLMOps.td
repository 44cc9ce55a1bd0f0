// Operations of the llm dialect. Each op lists the rules its verifier enforces
// (C1, C2, ...); test/dialects/llm/invalid.mlir has one case per rule.
#ifndef HETC_LLM_OPS_TD
#define HETC_LLM_OPS_TD

include "dialects/llm/LLMDialect.td"
include "dialects/llm/LLMEnums.td"
include "dialects/llm/LLMTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

def LLM_WeightOp : LLM_Op<"weight", [Symbol]> {
  let summary = "Declares a weight tensor stored in the model file";
  let description = [{
    Declares that the model file holds a tensor named `sym_name` with the given
    type. The data stays in the file; the runtime maps it. The symbol name is the
    tensor's name in the file (GGUF names such as `blk.0.attn_q.weight`).
    `data_offset`, when the importer knows the file, is the tensor's byte offset
    in the file's data section, so code can be bound to the mapped file.

    ```mlir
    llm.weight @"blk.0.attn_q.weight" : tensor<4096x4096x!llm.quant<q4_0>>
    ```

    Verifier rules:
    - C1: the type has a static shape.
    - C2: a block-quantized tensor has an innermost dimension that is a multiple
      of its block size.
    - C3: `data_offset`, when present, is non-negative.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<LLM_WeightTensor>:$type,
                       OptionalAttr<I64Attr>:$data_offset);
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def LLM_GetWeightOp : LLM_PureOp<"get_weight",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Refers to a declared weight";
  let description = [{
    Yields the weight declared by the `llm.weight` op named `name`. Reading its
    bytes is counted by the ops that use the value, not here.

    ```mlir
    %wq = llm.get_weight @"blk.0.attn_q.weight" : tensor<4096x4096x!llm.quant<q4_0>>
    ```

    Verifier rules:
    - C1: `name` refers to an `llm.weight` op.
    - C2: the result type equals the declared type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs LLM_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Embedding, norms, elementwise
//===----------------------------------------------------------------------===//

def LLM_EmbeddingOp : LLM_PureOp<"embedding"> {
  let summary = "Looks up token embeddings";
  let description = [{
    `result[t, :] = dequantize(table[tokens[t], :])`. The table is `[vocab, dim]`
    as stored in GGUF (`token_embd.weight`).

    ```mlir
    %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<32000x4096x!llm.quant<q4_0>>) -> tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: `tokens` is 1-D.
    - C2: `table` is 2-D.
    - C3: a block-quantized table has a row length that is a multiple of its
      block size.
    - C4: the result is `[tokens, dim]` with the token count of `tokens` and the
      row length of `table`.
  }];
  let arguments = (ins LLM_IndexTensor:$tokens, LLM_WeightTensor:$table);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$tokens `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_RMSNormOp : LLM_PureOp<"rms_norm"> {
  let summary = "RMS normalization over the innermost dimension";
  let description = [{
    `y = x / sqrt(mean(x²) + epsilon) * w`, or `* (1 + w)` with `unit_offset`
    (Gemma stores its norm weights that way).

    ```mlir
    %y = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: `weight` is 1-D with the size of the innermost dimension of `input`.
    - C2: the result type equals the input type.
    - C3: `epsilon` is positive.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$weight,
                       F32Attr:$epsilon, UnitAttr:$unit_offset);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `eps` `=` $epsilon (`unit_offset` $unit_offset^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_LayerNormOp : LLM_PureOp<"layer_norm"> {
  let summary = "Layer normalization over the innermost dimension";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + epsilon) * w + b`; the bias is optional.

    ```mlir
    %y = llm.layer_norm %x, %w, %b eps = 1.0e-05 : (tensor<?x2560xf32>, tensor<2560xf32>, tensor<2560xf32>) -> tensor<?x2560xf32>
    ```

    Verifier rules:
    - C1: `weight` is 1-D with the size of the innermost dimension of `input`.
    - C2: the result type equals the input type.
    - C3: `epsilon` is positive.
    - C4: `bias`, when present, has the type of `weight`.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$weight,
                       Optional<LLM_FloatTensor>:$bias, F32Attr:$epsilon);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? `eps` `=` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_AddOp : LLM_PureOp<"add", [SameOperandsAndResultType]> {
  let summary = "Elementwise addition (residual connections)";
  let description = [{
    `result = lhs + rhs`, elementwise, on tensors of one type.

    ```mlir
    %h = llm.add %x, %attn_out : tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: both operands and the result have the same type.
  }];
  let arguments = (ins LLM_FloatTensor:$lhs, LLM_FloatTensor:$rhs);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def LLM_ScaleOp : LLM_PureOp<"scale", [SameOperandsAndResultType]> {
  let summary = "Multiplies every element by a constant";
  let description = [{
    `result = input * factor`. Gemma scales its embeddings by `sqrt(dim)`.

    ```mlir
    %s = llm.scale %x by 45.25 : tensor<?x2048xf32>
    ```

    Verifier rules:
    - C1: the operand and the result have the same type.
    - C2: `factor` is finite.
  }];
  let arguments = (ins LLM_FloatTensor:$input, F32Attr:$factor);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def LLM_BiasAddOp : LLM_PureOp<"bias_add"> {
  let summary = "Adds a bias vector along the innermost dimension";
  let description = [{
    `result[..., n] = input[..., n] + bias[n]`. Qwen2 adds biases to its Q, K
    and V projections.

    ```mlir
    %q = llm.bias_add %q0, %bq : (tensor<?x3584xf32>, tensor<3584xf32>) -> tensor<?x3584xf32>
    ```

    Verifier rules:
    - C1: `bias` is 1-D with the size of the innermost dimension of `input`.
    - C2: the result type equals the input type.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_FloatTensor:$bias);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $bias attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_SiLUOp : LLM_PureOp<"silu", [SameOperandsAndResultType]> {
  let summary = "SiLU (swish) activation";
  let description = [{
    `result = x * sigmoid(x)`, elementwise.

    ```mlir
    %a = llm.silu %x : tensor<?x11008xf32>
    ```

    Verifier rules:
    - C1: the operand and the result have the same type.
  }];
  let arguments = (ins LLM_FloatTensor:$input);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def LLM_GELUOp : LLM_PureOp<"gelu", [SameOperandsAndResultType]> {
  let summary = "GELU activation";
  let description = [{
    `result = x * Φ(x)`, elementwise; `approximate = tanh` uses
    `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.

    ```mlir
    %a = llm.gelu %x approximate = tanh : tensor<?x16384xf32>
    ```

    Verifier rules:
    - C1: the operand and the result have the same type.
  }];
  let arguments = (ins LLM_FloatTensor:$input,
                       LLM_GeluApproximationAttr:$approximate);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$input `approximate` `=` $approximate attr-dict `:` type($result)";
}

def LLM_GLUOp : LLM_PureOp<"glu", [SameOperandsAndResultType]> {
  let summary = "Gated linear unit: activation(gate) * up";
  let description = [{
    `result = act(gate) * up`, elementwise: SwiGLU with `silu`, GeGLU with
    `gelu`/`gelu_tanh`.

    ```mlir
    %h = llm.glu silu %gate, %up : tensor<?x11008xf32>
    ```

    Verifier rules:
    - C1: `gate`, `up` and the result have the same type.
  }];
  let arguments = (ins LLM_FloatTensor:$gate, LLM_FloatTensor:$up,
                       LLM_GatedActivationAttr:$activation);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$activation $gate `,` $up attr-dict `:` type($result)";
}

def LLM_SoftmaxOp : LLM_PureOp<"softmax", [SameOperandsAndResultType]> {
  let summary = "Softmax over the innermost dimension";
  let description = [{
    `result[..., i] = exp(x[..., i]) / Σ_j exp(x[..., j])`, computed stably
    (the row maximum is subtracted first).

    ```mlir
    %p = llm.softmax %logits : tensor<1x32000xf32>
    ```

    Verifier rules:
    - C1: the operand and the result have the same type.
    - C2: the operand has rank at least 1.
  }];
  let arguments = (ins LLM_FloatTensor:$input);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matmuls and quantization
//===----------------------------------------------------------------------===//

def LLM_MatmulOp : LLM_PureOp<"matmul"> {
  let summary = "Multiplies activations by a (possibly quantized) weight matrix";
  let description = [{
    `result[m, n] = Σ_k input[m, k] · weight[n, k]`: the weight is `[out, in]`,
    as GGUF stores it, so quantization blocks run along `in`. A quantized
    weight is dequantized in registers by the kernels, never materialized.

    ```mlir
    %q = llm.matmul %x, %wq : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_0>>) -> tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: `input` and `weight` are 2-D.
    - C2: the inner dimensions agree: `input[1] == weight[1]`.
    - C3: a block-quantized weight has an inner dimension that is a multiple of
      its block size.
    - C4: the result is `[input[0], weight[0]]`.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_WeightTensor:$weight);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def LLM_QuantizeOp : LLM_PureOp<"quantize"> {
  let summary = "Quantizes a float tensor into a block format";
  let description = [{
    Rounds each block of the innermost dimension to the result's block format
    (the same rounding as ggml's reference quantizers).

    ```mlir
    %q = llm.quantize %x : tensor<?x4096xf32> -> tensor<?x4096x!llm.quant<q8_0>>
    ```

    Verifier rules:
    - C1: operand and result have the same shape.
    - C2: the innermost dimension is a multiple of the block size.
  }];
  let arguments = (ins LLM_FloatTensor:$input);
  let results = (outs LLM_QuantTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def LLM_DequantizeOp : LLM_PureOp<"dequantize"> {
  let summary = "Expands a block-quantized tensor to floats";
  let description = [{
    The exact values the block format encodes, as floats.

    ```mlir
    %x = llm.dequantize %q : tensor<?x4096x!llm.quant<q8_0>> -> tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: operand and result have the same shape.
    - C2: the innermost dimension is a multiple of the block size.
  }];
  let arguments = (ins LLM_QuantTensor:$input);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Positions, attention and the KV cache
//===----------------------------------------------------------------------===//

def LLM_RoPEOp : LLM_PureOp<"rope"> {
  let summary = "Rotary position embedding";
  let description = [{
    Rotates pairs of the first `rotary_dim` elements of every head of `input`
    (`[tokens, heads, head_dim]`) by the angle `pos · θ_i`, with
    `θ_i = theta^(-2i/rotary_dim)`, where `pos` is the token's entry in
    `positions`. `mode` picks the pairing: `normal` rotates adjacent pairs,
    `neox` the two halves. Elements past `rotary_dim` pass through (partial
    rotary, Phi-3 and NeoX style).

    Context extension: `scaling linear factor = f` divides positions by `f`;
    `scaling yarn factor = f` applies YaRN against `original_context` (an
    attribute, required for yarn). `freq_factors` (Llama 3's `rope_freqs`,
    Phi-3's long/short factors) divides each `θ_i` by its factor.

    ```mlir
    %qr = llm.rope %q at %pos mode = normal theta = 5.0e+05 dims = 128 freq_factors(%ff) : (tensor<?x32x128xf32>, tensor<?xi32>, tensor<64xf32>) -> tensor<?x32x128xf32>
    ```

    Verifier rules:
    - C1: `input` is 3-D `[tokens, heads, head_dim]`.
    - C2: `positions` is 1-D with the token count of `input`.
    - C3: `rotary_dim` is even, positive and at most `head_dim`.
    - C4: `theta` is positive.
    - C5: `freq_factors`, when present, is 1-D of size `rotary_dim / 2`.
    - C6: `scaling_factor` is present exactly when `scaling` is, and positive.
    - C7: `yarn` scaling has a positive `original_context`.
    - C8: the result type equals the input type.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_IndexTensor:$positions,
                       Optional<LLM_FloatTensor>:$freq_factors,
                       LLM_RopeModeAttr:$mode, F32Attr:$theta,
                       I64Attr:$rotary_dim,
                       OptionalAttr<LLM_RopeScalingAttr>:$scaling,
                       OptionalAttr<F32Attr>:$scaling_factor,
                       OptionalAttr<I64Attr>:$original_context);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $input `at` $positions `mode` `=` $mode `theta` `=` $theta `dims` `=` $rotary_dim
    (`freq_factors` `(` $freq_factors^ `)`)?
    (`scaling` $scaling^ `factor` `=` $scaling_factor)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_KVAppendOp : LLM_PureOp<"kv_append"> {
  let summary = "Writes keys and values of new tokens into a KV cache";
  let description = [{
    Stores `keys[t]` and `values[t]` (`[tokens, kv_heads, head_dim]`) at
    position `positions[t]` of the cache and returns the updated cache. With
    value semantics in the IR; the runtime updates the cache in place.

    A paged cache (`pages %blocks block_size = B`, which `het-page-kv-cache`
    adds) is a pool of blocks of `B` slots each: position `p` is stored in
    slot `blocks[p / B] * B + p % B`, so a sequence's positions need not be
    contiguous and blocks can be shared between sequences or moved between
    memories by the runtime. Without `pages`, position `p` is slot `p`. A
    2-D table (`[tokens, blocks]`) gives each token a sequence of its own:
    token `t` is stored through row `t` (a batch of sequences decoding one
    token each).

    ```mlir
    %c1 = llm.kv_append %k, %v into %c0 at %pos : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>, tensor<?xi32>) -> !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
    %c2 = llm.kv_append %k, %v into %c0 at %pos pages %blocks block_size = 64 : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>, tensor<?xi32>, tensor<?xi32>) -> !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
    ```

    Verifier rules:
    - C1: `keys` and `values` have the same type.
    - C2: `keys` is 3-D `[tokens, kv_heads, head_dim]` with the cache's
      `kvHeads` and `headDim`.
    - C3: `positions` is 1-D with the token count of `keys`.
    - C4: the result type equals the cache type.
    - C5: `blocks` and `block_size` come together; `blocks` is 1-D, or 2-D
      with a row per token, and `block_size` positive and a divisor of the
      cache's capacity.
  }];
  let arguments = (ins LLM_FloatTensor:$keys, LLM_FloatTensor:$values,
                       LLM_KVCacheType:$cache, LLM_IndexTensor:$positions,
                       Optional<LLM_IndexTensor>:$blocks,
                       OptionalAttr<I64Attr>:$block_size);
  let results = (outs LLM_KVCacheType:$result);
  let assemblyFormat = [{
    $keys `,` $values `into` $cache `at` $positions
    (`pages` $blocks^ `block_size` `=` $block_size)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_AttentionOp : LLM_PureOp<"attention"> {
  let summary = "Scaled dot-product attention over a KV cache (GQA, causal, sliding window)";
  let description = [{
    For each query token `t` at position `positions[t]` and head `h`, attends over
    the cached positions `p` allowed by the mask, using KV head
    `h / (num_heads / num_kv_heads)` (grouped-query attention; `num_heads` and
    `head_dim` come from `query`'s shape, `num_kv_heads` from the cache type):

    `out[t, h] = Σ_p softmax_p(scale · q[t, h] · k[p, g]) · v[p, g]`

    With `causal`, positions `p > positions[t]` are masked; with `window = W`
    (Mistral's sliding window) also `p <= positions[t] - W`. `scale` defaults to
    `1/sqrt(head_dim)`. `softcap = c` applies `c·tanh(s/c)` to the scores
    (Gemma 2). With `pages %blocks block_size = B` the cache is paged and
    position `p` is read from slot `blocks[p / B] * B + p % B` (see
    `llm.kv_append`); with a 2-D table each token attends over its own
    sequence, row `t` of the table, up to its own position.

    ```mlir
    %o = llm.attention %q, %cache at %pos causal window = 4096 : (tensor<?x32x128xf32>, !llm.kv_cache<capacity = 32768, kvHeads = 8, headDim = 128, elementType = f16>, tensor<?xi32>) -> tensor<?x32x128xf32>
    ```

    Verifier rules:
    - C1: `query` is 3-D `[tokens, num_heads, head_dim]`.
    - C2: `head_dim` of `query` equals the cache's `headDim`.
    - C3: `num_heads` is a multiple of the cache's `kvHeads`.
    - C4: `positions` is 1-D with the token count of `query`.
    - C5: `window`, when present, is positive.
    - C6: `scale` and `softcap`, when present, are positive.
    - C7: the result type equals the query type.
    - C8: `blocks` and `block_size` come together; `blocks` is 1-D, or 2-D
      with a row per token, and `block_size` positive and a divisor of the
      cache's capacity.
  }];
  let arguments = (ins LLM_FloatTensor:$query, LLM_KVCacheType:$cache,
                       LLM_IndexTensor:$positions,
                       Optional<LLM_IndexTensor>:$blocks,
                       UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F32Attr>:$scale,
                       OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$block_size);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `at` $positions
    (`pages` $blocks^ `block_size` `=` $block_size)?
    (`causal` $causal^)? (`window` `=` $window^)?
    (`scale` `=` $scale^)? (`softcap` `=` $softcap^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumHeads() { return getQuery().getType().getDimSize(1); }
    int64_t getHeadDim() { return getQuery().getType().getDimSize(2); }
    int64_t getNumKvHeads() { return getCache().getType().getKvHeads(); }
  }];
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def LLM_MoERouterOp : LLM_PureOp<"moe_router"> {
  let summary = "Selects the top-k experts of every token";
  let description = [{
    From router logits `[tokens, num_experts]`, picks the `top_k` experts with
    the largest softmax probability for each token, returning their weights and
    indices (`[tokens, top_k]`, in descending weight order; ties to the lowest
    index). With `normalize` the selected weights are rescaled to sum to one
    (Mixtral).

    ```mlir
    %w, %idx = llm.moe_router %logits top_k = 2 normalize : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
    ```

    Verifier rules:
    - C1: `logits` is 2-D.
    - C2: `1 <= top_k <= num_experts`.
    - C3: both results are `[tokens, top_k]`.
  }];
  let arguments = (ins LLM_FloatTensor:$logits, I64Attr:$top_k,
                       UnitAttr:$normalize);
  let results = (outs LLM_FloatTensor:$weights, LLM_IndexTensor:$indices);
  let assemblyFormat = [{
    $logits `top_k` `=` $top_k (`normalize` $normalize^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_ExpertMatmulOp : LLM_PureOp<"expert_matmul"> {
  let summary = "Multiplies each token by the weights of its selected experts";
  let description = [{
    `result[t, j, n] = Σ_k x[t, (j,) k] · weight[indices[t, j], n, k]`: the
    stacked expert weights are `[num_experts, out, in]` (GGUF's `ffn_*_exps`).
    `input` is either `[tokens, in]` (the same activations for every selected
    expert) or `[tokens, top_k, in]` (one row per selected expert). Only the
    selected experts' weights are read.

    ```mlir
    %g = llm.expert_matmul %x, %w_gate[%idx] : (tensor<?x4096xf32>, tensor<8x14336x4096x!llm.quant<q4_k>>, tensor<?x2xi32>) -> tensor<?x2x14336xf32>
    ```

    Verifier rules:
    - C1: `weight` is 3-D `[num_experts, out, in]`.
    - C2: `indices` is 2-D `[tokens, top_k]`.
    - C3: `input` is `[tokens, in]` or `[tokens, top_k, in]`, agreeing with
      `indices` and `weight`.
    - C4: a block-quantized weight has an inner dimension that is a multiple of
      its block size.
    - C5: the result is `[tokens, top_k, out]`.
  }];
  let arguments = (ins LLM_FloatTensor:$input, LLM_WeightTensor:$weight,
                       LLM_IndexTensor:$indices);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_MoECombineOp : LLM_PureOp<"moe_combine"> {
  let summary = "Sums the outputs of the selected experts, weighted by the router";
  let description = [{
    `result[t, d] = Σ_j weights[t, j] · expert_out[t, j, d]`.

    ```mlir
    %y = llm.moe_combine %down, %w : (tensor<?x2x4096xf32>, tensor<?x2xf32>) -> tensor<?x4096xf32>
    ```

    Verifier rules:
    - C1: `expert_out` is 3-D `[tokens, top_k, dim]`.
    - C2: `weights` is `[tokens, top_k]`.
    - C3: the result is `[tokens, dim]`.
  }];
  let arguments = (ins LLM_FloatTensor:$expert_out, LLM_FloatTensor:$weights);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat =
      "$expert_out `,` $weights attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

def LLM_LogitsOp : LLM_PureOp<"logits"> {
  let summary = "Projects hidden states onto the vocabulary";
  let description = [{
    `logits = hidden · outputᵀ` for the last token only (the decode case), or for
    every token with `all_tokens`. The output matrix is `[vocab, dim]`; models
    with tied embeddings pass `token_embd.weight` here. `softcap = c` applies
    `c·tanh(logit/c)` (Gemma 2's final soft-capping).

    ```mlir
    %l = llm.logits %h, %out : (tensor<?x4096xf32>, tensor<32000x4096x!llm.quant<q6_k>>) -> tensor<1x32000xf32>
    ```

    Verifier rules:
    - C1: `hidden` and `output` are 2-D.
    - C2: the inner dimensions agree: `hidden[1] == output[1]`.
    - C3: a block-quantized output matrix has an inner dimension that is a
      multiple of its block size.
    - C4: the result is `[1, vocab]`, or `[tokens, vocab]` with `all_tokens`.
    - C5: `softcap`, when present, is positive.
  }];
  let arguments = (ins LLM_FloatTensor:$hidden, LLM_WeightTensor:$output,
                       UnitAttr:$all_tokens, OptionalAttr<F32Attr>:$softcap);
  let results = (outs LLM_FloatTensor:$result);
  let assemblyFormat = [{
    $hidden `,` $output (`all_tokens` $all_tokens^)? (`softcap` `=` $softcap^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def LLM_SampleOp : LLM_Op<"sample"> {
  let summary = "Draws the next token of each row of logits";
  let description = [{
    Applies, in this order, the repetition penalty (over the token ids in
    `history`), temperature, top-k and top-p (nucleus) filtering, then draws one
    token per row from a generator seeded with `seed`. `temperature = 0` is greedy
    decoding with ties to the lowest id. The op advances the generator, so it is
    not pure: two samples of the same logits are two draws.

    ```mlir
    %next = llm.sample %logits temperature = 8.0e-01 top_k = 40 top_p = 0.95 seed = 42 : (tensor<1x32000xf32>) -> tensor<1xi32>
    ```

    Verifier rules:
    - C1: `logits` is 2-D `[rows, vocab]`.
    - C2: the result is 1-D `[rows]`.
    - C3: `temperature` is non-negative.
    - C4: `0 <= top_k <= vocab` (0 disables top-k).
    - C5: `0 < top_p <= 1`.
    - C6: `repetition_penalty`, when present, is positive and `history` is given.
    - C7: `history`, when present, is 1-D.
  }];
  let arguments = (ins LLM_FloatTensor:$logits, Optional<LLM_IndexTensor>:$history,
                       F32Attr:$temperature, I64Attr:$top_k, F32Attr:$top_p,
                       OptionalAttr<F32Attr>:$repetition_penalty,
                       I64Attr:$seed);
  let results = (outs LLM_IndexTensor:$result);
  let assemblyFormat = [{
    $logits (`history` `(` $history^ `)`)? `temperature` `=` $temperature
    `top_k` `=` $top_k `top_p` `=` $top_p
    (`repetition_penalty` `=` $repetition_penalty^)? `seed` `=` $seed
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // HETC_LLM_OPS_TD
