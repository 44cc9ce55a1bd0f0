// RUN: hetc-opt %s | hetc-opt | FileCheck %s
// RUN: hetc-opt %s --mlir-print-op-generic | hetc-opt | FileCheck %s
// RUN: hetc-opt %s --verify-roundtrip > /dev/null

// One complete Llama-3-8B decoder layer in the llm dialect (dim 4096, 32 query
// heads, 8 KV heads of 128, FFN 14336, RoPE base 500000 with Llama 3's frequency
// factors), its weights in a Q4_K_M mix as llama.cpp writes it (Q6_K for
// attn_v and ffn_down), plus the embedding and output head around it. It must
// parse, verify and round-trip unchanged.

!cache = !llm.kv_cache<capacity = 8192, kvHeads = 8, headDim = 128, elementType = f16>

llm.weight @token_embd.weight : tensor<128256x4096x!llm.quant<q4_k>>
llm.weight @rope_freqs.weight : tensor<64xf32>
llm.weight @blk.0.attn_norm.weight : tensor<4096xf32>
llm.weight @blk.0.attn_q.weight : tensor<4096x4096x!llm.quant<q4_k>>
llm.weight @blk.0.attn_k.weight : tensor<1024x4096x!llm.quant<q4_k>>
llm.weight @blk.0.attn_v.weight : tensor<1024x4096x!llm.quant<q6_k>>
llm.weight @blk.0.attn_output.weight : tensor<4096x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_norm.weight : tensor<4096xf32>
llm.weight @blk.0.ffn_gate.weight : tensor<14336x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_up.weight : tensor<14336x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_down.weight : tensor<4096x14336x!llm.quant<q6_k>>
llm.weight @output_norm.weight : tensor<4096xf32>
llm.weight @output.weight : tensor<128256x4096x!llm.quant<q6_k>>

// CHECK-LABEL: func.func @embed
// CHECK: llm.embedding {{.+}} -> tensor<?x4096xf32>
func.func @embed(%tokens: tensor<?xi32>) -> tensor<?x4096xf32> {
  %table = llm.get_weight @token_embd.weight : tensor<128256x4096x!llm.quant<q4_k>>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<128256x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  return %x : tensor<?x4096xf32>
}

