// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-attention --mlir-print-local-scope | FileCheck %s
// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-attention=vector-bits=256 --mlir-print-local-scope | FileCheck %s --check-prefix=AVX2
// RUN: not hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-attention=vector-bits=96 2>&1 >/dev/null | FileCheck %s --check-prefix=BITS
// BITS: error: hetc-x86-block-attention: vector-bits is 96; x86 vector registers hold 128 (SSE), 256 (AVX2) or 512 (AVX-512) bits

// The tiled attention's two products get the CPU's blocking. Scores: blocks
// of 4 query rows × 4 keys (clamped to the last row and key), 16 vector
// accumulators over the head dimension (f16 keys widened in registers),
// folded pairwise by shuffles into the 4 sums of each row. Weighted values:
// blocks of 4 rows × the head dimension's vectors, read from the
// accumulator, carried across the keys with 4 broadcast weights per key, and
// written back. No tag survives.
!cache = !llm.kv_cache<capacity = 256, kvHeads = 2, headDim = 32, elementType = f16>
// CHECK-LABEL: func.func @prompt_attention
// CHECK: scf.forall
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64{{(_[0-9]+)?}} iter_args
// The scores.
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4{{(_[0-9]+)?}} iter_args
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4{{(_[0-9]+)?}} iter_args
// CHECK-COUNT-4: arith.minui
// CHECK: vector.transfer_read {{.+}} : tensor<?x32xf32>, vector<16xf32>
// CHECK: vector.transfer_read {{.+}} : tensor<?x32xf16>, vector<16xf16>
// CHECK: arith.extf {{.+}} : vector<16xf16> to vector<16xf32>
// CHECK-COUNT-16: vector.fma
// CHECK: vector.shuffle
// CHECK-NOT: vector.reduction
// CHECK: vector.extract
// CHECK: tensor.insert
// The weighted values.
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4{{(_[0-9]+)?}} iter_args
// CHECK-COUNT-8: vector.transfer_read {{.+}} : tensor<?x32xf32>, vector<16xf32>
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: vector.transfer_read {{.+}} : tensor<?x32xf16>, vector<16xf16>
// CHECK: tensor.extract
// CHECK: vector.broadcast
// CHECK: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-8: vector.transfer_write {{.+}} {in_bounds = [true]} : vector<16xf32>, tensor<?x32xf32>
// CHECK-NOT: llm.attention
// With 256-bit vectors blocks are 4 rows × 2 keys, and 4 rows × 2 vectors
// of 8 lanes.
// AVX2-LABEL: func.func @prompt_attention
// AVX2: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c2{{(_[0-9]+)?}} iter_args
// AVX2-COUNT-8: vector.fma {{.+}} : vector<8xf32>
// AVX2: scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
func.func @prompt_attention(%q: tensor<?x4x32xf32>, %pos: tensor<?xi32>, %c: !cache) -> tensor<?x4x32xf32> {
  %o = llm.attention %q, %c at %pos causal : (tensor<?x4x32xf32>, !cache, tensor<?xi32>) -> tensor<?x4x32xf32>
  return %o : tensor<?x4x32xf32>
}

// -----

// A head dimension of 8 is not a whole number of 16-lane vectors: the
// products stay portable (and untagged). With 8 lanes they are blocked.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 8, elementType = f32>
// CHECK-LABEL: func.func @narrow_heads
// CHECK-NOT: vector.fma
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: llm.attention
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "reduction", "parallel"]
// CHECK-NOT: llm.attention
// AVX2-LABEL: func.func @narrow_heads
// AVX2: vector.fma {{.+}} : vector<8xf32>
func.func @narrow_heads(%q: tensor<?x4x8xf32>, %pos: tensor<?xi32>, %c: !cache) -> tensor<?x4x8xf32> {
  %o = llm.attention %q, %c at %pos causal : (tensor<?x4x8xf32>, !cache, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %o : tensor<?x4x8xf32>
}

// -----

// A decode step's products have one static query row: blocks of that one
// row (no repeated rows) × 4 keys, and one row × the head dimension for the
// values.
!cache = !llm.kv_cache<capacity = 256, kvHeads = 2, headDim = 32, elementType = f32>
// CHECK-LABEL: func.func @decode_attention
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c64{{(_[0-9]+)?}} iter_args
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1{{(_[0-9]+)?}} iter_args
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c4{{(_[0-9]+)?}} iter_args
// CHECK-COUNT-8: vector.fma
// CHECK-NOT: vector.fma
// CHECK: vector.shuffle
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-2: vector.transfer_write {{.+}} {in_bounds = [true]} : vector<16xf32>, tensor<1x32xf32>
// CHECK-NOT: llm.attention
// AVX2-LABEL: func.func @decode_attention
func.func @decode_attention(%q: tensor<1x4x32xf32>, %pos: tensor<1xi32>, %c: !cache) -> tensor<1x4x32xf32> {
  %o = llm.attention %q, %c at %pos causal : (tensor<1x4x32xf32>, !cache, tensor<1xi32>) -> tensor<1x4x32xf32>
  return %o : tensor<1x4x32xf32>
}
