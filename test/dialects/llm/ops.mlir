// RUN: hetc-opt %s --split-input-file | hetc-opt --split-input-file | FileCheck %s
// RUN: hetc-opt %s --split-input-file --mlir-print-op-generic | hetc-opt --split-input-file | FileCheck %s

// Round-trip of every llm op and type, in custom and generic form: what a user
// writes must read back unchanged.

// Weights are declared once by their model-file names and referred to by symbol;
// block-quantized formats are element types.
// CHECK-LABEL: llm.weight @token_embd.weight : tensor<512x64xf32>
// CHECK: llm.weight @blk.0.attn_q.weight : tensor<64x64x!llm.quant<q8_0>>
// CHECK: llm.weight @q4_0 : tensor<8x64x!llm.quant<q4_0>>
// CHECK: llm.weight @q4_k : tensor<8x256x!llm.quant<q4_k>>
// CHECK: llm.weight @q6_k : tensor<8x512x!llm.quant<q6_k>>
// CHECK: llm.weight @q2_k : tensor<8x256x!llm.quant<q2_k>>
// CHECK: llm.weight @q3_k : tensor<8x256x!llm.quant<q3_k>>
// CHECK: llm.weight @q5_k : tensor<8x256x!llm.quant<q5_k>>
// CHECK: llm.weight @f16 : tensor<8x64xf16>
// CHECK: llm.weight @bf16 : tensor<8x64xbf16>
// CHECK: llm.weight @bound {data_offset = 1024 : i64} : tensor<8xf32>
// CHECK-LABEL: func.func @weights
// CHECK: %{{.+}} = llm.get_weight @blk.0.attn_q.weight : tensor<64x64x!llm.quant<q8_0>>
llm.weight @token_embd.weight : tensor<512x64xf32>
llm.weight @"blk.0.attn_q.weight" : tensor<64x64x!llm.quant<q8_0>>
llm.weight @q4_0 : tensor<8x64x!llm.quant<q4_0>>
llm.weight @q4_k : tensor<8x256x!llm.quant<q4_k>>
llm.weight @q6_k : tensor<8x512x!llm.quant<q6_k>>
llm.weight @q2_k : tensor<8x256x!llm.quant<q2_k>>
llm.weight @q3_k : tensor<8x256x!llm.quant<q3_k>>
llm.weight @q5_k : tensor<8x256x!llm.quant<q5_k>>
llm.weight @f16 : tensor<8x64xf16>
llm.weight @bf16 : tensor<8x64xbf16>
llm.weight @bound {data_offset = 1024 : i64} : tensor<8xf32>
func.func @weights() -> tensor<64x64x!llm.quant<q8_0>> {
  %w = llm.get_weight @"blk.0.attn_q.weight" : tensor<64x64x!llm.quant<q8_0>>
  return %w : tensor<64x64x!llm.quant<q8_0>>
}

// -----

