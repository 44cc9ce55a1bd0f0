// RUN: hetc-opt %s | hetc-opt | FileCheck %s

// #llm.model round-trips; experts default to 0 and are printed only when set.
// CHECK: module attributes {llm.model = #llm.model<architecture = "llama", layers = 5, dim = 64, heads = 8, kv_heads = 4, head_dim = 8, ffn_dim = 172, vocab = 512, context_length = 512>}
module attributes {llm.model = #llm.model<architecture = "llama", layers = 5, dim = 64, heads = 8, kv_heads = 4, head_dim = 8, ffn_dim = 172, vocab = 512, context_length = 512>} {
}
// CHECK: module attributes {llm.model = #llm.model<architecture = "mixtral", layers = 2, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64, experts = 8, experts_used = 2>}
module attributes {llm.model = #llm.model<architecture = "mixtral", layers = 2, dim = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn_dim = 128, vocab = 300, context_length = 64, experts = 8, experts_used = 2>} {
}
