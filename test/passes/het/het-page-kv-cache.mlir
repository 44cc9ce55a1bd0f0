// RUN: hetc-opt %s --split-input-file --het-page-kv-cache | FileCheck %s
// RUN: hetc-opt %s --split-input-file --het-page-kv-cache="block-size=16 pool-blocks=3" | FileCheck %s --check-prefix=POOL

// An entry point's caches become pools of whole blocks (100 positions: 2
// blocks of 64, or the 3 blocks of 16 asked for), the function takes a block
// table before its first cache and records the block size, and every append
// and attention reads and writes through the table. Functions without
// caches are left alone.
!cache = !llm.kv_cache<capacity = 100, kvHeads = 2, headDim = 8, elementType = f16>
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%{{.+}}: tensor<1x4x8xf32>, %{{.+}}: tensor<1x2x8xf32>, %[[POS:.+]]: tensor<1xi32>, %[[BLOCKS:.+]]: tensor<?xi32> {hetc.kv_block_table}, %[[C0:.+]]: !llm.kv_cache<capacity = 128, kvHeads = 2, headDim = 8, elementType = f16>, %{{.+}}: !llm.kv_cache<capacity = 128, kvHeads = 2, headDim = 8, elementType = f16>)
// CHECK-SAME: -> (tensor<1x4x8xf32>, !llm.kv_cache<capacity = 128, kvHeads = 2, headDim = 8, elementType = f16>)
// CHECK-SAME: attributes {hetc.kv_block_size = 64 : i64}
// CHECK: %[[C1:.+]] = llm.kv_append %{{.+}}, %{{.+}} into %[[C0]] at %[[POS]] pages %[[BLOCKS]] block_size = 64
// CHECK: llm.attention %{{.+}}, %[[C1]] at %[[POS]] pages %[[BLOCKS]] block_size = 64 causal
// POOL-LABEL: func.func @decode
// POOL-SAME: !llm.kv_cache<capacity = 48,
// POOL-SAME: attributes {hetc.kv_block_size = 16 : i64}
// POOL: pages %{{.+}} block_size = 16
func.func @decode(%q: tensor<1x4x8xf32>, %k: tensor<1x2x8xf32>, %pos: tensor<1xi32>, %c0: !cache, %other: !cache) -> (tensor<1x4x8xf32>, !cache) {
  %c1 = llm.kv_append %k, %k into %c0 at %pos : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, !cache, tensor<1xi32>) -> !cache
  %o = llm.attention %q, %c1 at %pos causal : (tensor<1x4x8xf32>, !cache, tensor<1xi32>) -> tensor<1x4x8xf32>
  return %o, %c1 : tensor<1x4x8xf32>, !cache
}
// CHECK-LABEL: func.func @no_cache(%{{.+}}: tensor<4xf32>) -> tensor<4xf32> {
func.func @no_cache(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// A batched decode step (one token per sequence) gets a table per token.
!cache = !llm.kv_cache<capacity = 128, kvHeads = 2, headDim = 8, elementType = f16>
// CHECK-LABEL: func.func @decode_batch
// CHECK-SAME: %[[POS:[^:]+]]: tensor<?xi32>, %[[TABLES:[^:]+]]: tensor<?x?xi32> {hetc.kv_block_table}
// CHECK: llm.kv_append %{{.+}}, %{{.+}} into %{{.+}} at %[[POS]] pages %[[TABLES]] block_size = 64 : ({{.+}}, tensor<?x?xi32>)
func.func @decode_batch(%k: tensor<?x2x8xf32>, %pos: tensor<?xi32>, %c0: !cache) -> !cache attributes {llm.sequence_per_token} {
  %c1 = llm.kv_append %k, %k into %c0 at %pos : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, !cache, tensor<?xi32>) -> !cache
  return %c1 : !cache
}

// -----

// A plan's het.kv_tiers declare the paged caches: the paged type in blocks
// of the pages' size, the first tier holding the pool (100 positions: 2
// blocks of 64), a later one at least the positions it held (7 blocks of
// 16: 2 of 64).
!cache = !llm.kv_cache<capacity = 100, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: het.kv_tiers @kv.blk.0 for !llm.kv_cache<capacity = 128, kvHeads = 2, headDim = 8, elementType = f32> block_tokens = 64 tiers [#het.kv_tier<hbm, "gpu0", blocks = 2>, #het.kv_tier<dram, "cpu0", blocks = 2>]
// POOL-LABEL: het.kv_tiers @kv.blk.0 for !llm.kv_cache<capacity = 48, {{.+}}> block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 3>, #het.kv_tier<dram, "cpu0", blocks = 7>]
het.kv_tiers @kv.blk.0 for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 7>, #het.kv_tier<dram, "cpu0", blocks = 7>]
func.func @decode(%k: tensor<1x2x8xf32>, %pos: tensor<1xi32>, %c0: !cache {het.kv_cache = @kv.blk.0}) -> !cache {
  %c1 = llm.kv_append %k, %k into %c0 at %pos : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, !cache, tensor<1xi32>) -> !cache
  return %c1 : !cache
}