// Embedding lookup, norms, bias and elementwise ops on [tokens, dim] activations.
// CHECK-LABEL: func.func @embedding_norms_elementwise
// CHECK-SAME: (%[[TOK:.+]]: tensor<?xi32>, %[[TABLE:.+]]: tensor<512x64x!llm.quant<q4_0>>, %[[W:.+]]: tensor<64xf32>)
func.func @embedding_norms_elementwise(%tokens: tensor<?xi32>, %table: tensor<512x64x!llm.quant<q4_0>>, %w: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[X:.+]] = llm.embedding %[[TOK]], %[[TABLE]] : (tensor<?xi32>, tensor<512x64x!llm.quant<q4_0>>) -> tensor<?x64xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<512x64x!llm.quant<q4_0>>) -> tensor<?x64xf32>
  // CHECK: %[[N:.+]] = llm.rms_norm %[[X]], %[[W]] eps = 9.99999974E-6 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %n = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: llm.rms_norm %[[X]], %[[W]] eps = 9.99999997E-7 unit_offset :
  %g = llm.rms_norm %x, %w eps = 1.0e-06 unit_offset : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: llm.layer_norm %[[X]], %[[W]], %[[W]] eps = 9.99999974E-6 : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %ln = llm.layer_norm %x, %w, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: llm.layer_norm %[[X]], %[[W]] eps = 9.99999974E-6 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %ln2 = llm.layer_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: llm.bias_add %[[N]], %[[W]] : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %b = llm.bias_add %n, %w : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: llm.add
  %a = llm.add %b, %g : tensor<?x64xf32>
  // CHECK: llm.scale %{{.+}} by 8.000000e+00 : tensor<?x64xf32>
  %s = llm.scale %a by 8.0 : tensor<?x64xf32>
  // CHECK: llm.silu %{{.+}} : tensor<?x64xf32>
  %si = llm.silu %s : tensor<?x64xf32>
  // CHECK: llm.gelu %{{.+}} approximate = tanh : tensor<?x64xf32>
  %ge = llm.gelu %s approximate = tanh : tensor<?x64xf32>
  // CHECK: llm.gelu %{{.+}} approximate = none : tensor<?x64xf32>
  %ge2 = llm.gelu %s approximate = none : tensor<?x64xf32>
  // CHECK: llm.glu silu %{{.+}}, %{{.+}} : tensor<?x64xf32>
  %gl = llm.glu silu %si, %ge : tensor<?x64xf32>
  // CHECK: llm.glu gelu %{{.+}}, %{{.+}} : tensor<?x64xf32>
  %gl2 = llm.glu gelu %gl, %ge2 : tensor<?x64xf32>
  // CHECK: llm.glu gelu_tanh
  %gl3 = llm.glu gelu_tanh %gl2, %ln : tensor<?x64xf32>
  // CHECK: llm.softmax %{{.+}} : tensor<?x64xf32>
  %sm = llm.softmax %gl3 : tensor<?x64xf32>
  %r = llm.add %sm, %ln2 : tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Matmul against float and block-quantized weights, and explicit (de)quantization.
// CHECK-LABEL: func.func @matmul_quant
func.func @matmul_quant(%x: tensor<?x256xf32>, %w0: tensor<128x256x!llm.quant<q4_k>>, %w1: tensor<128x256xf16>, %w2: tensor<128x256xbf16>) -> tensor<?x128xf32> {
  // CHECK: llm.matmul %{{.+}}, %{{.+}} : (tensor<?x256xf32>, tensor<128x256x!llm.quant<q4_k>>) -> tensor<?x128xf32>
  %a = llm.matmul %x, %w0 : (tensor<?x256xf32>, tensor<128x256x!llm.quant<q4_k>>) -> tensor<?x128xf32>
  // CHECK: llm.matmul %{{.+}}, %{{.+}} : (tensor<?x256xf32>, tensor<128x256xf16>) -> tensor<?x128xf32>
  %b = llm.matmul %x, %w1 : (tensor<?x256xf32>, tensor<128x256xf16>) -> tensor<?x128xf32>
  // CHECK: llm.matmul %{{.+}}, %{{.+}} : (tensor<?x256xf32>, tensor<128x256xbf16>) -> tensor<?x128xf32>
  %c = llm.matmul %x, %w2 : (tensor<?x256xf32>, tensor<128x256xbf16>) -> tensor<?x128xf32>
  // CHECK: %[[Q:.+]] = llm.quantize %{{.+}} : tensor<?x128xf32> -> tensor<?x128x!llm.quant<q8_0>>
  %q = llm.quantize %a : tensor<?x128xf32> -> tensor<?x128x!llm.quant<q8_0>>
  // CHECK: llm.dequantize %[[Q]] : tensor<?x128x!llm.quant<q8_0>> -> tensor<?x128xf32>
  %d = llm.dequantize %q : tensor<?x128x!llm.quant<q8_0>> -> tensor<?x128xf32>
  %s = llm.add %b, %c : tensor<?x128xf32>
  %r = llm.add %s, %d : tensor<?x128xf32>
  return %r : tensor<?x128xf32>
}

// -----

