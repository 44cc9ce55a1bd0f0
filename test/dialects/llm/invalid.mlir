// RUN: hetc-opt %s --split-input-file --verify-diagnostics

// Verifier-error cases of the llm dialect: one case per rule listed in the op
// descriptions of dialects/llm/LLMOps.td, plus the checks of the KV cache type.

//===----------------------------------------------------------------------===//
// !llm.kv_cache
//===----------------------------------------------------------------------===//

// A cache with no positions cannot hold anything.
// expected-error @+1 {{kv_cache capacity must be positive, got 0}}
func.func @kv_cache_capacity_not_positive(%c: !llm.kv_cache<capacity = 0, kvHeads = 4, headDim = 8, elementType = f16>) {
  return
}

// -----

// A cache needs at least one KV head.
// expected-error @+1 {{kv_cache kvHeads must be positive, got 0}}
func.func @kv_cache_kv_heads_not_positive(%c: !llm.kv_cache<capacity = 512, kvHeads = 0, headDim = 8, elementType = f16>) {
  return
}

// -----

// A negative head dimension is meaningless.
// expected-error @+1 {{kv_cache headDim must be positive, got -8}}
func.func @kv_cache_head_dim_not_positive(%c: !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = -8, elementType = f16>) {
  return
}

// -----

// A block-quantized cache stores each head row as whole blocks.
// expected-error @+1 {{kv_cache headDim (48) must be a multiple of the q8_0 block size (32)}}
func.func @kv_cache_quant_head_dim_not_block_aligned(%c: !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 48, elementType = !llm.quant<q8_0>>) {
  return
}

// -----

// Integer caches are not a storage format the runtime has.
// expected-error @+1 {{kv_cache elementType must be f32, f16, bf16 or !llm.quant, got 'i32'}}
func.func @kv_cache_element_type_not_float(%c: !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = i32>) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.weight
//===----------------------------------------------------------------------===//

// C1: a weight lives in the model file, so its size must be known.
// expected-error @+1 {{expects a static shape for weight @weight_c1_dynamic_shape, got 'tensor<?x64xf32>'}}
llm.weight @weight_c1_dynamic_shape : tensor<?x64xf32>

// -----

// C2: a Q4_0 row of 48 elements is not a whole number of 32-element blocks.
// expected-error @+1 {{expects the inner dimension of weight (48) to be a multiple of the q4_0 block size (32)}}
llm.weight @weight_c2_not_block_aligned : tensor<64x48x!llm.quant<q4_0>>

// -----

//===----------------------------------------------------------------------===//
// llm.get_weight
//===----------------------------------------------------------------------===//

// C1: the symbol must be declared by an llm.weight op.
func.func @get_weight_c1_unknown_symbol() {
  // expected-error @+1 {{expects @missing to name an llm.weight op}}
  %0 = llm.get_weight @missing : tensor<64xf32>
  return
}

// -----

// C1: a symbol that exists but is not an llm.weight (here a function) is rejected too.
func.func @get_weight_c1_symbol_not_a_weight() {
  // expected-error @+1 {{expects @get_weight_c1_symbol_not_a_weight to name an llm.weight op}}
  %0 = llm.get_weight @get_weight_c1_symbol_not_a_weight : tensor<64xf32>
  return
}

// -----

