// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-partition=system=rtx4090-ryzen

// Failures of het-partition (passes/het/HetPartition.cpp): modules it cannot
// plan, each with the fix. A malformed #llm.model is the dialect verifier's
// (test/dialects/llm/model-attr-invalid.mlir).

// expected-error @below {{het-partition: the module has no llm.model attribute (the model's hyper-parameters); import the model with hetc import, which writes it}}
module {
  llm.weight @token_embd.weight : tensor<300x64xf32>
}

// -----

// expected-error @below {{het-partition: weight @blk.3.attn_q.weight belongs to layer 3 but llm.model has 1 layers}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
  llm.weight @token_embd.weight : tensor<300x64xf32>
  llm.weight @blk.3.attn_q.weight : tensor<64x64xf32>
}

// -----

// expected-error @below {{het-partition: the module declares no llm.weight; import the model with hetc import}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
}

// -----

// Four layers of 503 GB of f32 FFN weights each (the declarations alone are
// planned: no weight is read) need 2 TB; the desktop has 24 GB of GPU memory,
// 64 GB of DRAM and a 1.8 TB NVMe drive.
// expected-error-re @below {{het-partition: {{.+}}het-partition-invalid.mlir does not fit rtx4090-ryzen: no placement fits the memory limits: the closest one needs 13265920000 bytes more than cpu0.nvme holds (2013265920000 of 2000000000000); use a smaller weight type, batch or context, or a system with more memory}}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 4, dim = 8192, heads = 64, kv_heads = 8, head_dim = 128, ffn_dim = 5120000, vocab = 32000, context_length = 64>} {
  llm.weight @token_embd.weight : tensor<32000x8192xf32>
  llm.weight @blk.0.ffn_gate.weight : tensor<5120000x8192xf32>
  llm.weight @blk.0.ffn_up.weight : tensor<5120000x8192xf32>
  llm.weight @blk.0.ffn_down.weight : tensor<8192x5120000xf32>
  llm.weight @blk.1.ffn_gate.weight : tensor<5120000x8192xf32>
  llm.weight @blk.1.ffn_up.weight : tensor<5120000x8192xf32>
  llm.weight @blk.1.ffn_down.weight : tensor<8192x5120000xf32>
  llm.weight @blk.2.ffn_gate.weight : tensor<5120000x8192xf32>
  llm.weight @blk.2.ffn_up.weight : tensor<5120000x8192xf32>
  llm.weight @blk.2.ffn_down.weight : tensor<8192x5120000xf32>
  llm.weight @blk.3.ffn_gate.weight : tensor<5120000x8192xf32>
  llm.weight @blk.3.ffn_up.weight : tensor<5120000x8192xf32>
  llm.weight @blk.3.ffn_down.weight : tensor<8192x5120000xf32>
}

// -----

// Partitioning twice would declare every KV tier twice.
// expected-error @below {{het-partition: the module is already partitioned (it has het.plan); partition the imported module}}
module attributes {het.plan = {system = "rtx4090-ryzen"}, llm.model = #llm.model<architecture = "llama", layers = 1, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64>} {
  llm.weight @token_embd.weight : tensor<300x64xf32>
}