// RoPE in both pairings with the optional scaling clauses, KV-cache append and
// attention with every optional clause.
!cache = !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
!qcache = !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = !llm.quant<q8_0>>
// CHECK-LABEL: func.func @rope_attention
// CHECK-SAME: !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
// CHECK-SAME: !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = !llm.quant<q8_0>>
func.func @rope_attention(%q: tensor<?x32x128xf32>, %k: tensor<?x8x128xf32>, %v: tensor<?x8x128xf32>, %pos: tensor<?xi32>, %cache: !cache, %qcache: !qcache, %ff: tensor<32xf32>) -> (tensor<?x32x128xf32>, !qcache) {
  // CHECK: llm.rope %{{.+}} at %{{.+}} mode = normal theta = 1.000000e+04 dims = 128 : (tensor<?x32x128xf32>, tensor<?xi32>) -> tensor<?x32x128xf32>
  %q1 = llm.rope %q at %pos mode = normal theta = 10000.0 dims = 128 : (tensor<?x32x128xf32>, tensor<?xi32>) -> tensor<?x32x128xf32>
  // CHECK: llm.rope %{{.+}} at %{{.+}} mode = neox theta = 5.000000e+05 dims = 64 freq_factors(%{{.+}}) scaling linear factor = 2.000000e+00 :
  %q2 = llm.rope %q1 at %pos mode = neox theta = 500000.0 dims = 64 freq_factors(%ff) scaling linear factor = 2.0 : (tensor<?x32x128xf32>, tensor<?xi32>, tensor<32xf32>) -> tensor<?x32x128xf32>
  // CHECK: llm.rope %{{.+}} scaling yarn factor = 4.000000e+00 {original_context = 4096 : i64}
  %k1 = llm.rope %k at %pos mode = neox theta = 10000.0 dims = 128 scaling yarn factor = 4.0 {original_context = 4096} : (tensor<?x8x128xf32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  // CHECK: %[[C:.+]] = llm.kv_append %{{.+}}, %{{.+}} into %{{.+}} at %{{.+}} : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>, tensor<?xi32>) -> !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
  %c1 = llm.kv_append %k1, %v into %cache at %pos : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !cache, tensor<?xi32>) -> !cache
  // CHECK: llm.attention %{{.+}}, %[[C]] at %{{.+}} causal : (tensor<?x32x128xf32>, !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>, tensor<?xi32>) -> tensor<?x32x128xf32>
  %o1 = llm.attention %q2, %c1 at %pos causal : (tensor<?x32x128xf32>, !cache, tensor<?xi32>) -> tensor<?x32x128xf32>
  // CHECK: llm.attention %{{.+}}, %[[C]] at %{{.+}} causal window = 4096 scale = 1.250000e-01 softcap = 5.000000e+01 :
  %o2 = llm.attention %o1, %c1 at %pos causal window = 4096 scale = 0.125 softcap = 50.0 : (tensor<?x32x128xf32>, !cache, tensor<?xi32>) -> tensor<?x32x128xf32>
  // Non-causal attention (an encoder or a prefix) has no clause.
  // CHECK: llm.attention %{{.+}}, %[[C]] at %{{.+}} : (
  %o3 = llm.attention %o2, %c1 at %pos : (tensor<?x32x128xf32>, !cache, tensor<?xi32>) -> tensor<?x32x128xf32>
  // CHECK: llm.kv_append {{.+}} -> !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = !llm.quant<q8_0>>
  %qc = llm.kv_append %k1, %v into %qcache at %pos : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !qcache, tensor<?xi32>) -> !qcache
  return %o3, %qc : tensor<?x32x128xf32>, !qcache
}

// -----

