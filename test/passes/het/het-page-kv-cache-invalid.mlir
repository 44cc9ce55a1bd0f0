// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-page-kv-cache
// RUN: not hetc-opt %s --split-input-file --het-page-kv-cache=block-size=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not hetc-opt %s --split-input-file --het-page-kv-cache="block-size=65536 pool-blocks=40000" 2>&1 | FileCheck %s --check-prefix=HUGE

// ZERO: het-page-kv-cache: block-size must be positive, not 0
// HUGE: would page its caches into 40000 blocks of 65536 slots, past the 2147483647 slots hetc addresses; give fewer pool-blocks

// Paging twice would give the function a second table.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 8, elementType = f16>
// expected-error @+1 {{already pages its KV caches}}
func.func @paged(%b: tensor<?xi32>, %c: !cache) -> !cache attributes {hetc.kv_block_size = 64 : i64} {
  return %c : !cache
}

// -----

// A cache handed to another function would keep that function's type.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 8, elementType = f16>
func.func private @elsewhere(!cache) -> !cache
func.func @caller(%c: !cache) -> !cache {
  // expected-error @+1 {{passes a KV cache to another function}}
  %0 = func.call @elsewhere(%c) : (!cache) -> !cache
  return %0 : !cache
}