// C2: the use must see the declared type, not a reinterpretation of it.
llm.weight @w : tensor<64x64x!llm.quant<q8_0>>
func.func @get_weight_c2_type_mismatch() {
  // expected-error @+1 {{expects result type 'tensor<64x64xf32>' to equal the declared weight type 'tensor<64x64x!llm.quant<q8_0>>'}}
  %0 = llm.get_weight @w : tensor<64x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.embedding
//===----------------------------------------------------------------------===//

// C1: tokens are a flat list of ids.
func.func @embedding_c1_tokens_not_1d(%tok: tensor<1x4xi32>, %t: tensor<512x64xf32>) {
  // expected-error @+1 {{expects tokens to have rank 1, got rank 2 ('tensor<1x4xi32>')}}
  %0 = llm.embedding %tok, %t : (tensor<1x4xi32>, tensor<512x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: the table is [vocab, dim].
func.func @embedding_c2_table_not_2d(%tok: tensor<?xi32>, %t: tensor<512xf32>) {
  // expected-error @+1 {{expects table to have rank 2, got rank 1 ('tensor<512xf32>')}}
  %0 = llm.embedding %tok, %t : (tensor<?xi32>, tensor<512xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C3: each row of a Q8_0 table must be whole blocks.
func.func @embedding_c3_table_not_block_aligned(%tok: tensor<?xi32>, %t: tensor<512x48x!llm.quant<q8_0>>) {
  // expected-error @+1 {{expects the inner dimension of table (48) to be a multiple of the q8_0 block size (32)}}
  %0 = llm.embedding %tok, %t : (tensor<?xi32>, tensor<512x48x!llm.quant<q8_0>>) -> tensor<?x48xf32>
  return
}

// -----

// C4: the result is [tokens, dim]; a 1-D result is not.
func.func @embedding_c4_result_not_2d(%tok: tensor<?xi32>, %t: tensor<512x64xf32>) {
  // expected-error @+1 {{expects result to have rank 2, got rank 1 ('tensor<64xf32>')}}
  %0 = llm.embedding %tok, %t : (tensor<?xi32>, tensor<512x64xf32>) -> tensor<64xf32>
  return
}

// -----

// C4: one result row per token.
func.func @embedding_c4_result_token_count(%tok: tensor<4xi32>, %t: tensor<512x64xf32>) {
  // expected-error @+1 {{expects dimension 0 of result (3) to equal the token count (4)}}
  %0 = llm.embedding %tok, %t : (tensor<4xi32>, tensor<512x64xf32>) -> tensor<3x64xf32>
  return
}

// -----

// C4: the result rows have the table's row length.
func.func @embedding_c4_result_row_length(%tok: tensor<?xi32>, %t: tensor<512x64xf32>) {
  // expected-error @+1 {{expects dimension 1 of result (32) to equal the table row length (64)}}
  %0 = llm.embedding %tok, %t : (tensor<?xi32>, tensor<512x64xf32>) -> tensor<?x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.rms_norm
//===----------------------------------------------------------------------===//

// C1: the weight is a vector, not a matrix.
func.func @rms_norm_c1_weight_not_1d(%x: tensor<?x64xf32>, %w: tensor<1x64xf32>) {
  // expected-error @+1 {{expects weight to have rank 1, got rank 2 ('tensor<1x64xf32>')}}
  %0 = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<1x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C1: the weight has one entry per feature of the input.
func.func @rms_norm_c1_weight_size(%x: tensor<?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{expects dimension 0 of weight (32) to equal the innermost dimension of input (64)}}
  %0 = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C1: a scalar input has no innermost dimension to normalize over.
func.func @rms_norm_c1_input_rank_0(%x: tensor<f32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects input to have rank at least 1}}
  %0 = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<f32>, tensor<64xf32>) -> tensor<f32>
  return
}

// -----

// C2: normalization keeps the input type.
func.func @rms_norm_c2_result_type(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects result type 'tensor<?x64xf16>' to equal input type 'tensor<?x64xf32>'}}
  %0 = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf16>
  return
}

// -----

// C3: a zero epsilon divides by zero on an all-zero row.
func.func @rms_norm_c3_epsilon_not_positive(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects epsilon to be positive and finite, got 0.000000e+00}}
  %0 = llm.rms_norm %x, %w eps = 0.0 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.layer_norm
//===----------------------------------------------------------------------===//

// C1: the weight has one entry per feature of the input.
func.func @layer_norm_c1_weight_size(%x: tensor<?x64xf32>, %w: tensor<32xf32>) {
  // expected-error @+1 {{expects dimension 0 of weight (32) to equal the innermost dimension of input (64)}}
  %0 = llm.layer_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: normalization keeps the input type.
func.func @layer_norm_c2_result_type(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects result type 'tensor<4x64xf32>' to equal input type 'tensor<?x64xf32>'}}
  %0 = llm.layer_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  return
}

// -----

// C3: a negative epsilon can make the variance term negative.
func.func @layer_norm_c3_epsilon_not_positive(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects epsilon to be positive and finite, got -1.000000e+00}}
  %0 = llm.layer_norm %x, %w eps = -1.0 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C4: the bias pairs with the weight entry by entry.
func.func @layer_norm_c4_bias_type(%x: tensor<?x64xf32>, %w: tensor<64xf32>, %b: tensor<64xf16>) {
  // expected-error @+1 {{expects bias type 'tensor<64xf16>' to equal weight type 'tensor<64xf32>'}}
  %0 = llm.layer_norm %x, %w, %b eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf16>) -> tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.add
//===----------------------------------------------------------------------===//

