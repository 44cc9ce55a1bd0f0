// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg --mlir-print-local-scope | FileCheck %s

// Every `x · wᵀ` becomes a portable three-loop generic (n, m, k) tagged with
// the weight's storage type, for a target to block as it likes
// (hetc-x86-block-matmuls on the CPU). The weight reference becomes a view of
// the mapped model data at the weight's offset, passed in as a new leading
// argument; a float weight is the generic's second input.
llm.weight @w {data_offset = 256 : i64} : tensor<32x64xf32>
// CHECK-NOT: llm.get_weight
// CHECK-LABEL: func.func @f32_matmul
// CHECK-SAME: (%[[DATA:.+]]: memref<?xi8> {llm.weights}, %[[X:.+]]: tensor<?x64xf32>)
// CHECK: %[[OFF:.+]] = arith.constant 256 : index
// CHECK: %[[VIEW:.+]] = memref.view %[[DATA]][%[[OFF]]][] : memref<?xi8> to memref<32x64xf32>
// CHECK: %[[W:.+]] = bufferization.to_tensor %[[VIEW]] restrict
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME: ins(%[[X]], %[[W]] : tensor<?x64xf32>, tensor<32x64xf32>)
// CHECK-SAME: llm.matmul_weight = f32
// CHECK: arith.mulf {{.+}} fastmath<reassoc,contract>
// CHECK: } -> tensor<?x32xf32>
// CHECK-NOT: scf.forall
// CHECK-NOT: llm.get_weight
func.func @f32_matmul(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @w : tensor<32x64xf32>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A Q4_0 weight is its byte rows (64 elements = 2 blocks of 18 bytes); the
// generic decodes each element from them, so no dequantized copy exists.
llm.weight @q {data_offset = 0 : i64} : tensor<32x64x!llm.quant<q4_0>>
// CHECK-LABEL: func.func @q4_0_matmul
// CHECK: %[[VIEW:.+]] = memref.view {{.+}} : memref<?xi8> to memref<32x36xi8>
// CHECK: %[[BYTES:.+]] = bufferization.to_tensor %[[VIEW]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<?x64xf32>)
// CHECK-SAME: llm.matmul_weight = !llm.quant<q4_0>
// CHECK: tensor.extract %[[BYTES]]
func.func @q4_0_matmul(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @q : tensor<32x64x!llm.quant<q4_0>>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// K-quant weights (here Q6_K) are decoded element by element from their byte
// rows inside a three-loop generic.
llm.weight @q6 {data_offset = 0 : i64} : tensor<4x256x!llm.quant<q6_k>>
// CHECK-LABEL: func.func @q6_k_matmul
// CHECK: memref.view {{.+}} : memref<?xi8> to memref<4x210xi8>
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: tensor.extract %{{.+}} : tensor<4x210xi8>
// CHECK-NOT: llm.
func.func @q6_k_matmul(%x: tensor<?x256xf32>) -> tensor<?x4xf32> {
  %w = llm.get_weight @q6 : tensor<4x256x!llm.quant<q6_k>>
  %y = llm.matmul %x, %w : (tensor<?x256xf32>, tensor<4x256x!llm.quant<q6_k>>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Q2_K (84-byte), Q3_K (110-byte) and Q5_K (176-byte) super-blocks decode
// element by element the same way; Q5_K's fifth bit comes from the qh bytes
// at offset 16 and its nibble from offset 48.
llm.weight @q2 {data_offset = 0 : i64} : tensor<4x256x!llm.quant<q2_k>>
llm.weight @q3 {data_offset = 1024 : i64} : tensor<4x256x!llm.quant<q3_k>>
llm.weight @q5 {data_offset = 2048 : i64} : tensor<4x256x!llm.quant<q5_k>>
// CHECK-LABEL: func.func @low_bit_k_quant_matmuls
// CHECK-DAG: memref.view {{.+}} : memref<?xi8> to memref<4x84xi8>
// CHECK-DAG: memref.view {{.+}} : memref<?xi8> to memref<4x110xi8>
// CHECK-DAG: memref.view {{.+}} : memref<?xi8> to memref<4x176xi8>
// CHECK: tensor.extract %{{.+}} : tensor<4x84xi8>
// CHECK: tensor.extract %{{.+}} : tensor<4x110xi8>
// CHECK: tensor.extract %{{.+}} : tensor<4x176xi8>
// CHECK-NOT: llm.
func.func @low_bit_k_quant_matmuls(%x: tensor<?x256xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %w2 = llm.get_weight @q2 : tensor<4x256x!llm.quant<q2_k>>
  %w3 = llm.get_weight @q3 : tensor<4x256x!llm.quant<q3_k>>
  %w5 = llm.get_weight @q5 : tensor<4x256x!llm.quant<q5_k>>
  %y2 = llm.matmul %x, %w2 : (tensor<?x256xf32>, tensor<4x256x!llm.quant<q2_k>>) -> tensor<?x4xf32>
  %y3 = llm.matmul %x, %w3 : (tensor<?x256xf32>, tensor<4x256x!llm.quant<q3_k>>) -> tensor<?x4xf32>
  %y5 = llm.matmul %x, %w5 : (tensor<?x256xf32>, tensor<4x256x!llm.quant<q5_k>>) -> tensor<?x4xf32>
  return %y2, %y3, %y5 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// The KV cache is one tensor of keys and values, head-major ([2, kv heads,
// capacity, head size]): a head's keys are one run. Appending copies each token's
// rows to its position. A prompt's attention (a dynamic token count) goes
// tile by tile: a forall over (tiles of 32 query tokens, heads) whose body
// walks the cached keys of the head's KV head (h / (heads / kv_heads)) in
// blocks of 64 up to the tile's last position, keeping the running row
// maximum, row sum and weighted values (the online softmax), with the two
// products tagged for the target's blocking; the normalized tile is written
// into the output's rows.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @cache_and_attention
// CHECK-SAME: tensor<2x2x64x8xf32>
// CHECK: %[[CACHE:.+]] = scf.for
// CHECK: linalg.copy
// CHECK: tensor.insert_slice {{.+}} [1, 2, 1, 8] [1, 1, 1, 1] : tensor<2x8xf32> into tensor<2x2x64x8xf32>
// CHECK: %[[TILES:.+]] = arith.ceildivsi %{{.+}}, %c32 : index
// CHECK: scf.forall (%[[TILE:.+]], %[[HEAD:.+]]) in (%[[TILES]], 4) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<?x4x8xf32>)
// CHECK: %[[KVHEAD:.+]] = arith.divui %[[HEAD]], %c2 : index
// CHECK: tensor.extract_slice %{{.+}}[%{{.+}}, %[[HEAD]], 0] [%{{.+}}, 1, 8] [1, 1, 1] : tensor<?x4x8xf32> to tensor<?x8xf32>
// CHECK: arith.mulf %{{.+}}, %cst{{.*}} : f32
// CHECK: arith.maxsi
// CHECK: %[[END:.+]] = arith.minsi
// CHECK: scf.for %[[KEY:.+]] = %{{.+}} to %[[END]] step %c64 iter_args({{.+}}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x8xf32>)
// CHECK: tensor.extract_slice %[[CACHE]][0, %[[KVHEAD]], %[[KEY]], 0] [1, 1, %{{.+}}, 8] [1, 1, 1, 1] : tensor<2x2x64x8xf32> to tensor<?x8xf32>
// CHECK: tensor.extract_slice %[[CACHE]][1, %[[KVHEAD]], %[[KEY]], 0]
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]{{.+}} attrs = {{ *}}{llm.attention_scores}
// CHECK: arith.cmpi sgt
// CHECK: arith.cmpi slt
// CHECK: arith.maxnumf %{{.+}}, %{{.+}} fastmath<reassoc,nnan> : f32
// CHECK: math.exp
// CHECK: math.exp
// CHECK: arith.addf %{{.+}}, %{{.+}} fastmath<reassoc,nnan> : f32
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]{{.+}} attrs = {{ *}}{llm.attention_values}
// CHECK: scf.yield
// CHECK: %[[ROWS:.+]] = tensor.extract_slice %[[OUT]]
// CHECK: %[[NORMALIZED:.+]] = linalg.generic {{.+}} outs(%[[ROWS]] : tensor<?x8xf32>)
// CHECK: arith.divf
// CHECK: tensor.parallel_insert_slice %[[NORMALIZED]] into %[[OUT]]
// CHECK-NOT: llm.
func.func @cache_and_attention(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %pos: tensor<?xi32>, %c: !cache) -> (tensor<?x4x8xf32>, !cache) {
  %c1 = llm.kv_append %k, %k into %c at %pos : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, !cache, tensor<?xi32>) -> !cache
  %o = llm.attention %q, %c1 at %pos causal window = 16 : (tensor<?x4x8xf32>, !cache, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !cache
}

// -----

// A paged cache: a token's keys and values go to slot blocks[p / 64] * 64 +
// p % 64, and each 64-key step of the attention reads one block, found
// through the table, as one contiguous slice; the mask still compares
// positions.
!cache = !llm.kv_cache<capacity = 256, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @paged_cache
// CHECK-SAME: %{{[^:]+}}: tensor<?xi32>, %[[BLOCKS:[^:]+]]: tensor<?xi32>
// CHECK: scf.for
// CHECK: %[[POS:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[LOGICAL:.+]] = arith.divui %[[POS]], %c64 : index
// CHECK: %[[BLOCK:.+]] = tensor.extract %[[BLOCKS]][%[[LOGICAL]]] : tensor<?xi32>
// CHECK: %[[PHYSICAL:.+]] = arith.index_cast %[[BLOCK]] : i32 to index
// CHECK: %[[BASE:.+]] = arith.muli %[[PHYSICAL]], %c64 : index
// CHECK: %[[WITHIN:.+]] = arith.remui %[[POS]], %c64 : index
// CHECK: %[[SLOT:.+]] = arith.addi %[[BASE]], %[[WITHIN]] : index
// CHECK: tensor.extract_slice %{{.+}}[0, 0, %[[SLOT]], 0] [1, 2, 1, 8]
// CHECK: scf.for %[[KEY:.+]] = %{{.+}} to %{{.+}} step %c64
// CHECK: %[[KEYBLOCK:.+]] = tensor.extract %[[BLOCKS]][%{{.+}}] : tensor<?xi32>
// CHECK: %[[FIRST:.+]] = arith.addi %{{.+}}, %{{.+}} : index
// CHECK: tensor.extract_slice %{{.+}}[0, %{{.+}}, %[[FIRST]], 0] [1, 1, %{{.+}}, 8] [1, 1, 1, 1] : tensor<2x2x256x8xf32> to tensor<?x8xf32>
// CHECK: arith.cmpi sgt
func.func @paged_cache(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %pos: tensor<?xi32>, %blocks: tensor<?xi32>, %c: !cache) -> (tensor<?x4x8xf32>, !cache) {
  %c1 = llm.kv_append %k, %k into %c at %pos pages %blocks block_size = 64 : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> !cache
  %o = llm.attention %q, %c1 at %pos pages %blocks block_size = 64 causal : (tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !cache
}

// -----

// A table per token (a batch of sequences, one token each): token t writes
// and reads through row t, and attends alone, a tile of one query, up to its
// own position.
!cache = !llm.kv_cache<capacity = 256, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @table_per_token
// CHECK-SAME: %[[TABLES:[^:]+]]: tensor<?x?xi32>
// CHECK: scf.for %[[TOKEN:[^ ]+]] =
// CHECK: tensor.extract %[[TABLES]][%[[TOKEN]], %{{.+}}] : tensor<?x?xi32>
// CHECK: arith.ceildivsi %{{.+}}, %c1{{.*}} : index
// CHECK: scf.forall (%[[TILE:.+]], %{{.+}}) in
// CHECK: %[[FIRST:.+]] = arith.muli %[[TILE]], %c1
// CHECK: tensor.extract_slice %{{.+}}[%[[FIRST]], %{{.+}}, 0] [1, 1, 8] [1, 1, 1] : tensor<?x4x8xf32> to tensor<1x8xf32>
// CHECK: scf.for
// CHECK: tensor.extract %[[TABLES]][%[[FIRST]], %{{.+}}] : tensor<?x?xi32>
func.func @table_per_token(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %pos: tensor<?xi32>, %tables: tensor<?x?xi32>, %c: !cache) -> (tensor<?x4x8xf32>, !cache) {
  %c1 = llm.kv_append %k, %k into %c at %pos pages %tables block_size = 64 : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, !cache, tensor<?xi32>, tensor<?x?xi32>) -> !cache
  %o = llm.attention %q, %c1 at %pos pages %tables block_size = 64 causal : (tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?x?xi32>) -> tensor<?x4x8xf32>
  return %o, %c1 : tensor<?x4x8xf32>, !cache
}

// -----

// Blocks smaller than a step of 64 keys: each step takes one block.
!cache = !llm.kv_cache<capacity = 256, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @small_blocks
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c16
func.func @small_blocks(%q: tensor<?x4x8xf32>, %pos: tensor<?xi32>, %blocks: tensor<?xi32>, %c: !cache) -> tensor<?x4x8xf32> {
  %o = llm.attention %q, %c at %pos pages %blocks block_size = 16 causal : (tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %o : tensor<?x4x8xf32>
}

// -----

// A decode step is one tile of static rows (its single query): per head,
// its keys stream by in blocks of 64 with the online softmax, so no score
// row over the whole context is materialized.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @decode_attention
// CHECK: scf.forall ({{.+}}) in ({{.+}}, 4) shared_outs({{.+}}) -> (tensor<1x4x8xf32>)
// CHECK: tensor.extract_slice {{.+}} : tensor<1x4x8xf32> to tensor<1x8xf32>
// CHECK: scf.for {{.+}} step %c64 iter_args({{.+}}) -> (tensor<1xf32>, tensor<1xf32>, tensor<1x8xf32>)
// CHECK: tensor.extract_slice {{.+}} : tensor<2x2x64x8xf32> to tensor<?x8xf32>
// CHECK: linalg.generic {{.+}} ins({{.+}} : tensor<1x8xf32>, tensor<?x8xf32>) outs({{.+}} : tensor<1x?xf32>) attrs = {{ *}}{llm.attention_scores}
// CHECK: math.exp
// CHECK: linalg.generic {{.+}} outs({{.+}} : tensor<1x8xf32>) attrs = {{ *}}{llm.attention_values}
// CHECK-NOT: llm.
func.func @decode_attention(%q: tensor<1x4x8xf32>, %pos: tensor<1xi32>, %c: !cache) -> tensor<1x4x8xf32> {
  %o = llm.attention %q, %c at %pos causal : (tensor<1x4x8xf32>, !cache, tensor<1xi32>) -> tensor<1x4x8xf32>
  return %o : tensor<1x4x8xf32>
}

// -----

// Norm, RoPE, gated activation and residual: elementwise and reduction
// generics; the norm accumulates its squares in f64 as ggml does.
// CHECK-LABEL: func.func @elementwise
// CHECK: arith.extf %{{.+}} : f32 to f64
// CHECK: math.sqrt
// CHECK: math.powf
// CHECK: math.cos
// CHECK: math.exp
// CHECK-NOT: llm.
func.func @elementwise(%x: tensor<?x16xf32>, %w: tensor<16xf32>, %pos: tensor<?xi32>, %q: tensor<?x2x8xf32>) -> (tensor<?x16xf32>, tensor<?x2x8xf32>) {
  %n = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %r = llm.rope %q at %pos mode = neox theta = 10000.0 dims = 8 : (tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  %g = llm.glu silu %n, %x : tensor<?x16xf32>
  %a = llm.add %g, %x : tensor<?x16xf32>
  return %a, %r : tensor<?x16xf32>, tensor<?x2x8xf32>
}
