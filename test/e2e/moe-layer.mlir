// RUN: hetc-opt %s | hetc-opt | FileCheck %s
// RUN: hetc-opt %s --mlir-print-op-generic | hetc-opt | FileCheck %s
// RUN: hetc-opt %s --verify-roundtrip > /dev/null

// One complete Mixtral-8x7B decoder layer in the llm dialect: GQA attention (32
// query heads, 8 KV heads of 128) and a mixture-of-experts FFN with 8 experts of
// 14336, top-2 routing with renormalized weights, expert weights stacked as GGUF
// stores them (`ffn_*_exps`, Q4_K with Q6_K down projections). It must parse,
// verify and round-trip unchanged.

!cache = !llm.kv_cache<capacity = 32768, kvHeads = 8, headDim = 128, elementType = f16>

llm.weight @blk.0.attn_norm.weight : tensor<4096xf32>
llm.weight @blk.0.attn_q.weight : tensor<4096x4096x!llm.quant<q4_k>>
llm.weight @blk.0.attn_k.weight : tensor<1024x4096x!llm.quant<q4_k>>
llm.weight @blk.0.attn_v.weight : tensor<1024x4096x!llm.quant<q6_k>>
llm.weight @blk.0.attn_output.weight : tensor<4096x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_norm.weight : tensor<4096xf32>
llm.weight @blk.0.ffn_gate_inp.weight : tensor<8x4096xf32>
llm.weight @blk.0.ffn_gate_exps.weight : tensor<8x14336x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_up_exps.weight : tensor<8x14336x4096x!llm.quant<q4_k>>
llm.weight @blk.0.ffn_down_exps.weight : tensor<8x4096x14336x!llm.quant<q6_k>>