// CHECK-LABEL: func.func @decoder_layer
// CHECK-SAME: (%[[X:.+]]: tensor<?x4096xf32>, %[[POS:.+]]: tensor<?xi32>, %[[CACHE:.+]]: !llm.kv_cache<capacity = 8192, kvHeads = 8, headDim = 128, elementType = f16>)
func.func @decoder_layer(%x: tensor<?x4096xf32>, %pos: tensor<?xi32>, %cache: !cache) -> (tensor<?x4096xf32>, !cache) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4096xf32>

  // Attention block: pre-norm, Q/K/V projections, RoPE, cache update, GQA.
  // CHECK: %[[XN:.+]] = llm.rms_norm %[[X]], %{{.+}} eps = 9.99999974E-6
  %attn_norm_w = llm.get_weight @blk.0.attn_norm.weight : tensor<4096xf32>
  %xn = llm.rms_norm %x, %attn_norm_w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %wq = llm.get_weight @blk.0.attn_q.weight : tensor<4096x4096x!llm.quant<q4_k>>
  %wk = llm.get_weight @blk.0.attn_k.weight : tensor<1024x4096x!llm.quant<q4_k>>
  %wv = llm.get_weight @blk.0.attn_v.weight : tensor<1024x4096x!llm.quant<q6_k>>
  // CHECK: %[[Q:.+]] = llm.matmul %[[XN]], %{{.+}} : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  %q = llm.matmul %xn, %wq : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  // CHECK: %[[K:.+]] = llm.matmul %[[XN]], %{{.+}} : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q4_k>>) -> tensor<?x1024xf32>
  %k = llm.matmul %xn, %wk : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q4_k>>) -> tensor<?x1024xf32>
  // CHECK: %[[V:.+]] = llm.matmul %[[XN]], %{{.+}} : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q6_k>>) -> tensor<?x1024xf32>
  %v = llm.matmul %xn, %wv : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q6_k>>) -> tensor<?x1024xf32>
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [%n, 32, 128] : tensor<?x4096xf32> into tensor<?x32x128xf32>
  %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 8, 128] : tensor<?x1024xf32> into tensor<?x8x128xf32>
  %v3 = tensor.expand_shape %v [[0], [1, 2]] output_shape [%n, 8, 128] : tensor<?x1024xf32> into tensor<?x8x128xf32>
  %freqs = llm.get_weight @rope_freqs.weight : tensor<64xf32>
  // CHECK: %[[QR:.+]] = llm.rope %{{.+}} at %[[POS]] mode = normal theta = 5.000000e+05 dims = 128 freq_factors(%{{.+}})
  %qr = llm.rope %q3 at %pos mode = normal theta = 500000.0 dims = 128 freq_factors(%freqs) : (tensor<?x32x128xf32>, tensor<?xi32>, tensor<64xf32>) -> tensor<?x32x128xf32>
  // CHECK: %[[KR:.+]] = llm.rope %{{.+}} at %[[POS]] mode = normal
  %kr = llm.rope %k3 at %pos mode = normal theta = 500000.0 dims = 128 freq_factors(%freqs) : (tensor<?x8x128xf32>, tensor<?xi32>, tensor<64xf32>) -> tensor<?x8x128xf32>
  // CHECK: %[[C1:.+]] = llm.kv_append %[[KR]], %{{.+}} into %[[CACHE]] at %[[POS]]
  %cache1 = llm.kv_append %kr, %v3 into %cache at %pos : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !cache, tensor<?xi32>) -> !cache
  // CHECK: %[[ATT:.+]] = llm.attention %[[QR]], %[[C1]] at %[[POS]] causal
  %att = llm.attention %qr, %cache1 at %pos causal : (tensor<?x32x128xf32>, !cache, tensor<?xi32>) -> tensor<?x32x128xf32>
  %att2 = tensor.collapse_shape %att [[0], [1, 2]] : tensor<?x32x128xf32> into tensor<?x4096xf32>
  %wo = llm.get_weight @blk.0.attn_output.weight : tensor<4096x4096x!llm.quant<q4_k>>
  %o = llm.matmul %att2, %wo : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  // CHECK: %[[H:.+]] = llm.add %[[X]], %{{.+}} : tensor<?x4096xf32>
  %h = llm.add %x, %o : tensor<?x4096xf32>

  // Feed-forward block: pre-norm, SwiGLU, down projection, residual.
  %ffn_norm_w = llm.get_weight @blk.0.ffn_norm.weight : tensor<4096xf32>
  %hn = llm.rms_norm %h, %ffn_norm_w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %wg = llm.get_weight @blk.0.ffn_gate.weight : tensor<14336x4096x!llm.quant<q4_k>>
  %wu = llm.get_weight @blk.0.ffn_up.weight : tensor<14336x4096x!llm.quant<q4_k>>
  %wd = llm.get_weight @blk.0.ffn_down.weight : tensor<4096x14336x!llm.quant<q6_k>>
  %gate = llm.matmul %hn, %wg : (tensor<?x4096xf32>, tensor<14336x4096x!llm.quant<q4_k>>) -> tensor<?x14336xf32>
  %up = llm.matmul %hn, %wu : (tensor<?x4096xf32>, tensor<14336x4096x!llm.quant<q4_k>>) -> tensor<?x14336xf32>
  // CHECK: %[[ACT:.+]] = llm.glu silu %{{.+}}, %{{.+}} : tensor<?x14336xf32>
  %act = llm.glu silu %gate, %up : tensor<?x14336xf32>
  // CHECK: %[[DOWN:.+]] = llm.matmul %[[ACT]], %{{.+}} : (tensor<?x14336xf32>, tensor<4096x14336x!llm.quant<q6_k>>) -> tensor<?x4096xf32>
  %down = llm.matmul %act, %wd : (tensor<?x14336xf32>, tensor<4096x14336x!llm.quant<q6_k>>) -> tensor<?x4096xf32>
  // CHECK: %[[OUT:.+]] = llm.add %[[H]], %[[DOWN]] : tensor<?x4096xf32>
  %out = llm.add %h, %down : tensor<?x4096xf32>
  // CHECK: return %[[OUT]], %[[C1]]
  return %out, %cache1 : tensor<?x4096xf32>, !cache
}

// CHECK-LABEL: func.func @head
// CHECK: llm.logits {{.+}} -> tensor<1x128256xf32>
// CHECK: llm.sample {{.+}} temperature = 0.000000e+00
func.func @head(%h: tensor<?x4096xf32>) -> tensor<1xi32> {
  %norm_w = llm.get_weight @output_norm.weight : tensor<4096xf32>
  %hn = llm.rms_norm %h, %norm_w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %out_w = llm.get_weight @output.weight : tensor<128256x4096x!llm.quant<q6_k>>
  %logits = llm.logits %hn, %out_w : (tensor<?x4096xf32>, tensor<128256x4096x!llm.quant<q6_k>>) -> tensor<1x128256xf32>
  %next = llm.sample %logits temperature = 0.0 top_k = 0 top_p = 1.0 seed = 0 : (tensor<1x128256xf32>) -> tensor<1xi32>
  return %next : tensor<1xi32>
}