// C1 (SameOperandsAndResultType): residual adds do not broadcast; the custom
// syntax has one type, so the generic form states the mismatch.
func.func @add_c1_operand_types_differ(%a: tensor<?x64xf32>, %b: tensor<?x32xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.add"(%a, %b) : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.scale
//===----------------------------------------------------------------------===//

// C1 (SameOperandsAndResultType): scaling does not change the element type.
func.func @scale_c1_result_type(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.scale"(%x) <{factor = 2.0 : f32}> : (tensor<?x64xf32>) -> tensor<?x64xf16>
  return
}

// -----

// C2: an infinite factor turns every element into inf or NaN.
func.func @scale_c2_factor_not_finite(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{expects factor to be finite, got INF}}
  %0 = llm.scale %x by 0x7F800000 : tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.bias_add
//===----------------------------------------------------------------------===//

// C1: one bias entry per feature of the input.
func.func @bias_add_c1_bias_size(%x: tensor<?x64xf32>, %b: tensor<32xf32>) {
  // expected-error @+1 {{expects dimension 0 of bias (32) to equal the innermost dimension of input (64)}}
  %0 = llm.bias_add %x, %b : (tensor<?x64xf32>, tensor<32xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: adding a bias keeps the input type.
func.func @bias_add_c2_result_type(%x: tensor<?x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{expects result type 'tensor<?x64xbf16>' to equal input type 'tensor<?x64xf32>'}}
  %0 = llm.bias_add %x, %b : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.silu, llm.gelu, llm.glu, llm.softmax
//===----------------------------------------------------------------------===//

// silu C1 (SameOperandsAndResultType): activations are elementwise.
func.func @silu_c1_result_type(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.silu"(%x) : (tensor<?x64xf32>) -> tensor<?x32xf32>
  return
}

// -----

// gelu C1 (SameOperandsAndResultType): activations are elementwise.
func.func @gelu_c1_result_type(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.gelu"(%x) <{approximate = 1 : i32}> : (tensor<?x64xf32>) -> tensor<?x64xf16>
  return
}

// -----

// glu C1 (SameOperandsAndResultType): gate and up are multiplied elementwise.
func.func @glu_c1_gate_up_types_differ(%g: tensor<?x64xf32>, %u: tensor<?x32xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.glu"(%g, %u) <{activation = 0 : i32}> : (tensor<?x64xf32>, tensor<?x32xf32>) -> tensor<?x64xf32>
  return
}

// -----

// softmax C1 (SameOperandsAndResultType): probabilities have the logits' type.
func.func @softmax_c1_result_type(%x: tensor<1x512xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "llm.softmax"(%x) : (tensor<1x512xf32>) -> tensor<1x256xf32>
  return
}

// -----

// softmax C2: a scalar has no innermost dimension to normalize over.
func.func @softmax_c2_rank_0(%x: tensor<f32>) {
  // expected-error @+1 {{expects input to have rank at least 1}}
  %0 = llm.softmax %x : tensor<f32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.matmul
//===----------------------------------------------------------------------===//

// C1: activations are [tokens, in]; per-head 3-D values must be reshaped first.
func.func @matmul_c1_input_not_2d(%x: tensor<?x8x8xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{expects input to have rank 2, got rank 3 ('tensor<?x8x8xf32>')}}
  %0 = llm.matmul %x, %w : (tensor<?x8x8xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C1: the weight is a [out, in] matrix.
func.func @matmul_c1_weight_not_2d(%x: tensor<?x64xf32>, %w: tensor<64xf32>) {
  // expected-error @+1 {{expects weight to have rank 2, got rank 1 ('tensor<64xf32>')}}
  %0 = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: the weight is [out, in], so it is the second dimension that must match
// (here the weight is written transposed).
func.func @matmul_c2_inner_dims_differ(%x: tensor<?x64xf32>, %w: tensor<64x128xf32>) {
  // expected-error @+1 {{expects the inner dimension of input (64) to equal the inner dimension of weight (128)}}
  %0 = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<64x128xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C3: a Q4_0 weight row of 48 elements is not a whole number of blocks.
func.func @matmul_c3_weight_not_block_aligned(%x: tensor<?x48xf32>, %w: tensor<64x48x!llm.quant<q4_0>>) {
  // expected-error @+1 {{expects the inner dimension of weight (48) to be a multiple of the q4_0 block size (32)}}
  %0 = llm.matmul %x, %w : (tensor<?x48xf32>, tensor<64x48x!llm.quant<q4_0>>) -> tensor<?x64xf32>
  return
}

// -----

// C4: the result has the weight's row count as its features.
func.func @matmul_c4_result_columns(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>) {
  // expected-error @+1 {{expects dimension 1 of result (64) to equal the rows of weight (128)}}
  %0 = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C4: the result keeps the input's token count.
func.func @matmul_c4_result_rows(%x: tensor<4x64xf32>, %w: tensor<64x64xf32>) {
  // expected-error @+1 {{expects dimension 0 of result (2) to equal the rows of input (4)}}
  %0 = llm.matmul %x, %w : (tensor<4x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.quantize, llm.dequantize
//===----------------------------------------------------------------------===//

// quantize C1: quantization changes the storage, not the shape.
func.func @quantize_c1_shape_differs(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{expects operand and result to have the same shape, got 'tensor<?x64xf32>' and 'tensor<?x32x!llm.quant<q8_0>>'}}
  %0 = llm.quantize %x : tensor<?x64xf32> -> tensor<?x32x!llm.quant<q8_0>>
  return
}

// -----

// quantize C2: only whole blocks can be quantized.
func.func @quantize_c2_not_block_aligned(%x: tensor<?x48xf32>) {
  // expected-error @+1 {{expects the inner dimension of the quantized tensor (48) to be a multiple of the q8_0 block size (32)}}
  %0 = llm.quantize %x : tensor<?x48xf32> -> tensor<?x48x!llm.quant<q8_0>>
  return
}

// -----

// dequantize C1: dequantization changes the storage, not the shape.
func.func @dequantize_c1_shape_differs(%q: tensor<?x64x!llm.quant<q8_0>>) {
  // expected-error @+1 {{expects operand and result to have the same shape, got 'tensor<?x64x!llm.quant<q8_0>>' and 'tensor<?x32xf32>'}}
  %0 = llm.dequantize %q : tensor<?x64x!llm.quant<q8_0>> -> tensor<?x32xf32>
  return
}

// -----

// dequantize C2: a Q4_K tensor is made of 256-element blocks.
func.func @dequantize_c2_not_block_aligned(%q: tensor<4x128x!llm.quant<q4_k>>) {
  // expected-error @+1 {{expects the inner dimension of the quantized tensor (128) to be a multiple of the q4_k block size (256)}}
  %0 = llm.dequantize %q : tensor<4x128x!llm.quant<q4_k>> -> tensor<4x128xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.rope
//===----------------------------------------------------------------------===//

// C1: rope rotates within heads, so the input must be split into heads.
func.func @rope_c1_input_not_3d(%q: tensor<?x64xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects input to have rank 3, got rank 2 ('tensor<?x64xf32>')}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: positions are a flat list.
func.func @rope_c2_positions_not_1d(%q: tensor<?x8x8xf32>, %pos: tensor<?x1xi32>) {
  // expected-error @+1 {{expects positions to have rank 1, got rank 2 ('tensor<?x1xi32>')}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 : (tensor<?x8x8xf32>, tensor<?x1xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C2: one position per token.
func.func @rope_c2_positions_count(%q: tensor<4x8x8xf32>, %pos: tensor<3xi32>) {
  // expected-error @+1 {{expects dimension 0 of positions (3) to equal the token count of input (4)}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 : (tensor<4x8x8xf32>, tensor<3xi32>) -> tensor<4x8x8xf32>
  return
}

// -----

// C3: elements are rotated in pairs, so rotary_dim must be even.
func.func @rope_c3_rotary_dim_odd(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects rotary_dim (7) to be even and positive}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 7 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C3: rotating no dimensions is not rope.
func.func @rope_c3_rotary_dim_zero(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects rotary_dim (0) to be even and positive}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 0 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C3: cannot rotate more dimensions than a head has.
func.func @rope_c3_rotary_dim_exceeds_head_dim(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects rotary_dim (16) to be at most head_dim (8)}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 16 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C4: theta is the base of the frequency powers.
func.func @rope_c4_theta_not_positive(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects theta to be positive and finite, got 0.000000e+00}}
  %0 = llm.rope %q at %pos mode = normal theta = 0.0 dims = 8 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C5: one frequency factor per rotated pair: rotary_dim 8 needs 4.
func.func @rope_c5_freq_factors_size(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>, %ff: tensor<8xf32>) {
  // expected-error @+1 {{expects dimension 0 of freq_factors (8) to equal rotary_dim / 2 (4)}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 freq_factors(%ff) : (tensor<?x8x8xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C5: the frequency factors are a vector.
func.func @rope_c5_freq_factors_not_1d(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>, %ff: tensor<2x2xf32>) {
  // expected-error @+1 {{expects freq_factors to have rank 1, got rank 2 ('tensor<2x2xf32>')}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 freq_factors(%ff) : (tensor<?x8x8xf32>, tensor<?xi32>, tensor<2x2xf32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C6: a scaling factor without a scheme says nothing about how to apply it; the
// custom syntax ties the two, so the factor is given in the attribute dictionary.
func.func @rope_c6_factor_without_scaling(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects scaling and scaling_factor to be given together}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 {scaling_factor = 4.0 : f32} : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C6: a scheme without a factor (generic form: the custom syntax requires one).
func.func @rope_c6_scaling_without_factor(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects scaling and scaling_factor to be given together}}
  %0 = "llm.rope"(%q, %pos) <{mode = 0 : i32, theta = 1.0e+04 : f32, rotary_dim = 8 : i64, scaling = 1 : i32, operandSegmentSizes = array<i32: 1, 1, 0>}> : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C6: positions are divided by the factor, which must be positive.
func.func @rope_c6_scaling_factor_not_positive(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects scaling_factor to be positive and finite, got -2.000000e+00}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 scaling linear factor = -2.0 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C7: YaRN interpolates against the original training context, which must be given.
func.func @rope_c7_yarn_without_original_context(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects yarn scaling to have a positive original_context}}
  %0 = llm.rope %q at %pos mode = neox theta = 1.0e+04 dims = 8 scaling yarn factor = 4.0 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C7: a zero original context is as good as none.
func.func @rope_c7_yarn_original_context_zero(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects yarn scaling to have a positive original_context}}
  %0 = llm.rope %q at %pos mode = neox theta = 1.0e+04 dims = 8 scaling yarn factor = 4.0 {original_context = 0 : i64} : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// C8: rotation keeps the input type.
func.func @rope_c8_result_type(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects result type 'tensor<?x8x8xf16>' to equal input type 'tensor<?x8x8xf32>'}}
  %0 = llm.rope %q at %pos mode = normal theta = 1.0e+04 dims = 8 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.kv_append
//===----------------------------------------------------------------------===//

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C1: keys and values are written side by side, so they have one type.
func.func @kv_append_c1_values_type(%k: tensor<?x4x8xf32>, %v: tensor<?x4x8xf16>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects values type 'tensor<?x4x8xf16>' to equal keys type 'tensor<?x4x8xf32>'}}
  %0 = llm.kv_append %k, %v into %c at %pos : (tensor<?x4x8xf32>, tensor<?x4x8xf16>, !cache, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C2: keys are [tokens, kv_heads, head_dim].
func.func @kv_append_c2_keys_not_3d(%k: tensor<?x32xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects keys to have rank 3, got rank 2 ('tensor<?x32xf32>')}}
  %0 = llm.kv_append %k, %k into %c at %pos : (tensor<?x32xf32>, tensor<?x32xf32>, !cache, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C2: one key row per KV head of the cache.
func.func @kv_append_c2_kv_heads(%k: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects dimension 1 of keys (8) to equal the cache's kvHeads (4)}}
  %0 = llm.kv_append %k, %k into %c at %pos : (tensor<?x8x8xf32>, tensor<?x8x8xf32>, !cache, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C2: key rows have the cache's head dimension.
func.func @kv_append_c2_head_dim(%k: tensor<?x4x16xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects dimension 2 of keys (16) to equal the cache's headDim (8)}}
  %0 = llm.kv_append %k, %k into %c at %pos : (tensor<?x4x16xf32>, tensor<?x4x16xf32>, !cache, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C3: one cache position per appended token.
func.func @kv_append_c3_positions_count(%k: tensor<2x4x8xf32>, %c: !cache, %pos: tensor<3xi32>) {
  // expected-error @+1 {{expects dimension 0 of positions (3) to equal the token count of keys (2)}}
  %0 = llm.kv_append %k, %k into %c at %pos : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, !cache, tensor<3xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>
!other = !llm.kv_cache<capacity = 1024, kvHeads = 4, headDim = 8, elementType = f16>

// C4: appending does not resize or retype the cache.
func.func @kv_append_c4_result_type(%k: tensor<?x4x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects result type '!llm.kv_cache<capacity = 1024, kvHeads = 4, headDim = 8, elementType = f16>' to equal cache type '!llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>'}}
  %0 = llm.kv_append %k, %k into %c at %pos : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, !cache, tensor<?xi32>) -> !other
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.attention
//===----------------------------------------------------------------------===//

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C1: queries are [tokens, num_heads, head_dim].
func.func @attention_c1_query_not_3d(%q: tensor<?x64xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects query to have rank 3, got rank 2 ('tensor<?x64xf32>')}}
  %0 = llm.attention %q, %c at %pos : (tensor<?x64xf32>, !cache, tensor<?xi32>) -> tensor<?x64xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C2: queries and cached keys are dotted, so their head dims agree.
func.func @attention_c2_head_dim(%q: tensor<?x8x16xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects dimension 2 of query (16) to equal the cache's headDim (8)}}
  %0 = llm.attention %q, %c at %pos : (tensor<?x8x16xf32>, !cache, tensor<?xi32>) -> tensor<?x8x16xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C3: grouped-query attention shares each KV head among an equal number of query heads.
func.func @attention_c3_heads_not_multiple_of_kv_heads(%q: tensor<?x6x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects num_heads (6) to be a multiple of num_kv_heads (4)}}
  %0 = llm.attention %q, %c at %pos causal : (tensor<?x6x8xf32>, !cache, tensor<?xi32>) -> tensor<?x6x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C4: one position per query token.
func.func @attention_c4_positions_count(%q: tensor<2x8x8xf32>, %c: !cache, %pos: tensor<1xi32>) {
  // expected-error @+1 {{expects dimension 0 of positions (1) to equal the token count of query (2)}}
  %0 = llm.attention %q, %c at %pos causal : (tensor<2x8x8xf32>, !cache, tensor<1xi32>) -> tensor<2x8x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C5: an empty sliding window masks every position.
func.func @attention_c5_window_not_positive(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects window to be positive, got 0}}
  %0 = llm.attention %q, %c at %pos causal window = 0 : (tensor<?x8x8xf32>, !cache, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C6: a zero scale flattens every score.
func.func @attention_c6_scale_not_positive(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects scale to be positive and finite, got 0.000000e+00}}
  %0 = llm.attention %q, %c at %pos causal scale = 0.0 : (tensor<?x8x8xf32>, !cache, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C6: the soft cap divides the scores.
func.func @attention_c6_softcap_not_positive(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects softcap to be positive and finite, got -5.000000e+01}}
  %0 = llm.attention %q, %c at %pos causal softcap = -50.0 : (tensor<?x8x8xf32>, !cache, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C7: the output has one row per query head.
func.func @attention_c7_result_type(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects result type 'tensor<?x4x8xf32>' to equal query type 'tensor<?x8x8xf32>'}}
  %0 = llm.attention %q, %c at %pos causal : (tensor<?x8x8xf32>, !cache, tensor<?xi32>) -> tensor<?x4x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.moe_router
//===----------------------------------------------------------------------===//

// C1: router logits are [tokens, num_experts].
func.func @moe_router_c1_logits_not_2d(%l: tensor<8xf32>) {
  // expected-error @+1 {{expects logits to have rank 2, got rank 1 ('tensor<8xf32>')}}
  %w, %i = llm.moe_router %l top_k = 2 : (tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  return
}

// -----

// C2: every token goes to at least one expert.
func.func @moe_router_c2_top_k_zero(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{expects top_k (0) to be between 1 and num_experts (8)}}
  %w, %i = llm.moe_router %l top_k = 0 : (tensor<?x8xf32>) -> (tensor<?x0xf32>, tensor<?x0xi32>)
  return
}

// -----

// C2: cannot select more experts than there are.
func.func @moe_router_c2_top_k_exceeds_experts(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{expects top_k (9) to be between 1 and num_experts (8)}}
  %w, %i = llm.moe_router %l top_k = 9 : (tensor<?x8xf32>) -> (tensor<?x9xf32>, tensor<?x9xi32>)
  return
}

// -----

// C3: the weights hold top_k entries per token.
func.func @moe_router_c3_weights_top_k(%l: tensor<?x8xf32>) {
  // expected-error @+1 {{expects dimension 1 of weights (3) to equal top_k (2)}}
  %w, %i = llm.moe_router %l top_k = 2 : (tensor<?x8xf32>) -> (tensor<?x3xf32>, tensor<?x2xi32>)
  return
}

// -----

// C3: the indices hold one row per token.
func.func @moe_router_c3_indices_token_count(%l: tensor<4x8xf32>) {
  // expected-error @+1 {{expects dimension 0 of indices (5) to equal the token count of logits (4)}}
  %w, %i = llm.moe_router %l top_k = 2 : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<5x2xi32>)
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.expert_matmul
//===----------------------------------------------------------------------===//

// C1: stacked expert weights are [num_experts, out, in].
func.func @expert_matmul_c1_weight_not_3d(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects weight to have rank 3, got rank 2 ('tensor<64x64xf32>')}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C2: indices are the router's [tokens, top_k].
func.func @expert_matmul_c2_indices_not_2d(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{expects indices to have rank 2, got rank 1 ('tensor<?xi32>')}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<?xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C3: the input is [tokens, in] or [tokens, top_k, in], nothing else.
func.func @expert_matmul_c3_input_rank(%x: tensor<?xf32>, %w: tensor<8x64x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects input to be [tokens, in] or [tokens, top_k, in], got rank 1}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?xf32>, tensor<8x64x64xf32>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C3: the input has one row per token of the indices.
func.func @expert_matmul_c3_input_token_count(%x: tensor<3x64xf32>, %w: tensor<8x64x64xf32>, %i: tensor<4x2xi32>) {
  // expected-error @+1 {{expects dimension 0 of input (3) to equal the token count of indices (4)}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<3x64xf32>, tensor<8x64x64xf32>, tensor<4x2xi32>) -> tensor<4x2x64xf32>
  return
}

// -----

// C3: a 3-D input has one row per selected expert.
func.func @expert_matmul_c3_input_top_k(%x: tensor<?x3x64xf32>, %w: tensor<8x64x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects dimension 1 of input (3) to equal top_k of indices (2)}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x3x64xf32>, tensor<8x64x64xf32>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C3: the input's features match the experts' inner dimension.
func.func @expert_matmul_c3_input_inner_dim(%x: tensor<?x32xf32>, %w: tensor<8x64x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects dimension 1 of input (32) to equal the inner dimension of weight (64)}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x32xf32>, tensor<8x64x64xf32>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C4: Q4_K expert rows are 256-element blocks.
func.func @expert_matmul_c4_weight_not_block_aligned(%x: tensor<?x64xf32>, %w: tensor<8x64x64x!llm.quant<q4_k>>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects the inner dimension of weight (64) to be a multiple of the q4_k block size (256)}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x64xf32>, tensor<8x64x64x!llm.quant<q4_k>>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

// C5: the result is [tokens, top_k, out].
func.func @expert_matmul_c5_result_not_3d(%x: tensor<?x64xf32>, %w: tensor<8x64x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects result to have rank 3, got rank 2 ('tensor<?x64xf32>')}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x64xf32>, tensor<8x64x64xf32>, tensor<?x2xi32>) -> tensor<?x64xf32>
  return
}

// -----

// C5: the result rows have the experts' output size.
func.func @expert_matmul_c5_result_out_dim(%x: tensor<?x64xf32>, %w: tensor<8x128x64xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{expects dimension 2 of result (64) to equal the rows of weight (128)}}
  %0 = llm.expert_matmul %x, %w[%i] : (tensor<?x64xf32>, tensor<8x128x64xf32>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.moe_combine
//===----------------------------------------------------------------------===//

// C1: expert outputs are [tokens, top_k, dim].
func.func @moe_combine_c1_expert_out_not_3d(%e: tensor<?x64xf32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{expects expert_out to have rank 3, got rank 2 ('tensor<?x64xf32>')}}
  %0 = llm.moe_combine %e, %w : (tensor<?x64xf32>, tensor<?x2xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: one router weight per selected expert.
func.func @moe_combine_c2_weights_top_k(%e: tensor<?x2x64xf32>, %w: tensor<?x4xf32>) {
  // expected-error @+1 {{expects dimension 1 of weights (4) to equal top_k of expert_out (2)}}
  %0 = llm.moe_combine %e, %w : (tensor<?x2x64xf32>, tensor<?x4xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C2: the weights are [tokens, top_k].
func.func @moe_combine_c2_weights_not_2d(%e: tensor<?x2x64xf32>, %w: tensor<2xf32>) {
  // expected-error @+1 {{expects weights to have rank 2, got rank 1 ('tensor<2xf32>')}}
  %0 = llm.moe_combine %e, %w : (tensor<?x2x64xf32>, tensor<2xf32>) -> tensor<?x64xf32>
  return
}

// -----

// C3: the combined result has the experts' feature size.
func.func @moe_combine_c3_result_dim(%e: tensor<?x2x64xf32>, %w: tensor<?x2xf32>) {
  // expected-error @+1 {{expects dimension 1 of result (32) to equal the dim of expert_out (64)}}
  %0 = llm.moe_combine %e, %w : (tensor<?x2x64xf32>, tensor<?x2xf32>) -> tensor<?x32xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.logits
//===----------------------------------------------------------------------===//

// C1: hidden states are [tokens, dim].
func.func @logits_c1_hidden_not_2d(%h: tensor<64xf32>, %o: tensor<512x64xf32>) {
  // expected-error @+1 {{expects hidden to have rank 2, got rank 1 ('tensor<64xf32>')}}
  %0 = llm.logits %h, %o : (tensor<64xf32>, tensor<512x64xf32>) -> tensor<1x512xf32>
  return
}

// -----

// C2: the output matrix is [vocab, dim], matched on dim.
func.func @logits_c2_inner_dims_differ(%h: tensor<?x64xf32>, %o: tensor<512x32xf32>) {
  // expected-error @+1 {{expects the inner dimension of hidden (64) to equal the inner dimension of output (32)}}
  %0 = llm.logits %h, %o : (tensor<?x64xf32>, tensor<512x32xf32>) -> tensor<1x512xf32>
  return
}

// -----

// C3: a Q6_K output matrix needs rows of whole 256-element blocks.
func.func @logits_c3_output_not_block_aligned(%h: tensor<?x64xf32>, %o: tensor<512x64x!llm.quant<q6_k>>) {
  // expected-error @+1 {{expects the inner dimension of output (64) to be a multiple of the q6_k block size (256)}}
  %0 = llm.logits %h, %o : (tensor<?x64xf32>, tensor<512x64x!llm.quant<q6_k>>) -> tensor<1x512xf32>
  return
}

// -----

// C4: without all_tokens only the last token is projected.
func.func @logits_c4_rows_without_all_tokens(%h: tensor<4x64xf32>, %o: tensor<512x64xf32>) {
  // expected-error @+1 {{expects dimension 0 of result (4) to be 1, the last token; set all_tokens for logits of every token}}
  %0 = llm.logits %h, %o : (tensor<4x64xf32>, tensor<512x64xf32>) -> tensor<4x512xf32>
  return
}

// -----

// C4: with all_tokens there is one row per token.
func.func @logits_c4_rows_with_all_tokens(%h: tensor<4x64xf32>, %o: tensor<512x64xf32>) {
  // expected-error @+1 {{expects dimension 0 of result (1) to equal the token count of hidden (4)}}
  %0 = llm.logits %h, %o all_tokens : (tensor<4x64xf32>, tensor<512x64xf32>) -> tensor<1x512xf32>
  return
}

// -----

// C4: one logit per vocabulary entry.
func.func @logits_c4_vocab(%h: tensor<?x64xf32>, %o: tensor<512x64xf32>) {
  // expected-error @+1 {{expects dimension 1 of result (256) to equal the vocabulary size (512)}}
  %0 = llm.logits %h, %o : (tensor<?x64xf32>, tensor<512x64xf32>) -> tensor<1x256xf32>
  return
}

// -----

// C5: the soft cap divides the logits.
func.func @logits_c5_softcap_not_positive(%h: tensor<?x64xf32>, %o: tensor<512x64xf32>) {
  // expected-error @+1 {{expects softcap to be positive and finite, got 0.000000e+00}}
  %0 = llm.logits %h, %o softcap = 0.0 : (tensor<?x64xf32>, tensor<512x64xf32>) -> tensor<1x512xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// llm.sample
//===----------------------------------------------------------------------===//

// C1: logits are [rows, vocab].
func.func @sample_c1_logits_not_2d(%l: tensor<512xf32>) {
  // expected-error @+1 {{expects logits to have rank 2, got rank 1 ('tensor<512xf32>')}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 0.95 seed = 42 : (tensor<512xf32>) -> tensor<1xi32>
  return
}

// -----

// C2: one token per row.
func.func @sample_c2_result_rows(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects dimension 0 of result (2) to equal the rows of logits (1)}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 0.95 seed = 42 : (tensor<1x512xf32>) -> tensor<2xi32>
  return
}

// -----

// C2: the result is a flat list of tokens.
func.func @sample_c2_result_not_1d(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects result to have rank 1, got rank 2 ('tensor<1x1xi32>')}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 0.95 seed = 42 : (tensor<1x512xf32>) -> tensor<1x1xi32>
  return
}

// -----

// C3: a negative temperature would invert the distribution.
func.func @sample_c3_temperature_negative(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects temperature to be non-negative, got -5.000000e-01}}
  %0 = llm.sample %l temperature = -0.5 top_k = 40 top_p = 0.95 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C4: cannot keep more candidates than the vocabulary has.
func.func @sample_c4_top_k_exceeds_vocab(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects top_k (1000) to be between 0 and the vocabulary size (512)}}
  %0 = llm.sample %l temperature = 0.8 top_k = 1000 top_p = 0.95 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C4: a negative top_k is not "disabled" (that is 0).
func.func @sample_c4_top_k_negative(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects top_k (-1) to be between 0 and the vocabulary size (512)}}
  %0 = llm.sample %l temperature = 0.8 top_k = -1 top_p = 0.95 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C5: a nucleus of zero probability mass keeps nothing.
func.func @sample_c5_top_p_zero(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects top_p to be in (0, 1], got 0.000000e+00}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 0.0 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C5: probabilities do not exceed 1.
func.func @sample_c5_top_p_above_one(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects top_p to be in (0, 1], got 1.500000e+00}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 1.5 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C6: the penalty divides the logits of repeated tokens.
func.func @sample_c6_repetition_penalty_not_positive(%l: tensor<1x512xf32>, %h: tensor<?xi32>) {
  // expected-error @+1 {{expects repetition_penalty to be positive and finite, got 0.000000e+00}}
  %0 = llm.sample %l history(%h) temperature = 0.8 top_k = 40 top_p = 0.95 repetition_penalty = 0.0 seed = 42 : (tensor<1x512xf32>, tensor<?xi32>) -> tensor<1xi32>
  return
}

// -----

// C6: a repetition penalty needs the tokens to penalize.
func.func @sample_c6_repetition_penalty_without_history(%l: tensor<1x512xf32>) {
  // expected-error @+1 {{expects a history operand when repetition_penalty is set}}
  %0 = llm.sample %l temperature = 0.8 top_k = 40 top_p = 0.95 repetition_penalty = 1.1 seed = 42 : (tensor<1x512xf32>) -> tensor<1xi32>
  return
}

// -----

// C7: the history is a flat list of token ids.
func.func @sample_c7_history_not_1d(%l: tensor<1x512xf32>, %h: tensor<1x?xi32>) {
  // expected-error @+1 {{expects history to have rank 1, got rank 2 ('tensor<1x?xi32>')}}
  %0 = llm.sample %l history(%h) temperature = 0.8 top_k = 40 top_p = 0.95 seed = 42 : (tensor<1x512xf32>, tensor<1x?xi32>) -> tensor<1xi32>
  return
}

// -----

// Weight C2: a block-quantized tensor stores whole blocks along its innermost
// dimension, so a rank-0 quantized tensor cannot exist.
// expected-error @+1 {{'llm.weight' op expects weight to have an innermost dimension holding q4_0 blocks, got a rank-0 tensor}}
llm.weight @weight_c2_rank0_quantized : tensor<!llm.quant<q4_0>>

// -----

// Quantize C2: the same holds for activations quantized in the graph.
func.func @quantize_c2_rank0(%x: tensor<f32>) {
  // expected-error @+1 {{'llm.quantize' op expects the quantized tensor to have an innermost dimension holding q8_0 blocks, got a rank-0 tensor}}
  %q = llm.quantize %x : tensor<f32> -> tensor<!llm.quant<q8_0>>
  return
}

// -----

// RoPE C4: theta must be a finite positive base; infinity is rejected too.
func.func @rope_c4_theta_infinite(%q: tensor<?x8x8xf32>, %pos: tensor<?xi32>) {
  // expected-error @+1 {{'llm.rope' op expects theta to be positive and finite, got INF}}
  %r = llm.rope %q at %pos mode = normal theta = 0x7F800000 dims = 8 : (tensor<?x8x8xf32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

// Weight C3: a data offset locates the tensor in the model file's data section
// and cannot be negative.
// expected-error @+1 {{'llm.weight' op expects data_offset to be non-negative, got -32}}
llm.weight @weight_c3_negative_offset {data_offset = -32 : i64} : tensor<64xf32>

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// kv_append C5: a block table without its block size says nothing of where
// a position is.
func.func @kv_append_c5_table_without_size(%k: tensor<?x4x8xf32>, %c: !cache, %pos: tensor<?xi32>, %b: tensor<?xi32>) {
  // expected-error @+1 {{expects a block table (pages) and block_size together}}
  %0 = "llm.kv_append"(%k, %k, %c, %pos, %b) : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// kv_append C5: a block size without a table.
func.func @kv_append_c5_size_without_table(%k: tensor<?x4x8xf32>, %c: !cache, %pos: tensor<?xi32>) {
  // expected-error @+1 {{expects a block table (pages) and block_size together}}
  %0 = llm.kv_append %k, %k into %c at %pos {block_size = 64 : i64} : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, !cache, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// kv_append C5: the pool is whole blocks.
func.func @kv_append_c5_size_divides_capacity(%k: tensor<?x4x8xf32>, %c: !cache, %pos: tensor<?xi32>, %b: tensor<?xi32>) {
  // expected-error @+1 {{expects block_size (48) to be positive and divide the cache's capacity (512)}}
  %0 = llm.kv_append %k, %k into %c at %pos pages %b block_size = 48 : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// kv_append C5: a block size of 0 addresses nothing.
func.func @kv_append_c5_size_positive(%k: tensor<?x4x8xf32>, %c: !cache, %pos: tensor<?xi32>, %b: tensor<?xi32>) {
  // expected-error @+1 {{expects block_size (0) to be positive}}
  %0 = llm.kv_append %k, %k into %c at %pos pages %b block_size = 0 : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// attention C8: a table is a list of block ids, or a list per token.
func.func @attention_c8_table_rank(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>, %b: tensor<?x2x2xi32>) {
  // expected-error @+1 {{expects blocks to have rank 2, got rank 3}}
  %0 = llm.attention %q, %c at %pos pages %b block_size = 64 causal : (tensor<?x8x8xf32>, !cache, tensor<?xi32>, tensor<?x2x2xi32>) -> tensor<?x8x8xf32>
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// kv_append C5: a table per token has a row for each token.
func.func @kv_append_c5_table_rows(%k: tensor<4x4x8xf32>, %c: !cache, %pos: tensor<4xi32>, %b: tensor<3x8xi32>) {
  // expected-error @+1 {{expects dimension 0 of blocks (3) to equal the token count (4)}}
  %0 = llm.kv_append %k, %k into %c at %pos pages %b block_size = 64 : (tensor<4x4x8xf32>, tensor<4x4x8xf32>, !cache, tensor<4xi32>, tensor<3x8xi32>) -> !cache
  return
}

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// attention C8: a block table without its block size.
func.func @attention_c8_table_without_size(%q: tensor<?x8x8xf32>, %c: !cache, %pos: tensor<?xi32>, %b: tensor<?xi32>) {
  // expected-error @+1 {{expects a block table (pages) and block_size together}}
  %0 = "llm.attention"(%q, %c, %pos, %b) {causal} : (tensor<?x8x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> tensor<?x8x8xf32>
  return
}