// CHECK-LABEL: func.func @moe_layer
// CHECK-SAME: (%[[X:.+]]: tensor<?x4096xf32>, %[[POS:.+]]: tensor<?xi32>, %[[CACHE:.+]]: !llm.kv_cache<capacity = 32768, kvHeads = 8, headDim = 128, elementType = f16>)
func.func @moe_layer(%x: tensor<?x4096xf32>, %pos: tensor<?xi32>, %cache: !cache) -> (tensor<?x4096xf32>, !cache) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4096xf32>

  // Attention block, as in Llama but with Mixtral's RoPE base.
  %attn_norm_w = llm.get_weight @blk.0.attn_norm.weight : tensor<4096xf32>
  %xn = llm.rms_norm %x, %attn_norm_w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %wq = llm.get_weight @blk.0.attn_q.weight : tensor<4096x4096x!llm.quant<q4_k>>
  %wk = llm.get_weight @blk.0.attn_k.weight : tensor<1024x4096x!llm.quant<q4_k>>
  %wv = llm.get_weight @blk.0.attn_v.weight : tensor<1024x4096x!llm.quant<q6_k>>
  %q = llm.matmul %xn, %wq : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  %k = llm.matmul %xn, %wk : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q4_k>>) -> tensor<?x1024xf32>
  %v = llm.matmul %xn, %wv : (tensor<?x4096xf32>, tensor<1024x4096x!llm.quant<q6_k>>) -> tensor<?x1024xf32>
  %q3 = tensor.expand_shape %q [[0], [1, 2]] output_shape [%n, 32, 128] : tensor<?x4096xf32> into tensor<?x32x128xf32>
  %k3 = tensor.expand_shape %k [[0], [1, 2]] output_shape [%n, 8, 128] : tensor<?x1024xf32> into tensor<?x8x128xf32>
  %v3 = tensor.expand_shape %v [[0], [1, 2]] output_shape [%n, 8, 128] : tensor<?x1024xf32> into tensor<?x8x128xf32>
  %qr = llm.rope %q3 at %pos mode = normal theta = 1000000.0 dims = 128 : (tensor<?x32x128xf32>, tensor<?xi32>) -> tensor<?x32x128xf32>
  %kr = llm.rope %k3 at %pos mode = normal theta = 1000000.0 dims = 128 : (tensor<?x8x128xf32>, tensor<?xi32>) -> tensor<?x8x128xf32>
  %cache1 = llm.kv_append %kr, %v3 into %cache at %pos : (tensor<?x8x128xf32>, tensor<?x8x128xf32>, !cache, tensor<?xi32>) -> !cache
  // CHECK: llm.attention %{{.+}}, %{{.+}} at %[[POS]] causal
  %att = llm.attention %qr, %cache1 at %pos causal : (tensor<?x32x128xf32>, !cache, tensor<?xi32>) -> tensor<?x32x128xf32>
  %att2 = tensor.collapse_shape %att [[0], [1, 2]] : tensor<?x32x128xf32> into tensor<?x4096xf32>
  %wo = llm.get_weight @blk.0.attn_output.weight : tensor<4096x4096x!llm.quant<q4_k>>
  %o = llm.matmul %att2, %wo : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_k>>) -> tensor<?x4096xf32>
  // CHECK: %[[H:.+]] = llm.add %[[X]], %{{.+}} : tensor<?x4096xf32>
  %h = llm.add %x, %o : tensor<?x4096xf32>

  // Mixture of experts: route each token to 2 of 8 experts, run their SwiGLU
  // FFNs and sum the outputs weighted by the router.
  %ffn_norm_w = llm.get_weight @blk.0.ffn_norm.weight : tensor<4096xf32>
  // CHECK: %[[HN:.+]] = llm.rms_norm %[[H]]
  %hn = llm.rms_norm %h, %ffn_norm_w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %router_w = llm.get_weight @blk.0.ffn_gate_inp.weight : tensor<8x4096xf32>
  // CHECK: %[[RL:.+]] = llm.matmul %[[HN]], %{{.+}} : (tensor<?x4096xf32>, tensor<8x4096xf32>) -> tensor<?x8xf32>
  %router_logits = llm.matmul %hn, %router_w : (tensor<?x4096xf32>, tensor<8x4096xf32>) -> tensor<?x8xf32>
  // CHECK: %[[EW:.+]], %[[EI:.+]] = llm.moe_router %[[RL]] top_k = 2 normalize
  %expert_w, %expert_idx = llm.moe_router %router_logits top_k = 2 normalize : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
  %gate_exps = llm.get_weight @blk.0.ffn_gate_exps.weight : tensor<8x14336x4096x!llm.quant<q4_k>>
  %up_exps = llm.get_weight @blk.0.ffn_up_exps.weight : tensor<8x14336x4096x!llm.quant<q4_k>>
  %down_exps = llm.get_weight @blk.0.ffn_down_exps.weight : tensor<8x4096x14336x!llm.quant<q6_k>>
  // CHECK: %[[G:.+]] = llm.expert_matmul %[[HN]], %{{.+}}[%[[EI]]] : (tensor<?x4096xf32>, tensor<8x14336x4096x!llm.quant<q4_k>>, tensor<?x2xi32>) -> tensor<?x2x14336xf32>
  %gate = llm.expert_matmul %hn, %gate_exps[%expert_idx] : (tensor<?x4096xf32>, tensor<8x14336x4096x!llm.quant<q4_k>>, tensor<?x2xi32>) -> tensor<?x2x14336xf32>
  %up = llm.expert_matmul %hn, %up_exps[%expert_idx] : (tensor<?x4096xf32>, tensor<8x14336x4096x!llm.quant<q4_k>>, tensor<?x2xi32>) -> tensor<?x2x14336xf32>
  // CHECK: %[[ACT:.+]] = llm.glu silu %[[G]], %{{.+}} : tensor<?x2x14336xf32>
  %act = llm.glu silu %gate, %up : tensor<?x2x14336xf32>
  // CHECK: %[[D:.+]] = llm.expert_matmul %[[ACT]], %{{.+}}[%[[EI]]] : (tensor<?x2x14336xf32>, tensor<8x4096x14336x!llm.quant<q6_k>>, tensor<?x2xi32>) -> tensor<?x2x4096xf32>
  %down = llm.expert_matmul %act, %down_exps[%expert_idx] : (tensor<?x2x14336xf32>, tensor<8x4096x14336x!llm.quant<q6_k>>, tensor<?x2xi32>) -> tensor<?x2x4096xf32>
  // CHECK: %[[Y:.+]] = llm.moe_combine %[[D]], %[[EW]] : (tensor<?x2x4096xf32>, tensor<?x2xf32>) -> tensor<?x4096xf32>
  %moe = llm.moe_combine %down, %expert_w : (tensor<?x2x4096xf32>, tensor<?x2xf32>) -> tensor<?x4096xf32>
  // CHECK: %[[OUT:.+]] = llm.add %[[H]], %[[Y]]
  %out = llm.add %h, %moe : tensor<?x4096xf32>
  return %out, %cache1 : tensor<?x4096xf32>, !cache
}
