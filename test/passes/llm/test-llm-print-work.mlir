// RUN: hetc-opt %s --split-input-file --test-llm-print-work="context-length=1000" --verify-diagnostics
// RUN: hetc-opt %s --split-input-file --test-llm-print-work="num-tokens=128 context-length=128" 2>&1 | FileCheck %s --check-prefix=PREFILL

// The work interface as the cost model reads it. Decode (one token): a Q4_0
// 4096x4096 matmul reads 4096*4096/32*18 = 9437184 weight bytes plus the
// 16 KiB activation row.
func.func @q4_0_matmul_decode(%x: tensor<?x4096xf32>, %w: tensor<4096x4096x!llm.quant<q4_0>>) -> tensor<?x4096xf32> {
  // expected-remark @+1 {{flops = 33554432, bytes_read = 9453568, weight_bytes_read = 9437184, bytes_written = 16384}}
  %y = llm.matmul %x, %w : (tensor<?x4096xf32>, tensor<4096x4096x!llm.quant<q4_0>>) -> tensor<?x4096xf32>
  return %y : tensor<?x4096xf32>
}
// Prefill of 128 tokens: 128 times the FLOPs, the same weight bytes.
// PREFILL: flops = 4294967296, bytes_read = 11534336, weight_bytes_read = 9437184, bytes_written = 2097152

// -----

// Causal attention over a 1000-position f16 cache (decode at position 999):
// 8 KV heads of 128 read once (2*1000*8*128*2 bytes), 32 query heads score
// 1000 keys each at 4*128+5 FLOPs per key.
!cache = !llm.kv_cache<capacity = 8192, kvHeads = 8, headDim = 128, elementType = f16>
func.func @attention_decode(%q: tensor<1x32x128xf32>, %c: !cache, %p: tensor<1xi32>) -> tensor<1x32x128xf32> {
  // expected-remark @+1 {{flops = 16544000, bytes_read = 4112388, weight_bytes_read = 0, bytes_written = 16384}}
  %o = llm.attention %q, %c at %p causal : (tensor<1x32x128xf32>, !cache, tensor<1xi32>) -> tensor<1x32x128xf32>
  return %o : tensor<1x32x128xf32>
}
