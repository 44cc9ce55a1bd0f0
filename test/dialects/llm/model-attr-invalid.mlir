// RUN: hetc-opt %s --split-input-file --verify-diagnostics

// The verifier rules of #llm.model (M1-M4 in its description) and of the
// llm.model module attribute.

// M1: sizes are positive.
// expected-error @+1 {{expects layers to be positive, got 0}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 0, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
}

// -----

// expected-error @+1 {{expects context_length to be positive, got -4}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = -4>} {
}

// -----

// M2: grouped-query heads divide evenly.
// expected-error @+1 {{expects heads (6) to be a multiple of kv_heads (4)}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 96, heads = 6, kv_heads = 4, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
}

// -----

// M3: experts per token only with experts, and no more of them.
// expected-error @+1 {{expects experts_used (3) in [1, experts] for a mixture of experts and 0 otherwise (experts = 2)}}
module attributes {llm.model = #llm.model<architecture = "mixtral", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64, experts = 2, experts_used = 3>} {
}

// -----

// expected-error @+1 {{expects experts_used (0) in [1, experts] for a mixture of experts and 0 otherwise (experts = 8)}}
module attributes {llm.model = #llm.model<architecture = "mixtral", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64, experts = 8>} {
}

// -----

// M4: an architecture hetc imports.
// expected-error @+1 {{expects an architecture hetc imports (llama, mistral, mixtral, qwen2), got "gpt2"}}
module attributes {llm.model = #llm.model<architecture = "gpt2", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
}

// -----

// A field missing is a parse error naming it.
// expected-error @+1 {{struct is missing required parameter: ffn_dim}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, vocab = 300, context_length = 64>} {
}

// -----

// llm.model is a #llm.model on a module: the dictionary older hetc wrote is
// refused with the fix.
// expected-error @+1 {{expects 'llm.model' only on a module, as a #llm.model attribute (hetc import writes it)}}
module attributes {llm.model = {architecture = "llama", layers = 1 : i64}} {
}

// -----

module {
  // expected-error @+1 {{expects 'llm.model' only on a module}}
  func.func @f() attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
    return
  }
}

// -----

// expected-error @+1 {{has unknown llm attribute 'llm.shape'; the llm dialect defines 'llm.model' on modules, 'llm.sequence_per_token' on batched decode functions, 'llm.matmul_weight' on lowered matmuls and 'llm.attention_scores' and 'llm.attention_values' on the products of tiled attention}}
module attributes {llm.shape = 1} {
}

// -----

// llm.matmul_weight names a storage type a weight can have.
func.func @matmul_weight_not_a_storage_type(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expects 'llm.matmul_weight' to be the weight's storage type (f32, f16, bf16 or !llm.quant), got i32}}
  %y = arith.addf %x, %x {llm.matmul_weight = i32} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @matmul_weight_not_a_type(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expects 'llm.matmul_weight' to be the weight's storage type}}
  %y = arith.addf %x, %x {llm.matmul_weight = 3 : i64} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// The tiled attention's tags mark products only: unit attributes on generics.
func.func @attention_tag_not_on_a_generic(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expects 'llm.attention_scores' as a unit attribute on a linalg.generic (a product of a tiled attention step), got 1}}
  %y = arith.addf %x, %x {llm.attention_scores = 1} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// llm.sequence_per_token marks a function whose tokens are sequences of
// their own (a batched decode step).
// expected-error @+1 {{expects 'llm.sequence_per_token' as a unit attribute on a function (a batched decode step), got 1 : i64}}
module attributes {llm.sequence_per_token = 1} {
}