// A paged cache: both ops find positions through the block table.
!cache = !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16>
// CHECK-LABEL: func.func @paged
func.func @paged(%q: tensor<?x32x128xf32>, %k: tensor<?x8x128xf32>, %pos: tensor<?xi32>, %blocks: tensor<?xi32>, %cache: !cache) -> tensor<?x32x128xf32> {
  // CHECK: %[[C:.+]] = llm.kv_append %{{.+}}, %{{.+}} into %{{.+}} at %{{.+}} pages %[[B:.+]] block_size = 64 : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !llm.kv_cache<{{.+}}>, tensor<?xi32>, tensor<?xi32>) -> !llm.kv_cache
  %c1 = llm.kv_append %k, %k into %cache at %pos pages %blocks block_size = 64 : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> !cache
  // CHECK: llm.attention %{{.+}}, %[[C]] at %{{.+}} pages %[[B]] block_size = 64 causal window = 256 :
  %o = llm.attention %q, %c1 at %pos pages %blocks block_size = 64 causal window = 256 : (tensor<?x32x128xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> tensor<?x32x128xf32>
  return %o : tensor<?x32x128xf32>
}

// -----

// Mixture of experts: router top-k, expert matmuls in both input forms, combine.
// CHECK-LABEL: func.func @moe
func.func @moe(%x: tensor<?x64xf32>, %router: tensor<8x64xf32>, %gate: tensor<8x128x64x!llm.quant<q4_0>>, %down: tensor<8x64x128x!llm.quant<q8_0>>) -> tensor<?x64xf32> {
  %logits = llm.matmul %x, %router : (tensor<?x64xf32>, tensor<8x64xf32>) -> tensor<?x8xf32>
  // CHECK: %[[W:.+]], %[[IDX:.+]] = llm.moe_router %{{.+}} top_k = 2 normalize : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  %w, %idx = llm.moe_router %logits top_k = 2 normalize : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  // CHECK: llm.moe_router %{{.+}} top_k = 1 : (tensor<?x8xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %w1, %idx1 = llm.moe_router %logits top_k = 1 : (tensor<?x8xf32>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  // CHECK: %[[G:.+]] = llm.expert_matmul %{{.+}}, %{{.+}}[%[[IDX]]] : (tensor<?x64xf32>, tensor<8x128x64x!llm.quant<q4_0>>, tensor<?x2xi32>) -> tensor<?x2x128xf32>
  %g = llm.expert_matmul %x, %gate[%idx] : (tensor<?x64xf32>, tensor<8x128x64x!llm.quant<q4_0>>, tensor<?x2xi32>) -> tensor<?x2x128xf32>
  %h = llm.silu %g : tensor<?x2x128xf32>
  // CHECK: %[[D:.+]] = llm.expert_matmul %{{.+}}, %{{.+}}[%[[IDX]]] : (tensor<?x2x128xf32>, tensor<8x64x128x!llm.quant<q8_0>>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  %d = llm.expert_matmul %h, %down[%idx] : (tensor<?x2x128xf32>, tensor<8x64x128x!llm.quant<q8_0>>, tensor<?x2xi32>) -> tensor<?x2x64xf32>
  // CHECK: llm.moe_combine %[[D]], %[[W]] : (tensor<?x2x64xf32>, tensor<?x2xf32>) -> tensor<?x64xf32>
  %y = llm.moe_combine %d, %w : (tensor<?x2x64xf32>, tensor<?x2xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Logits for the last token or every token, and sampling with and without the
// optional clauses.
// CHECK-LABEL: func.func @logits_sample
func.func @logits_sample(%h: tensor<?x256xf32>, %out: tensor<512x256x!llm.quant<q6_k>>, %tied: tensor<512x256xf16>, %history: tensor<?xi32>) -> (tensor<1xi32>, tensor<1xi32>, tensor<?x512xf32>) {
  // CHECK: %[[L:.+]] = llm.logits %{{.+}}, %{{.+}} : (tensor<?x256xf32>, tensor<512x256x!llm.quant<q6_k>>) -> tensor<1x512xf32>
  %l = llm.logits %h, %out : (tensor<?x256xf32>, tensor<512x256x!llm.quant<q6_k>>) -> tensor<1x512xf32>
  // CHECK: llm.logits %{{.+}}, %{{.+}} all_tokens softcap = 3.000000e+01 : (tensor<?x256xf32>, tensor<512x256xf16>) -> tensor<?x512xf32>
  %all = llm.logits %h, %tied all_tokens softcap = 30.0 : (tensor<?x256xf32>, tensor<512x256xf16>) -> tensor<?x512xf32>
  // CHECK: llm.sample %[[L]] temperature = 0.000000e+00 top_k = 0 top_p = 1.000000e+00 seed = 0 : (tensor<1x512xf32>) -> tensor<1xi32>
  %greedy = llm.sample %l temperature = 0.0 top_k = 0 top_p = 1.0 seed = 0 : (tensor<1x512xf32>) -> tensor<1xi32>
  // CHECK: llm.sample %[[L]] history(%{{.+}}) temperature = 8.000000e-01 top_k = 40 top_p = 0.949999988 repetition_penalty = 1.100000e+00 seed = 42 : (tensor<1x512xf32>, tensor<?xi32>) -> tensor<1xi32>
  %t = llm.sample %l history(%history) temperature = 0.8 top_k = 40 top_p = 0.95 repetition_penalty = 1.1 seed = 42 : (tensor<1x512xf32>, tensor<?xi32>) -> tensor<1xi32>
  return %greedy, %t, %all : tensor<1xi32>, tensor<1xi32>, tensor<?x512xf32>
}
