// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg "--hetc-x86-block-matmuls=int8-dot=true amx-tiles=true" --mlir-print-local-scope | FileCheck %s
// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg "--hetc-x86-block-matmuls=int8-dot=true amx-tiles=true" --hetc-x86-emulate-amx --mlir-print-local-scope | FileCheck %s --check-prefix=EMU
// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg "--hetc-x86-block-matmuls=int8-dot=true amx-tiles=true float-weights-bf16=true" --mlir-print-local-scope | FileCheck %s --check-prefix=ROUNDED

// With amx-tiles, a prompt's matmul of an interleaved weight takes 16
// activation rows at a time. Their int8 codes are padded to a multiple of 16
// rows (each padding row quantizes the last row again) and read as one tile
// from the buffer of the quantized codes; each 32-element group's decoded
// weight codes are stored as the 8 rows of the other tile (VNNI layout:
// elements 4k..4k+3 of each of the 16 weight rows), and one tdpbsud (signed
// activation codes, zero-extended weight codes) gives the 16 × 16 integer
// sums. They come back through a stack buffer released with the group's
// scope, and each activation row's sums are corrected for the codes' offset
// (-8 × the block's code sum for Q4_0) and scaled as the vpdpbusd kernel's.
// CHECK-LABEL: func.func @q4_0_prompt
// CHECK: %[[ROWS:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x64xf32>
// CHECK: %[[TILES:.+]] = arith.ceildivui %[[ROWS]], %{{.+}} : index
// CHECK: %[[PADDED:.+]] = arith.muli %[[TILES]], %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.subi %[[ROWS]], %{{.+}} : index
// CHECK: tensor.empty(%[[PADDED]]) : tensor<?x64xi8>
// CHECK: %[[QUANTIZED:.+]]:3 = scf.forall (%[[ROW:.+]]) in (%{{.+}})
// CHECK: arith.minui %[[ROW]], %[[LAST]] : index
// CHECK: %[[CODES:.+]] = bufferization.to_buffer %[[QUANTIZED]]#0 read_only : tensor<?x64xi8> to memref<?x64xi8>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (2, %{{.+}})
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: memref.alloca_scope
// CHECK: %[[WEIGHTCODES:.+]] = memref.alloca() {alignment = 64 : i64} : memref<8x64xi8>
// CHECK-COUNT-8: vector.store %{{.+}}, %[[WEIGHTCODES]][%{{.+}}, %{{.+}}] : memref<8x64xi8>, vector<64xi8>
// CHECK: %[[PRODUCTS:.+]] = memref.alloca() {alignment = 64 : i64} : memref<16x16xi32>
// CHECK: %[[A:.+]] = amx.tile_load %[[CODES]][%{{.+}}, %{{.+}}] : memref<?x64xi8> into !amx.tile<16x32xi8>
// CHECK: %[[B:.+]] = amx.tile_load %[[WEIGHTCODES]][%{{.+}}, %{{.+}}] : memref<8x64xi8> into !amx.tile<8x64xi8>
// CHECK: %[[ZERO:.+]] = amx.tile_zero : !amx.tile<16x16xi32>
// CHECK: %[[C:.+]] = amx.tile_muli %[[A]], %[[B]] zext, %[[ZERO]]
// CHECK: amx.tile_store %[[PRODUCTS]][%{{.+}}, %{{.+}}], %[[C]]
// CHECK-COUNT-16: vector.load %[[PRODUCTS]]
// CHECK: memref.alloca_scope.return
// CHECK: %[[SUM:.+]] = tensor.extract {{.+}} : tensor<?x2xi32>
// CHECK: %[[SHIFTED:.+]] = arith.shli %[[SUM]], %{{.+}} : i32
// CHECK: %[[BIAS:.+]] = vector.broadcast %[[SHIFTED]] : i32 to vector<16xi32>
// CHECK: %[[DOT:.+]] = arith.addi %{{.+}}#0, %[[BIAS]] : vector<16xi32>
// CHECK: %[[INT:.+]] = arith.sitofp %[[DOT]] : vector<16xi32> to vector<16xf32>
// CHECK: vector.fma %{{.+}}, %[[INT]], %{{.+}} : vector<16xf32>
// CHECK-NOT: llvm.x86.avx512.vpdpbusd
// Emulated (hetc-x86-emulate-amx), the tiles are 2-D vectors: a load per
// tile row, one vpdpbusd per activation row and 4 codes, a store per row.
// EMU-LABEL: func.func @q4_0_prompt
// EMU-NOT: amx.
// EMU-COUNT-16: vector.load %{{.+}} : memref<?x64xi8>, vector<32xi8>
// EMU-COUNT-8: vector.load %{{.+}} : memref<8x64xi8>, vector<64xi8>
// EMU-COUNT-128: call @llvm.x86.avx512.vpdpbusd.512
// EMU-COUNT-16: vector.store %{{.+}} : memref<16x16xi32>, vector<16xi32>
// EMU-NOT: amx.
llm.weight @q {data_offset = 0 : i64} : tensor<32x64x!llm.quant<q4_0>>
func.func @q4_0_prompt(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @q : tensor<32x64x!llm.quant<q4_0>>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Q6_K's 32-element groups are two parts of 16 elements, each with its own
// int8 row scales: two tile products of 16 × 16 codes (4 tile rows of weight
// codes each), whose sums are weighted by their parts' scales before the one
// conversion to f32.
// CHECK-LABEL: func.func @q6_k_prompt
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<8x64xi8>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<32x16xi32>
// CHECK: amx.tile_load %{{.+}} : memref<?x256xi8> into !amx.tile<16x16xi8>
// CHECK: amx.tile_load %{{.+}} : memref<8x64xi8> into !amx.tile<4x64xi8>
// CHECK: amx.tile_muli {{.+}} zext
// CHECK: amx.tile_load %{{.+}} : memref<?x256xi8> into !amx.tile<16x16xi8>
// CHECK: amx.tile_load %{{.+}} : memref<8x64xi8> into !amx.tile<4x64xi8>
// CHECK: amx.tile_muli {{.+}} zext
// CHECK-COUNT-32: vector.load %{{.+}} : memref<32x16xi32>, vector<16xi32>
// CHECK: %[[LOW:.+]] = arith.muli %{{.+}}, %{{.+}} : vector<16xi32>
// CHECK: %[[HIGH:.+]] = arith.muli %{{.+}}, %{{.+}} : vector<16xi32>
// CHECK: %[[DOT:.+]] = arith.addi %[[LOW]], %[[HIGH]] : vector<16xi32>
// CHECK: arith.sitofp %[[DOT]] : vector<16xi32> to vector<16xf32>
llm.weight @q {data_offset = 0 : i64} : tensor<16x256x!llm.quant<q6_k>>
func.func @q6_k_prompt(%x: tensor<?x256xf32>) -> tensor<?x16xf32> {
  %w = llm.get_weight @q : tensor<16x256x!llm.quant<q6_k>>
  %y = llm.matmul %x, %w : (tensor<?x256xf32>, tensor<16x256x!llm.quant<q6_k>>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// Decode (one static activation row) would fill a sixteenth of each tile: it
// stays on vpdpbusd, without padding.
// CHECK-LABEL: func.func @q4_0_decode
// CHECK-NOT: amx.
// CHECK-NOT: ceildivui
// CHECK: func.call @llvm.x86.avx512.vpdpbusd.512
// CHECK-NOT: amx.
llm.weight @q {data_offset = 0 : i64} : tensor<32x64x!llm.quant<q4_0>>
func.func @q4_0_decode(%x: tensor<1x64xf32>) -> tensor<1x32xf32> {
  %w = llm.get_weight @q : tensor<32x64x!llm.quant<q4_0>>
  %y = llm.matmul %x, %w : (tensor<1x64xf32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}

// -----

// A prompt's matmul of an element-major bf16 weight takes bf16 tiles: the
// activation rows rounded to bf16 once (padded to a multiple of 32 rows,
// each padding row the last row again) and read from their buffer; per 32
// elements, each of the block's 2 weight groups stored as its 16 rows'
// element pairs (elements 2j and 2j + 1 interleaved: tile row j) and read as
// the other tile; 2 × 2 tdpbf16ps sums carried through the K loop in tile
// registers, stored once, and read back by row.
// CHECK-LABEL: func.func @bf16_prompt
// CHECK: %[[VIEW:.+]] = tensor.expand_shape %{{.+}} output_shape [2, 64, 16] : tensor<2048xbf16> into tensor<2x64x16xbf16>
// CHECK: %[[ROWS:.+]] = tensor.dim %{{.+}}, %{{.+}} : tensor<?x64xf32>
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[ROWS]], %{{.+}} : index
// CHECK: %[[PADDED:.+]] = arith.muli %[[BLOCKS]], %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.subi %[[ROWS]], %{{.+}} : index
// CHECK: tensor.empty(%[[PADDED]]) : tensor<?x64xbf16>
// CHECK: %[[BF16ROWS:.+]] = scf.forall (%[[ROW:.+]]) in (%[[PADDED]])
// CHECK: arith.minui %[[ROW]], %[[LAST]] : index
// CHECK: arith.truncf %{{.+}} : vector<16xf32> to vector<16xbf16>
// CHECK: %[[ACTIVATIONS:.+]] = bufferization.to_buffer %[[BF16ROWS]] read_only : tensor<?x64xbf16> to memref<?x64xbf16>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, %{{.+}})
// CHECK: %[[PAIRS:.+]] = memref.alloca() {alignment = 64 : i64} : memref<32x32xbf16>
// CHECK: %[[PRODUCTS:.+]] = memref.alloca() {alignment = 64 : i64} : memref<32x32xf32>
// CHECK-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// CHECK: %[[SUMS:.+]]:4 = scf.for {{.+}} -> (!amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>, !amx.tile<16x16xf32>)
// CHECK: %[[EVEN:.+]] = vector.transfer_read %[[VIEW]]{{.+}} : tensor<2x64x16xbf16>, vector<16xbf16>
// CHECK: %[[ODD:.+]] = vector.transfer_read %[[VIEW]]{{.+}} : tensor<2x64x16xbf16>, vector<16xbf16>
// CHECK: %[[PAIR:.+]] = vector.interleave %[[EVEN]], %[[ODD]] : vector<16xbf16> -> vector<32xbf16>
// CHECK: vector.store %[[PAIR]], %[[PAIRS]]
// CHECK-COUNT-31: vector.store %{{.+}}, %[[PAIRS]]
// CHECK: %[[B0:.+]] = amx.tile_load %[[PAIRS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK: %[[B1:.+]] = amx.tile_load %[[PAIRS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK: %[[A0:.+]] = amx.tile_load %[[ACTIVATIONS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK: amx.tile_mulf %[[A0]], %[[B0]]
// CHECK: amx.tile_mulf %[[A0]], %[[B1]]
// CHECK: %[[A1:.+]] = amx.tile_load %[[ACTIVATIONS]]{{.+}} into !amx.tile<16x32xbf16>
// CHECK: amx.tile_mulf %[[A1]], %[[B0]]
// CHECK: amx.tile_mulf %[[A1]], %[[B1]]
// CHECK: scf.yield
// CHECK: amx.tile_store %[[PRODUCTS]]{{.+}}, %[[SUMS]]#0
// CHECK: amx.tile_store %[[PRODUCTS]]{{.+}}, %[[SUMS]]#1
// CHECK: amx.tile_store %[[PRODUCTS]]{{.+}}, %[[SUMS]]#2
// CHECK: amx.tile_store %[[PRODUCTS]]{{.+}}, %[[SUMS]]#3
// CHECK-COUNT-64: vector.load %[[PRODUCTS]]
// CHECK: tensor.parallel_insert_slice
// ROUNDED-LABEL: func.func @bf16_prompt
// ROUNDED: amx.tile_mulf
llm.weight @w {data_offset = 0 : i64} : tensor<32x64xbf16>
func.func @bf16_prompt(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @w : tensor<32x64xbf16>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64xbf16>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// f32 and f16 weights would round to bf16 on tiles: only with
// float-weights-bf16, where each pair of elements is widened (f16) and
// rounded to bf16 as it is stored. Without it they stay on the f32 FMA
// kernel.
// CHECK-LABEL: func.func @f16_prompt
// CHECK-NOT: amx.
// CHECK: vector.fma
// CHECK-NOT: amx.
// ROUNDED-LABEL: func.func @f16_prompt
// ROUNDED: %[[PAIR:.+]] = vector.interleave %{{.+}}, %{{.+}} : vector<16xf16> -> vector<32xf16>
// ROUNDED: %[[WIDE:.+]] = arith.extf %[[PAIR]] : vector<32xf16> to vector<32xf32>
// ROUNDED: %[[NARROW:.+]] = arith.truncf %[[WIDE]] : vector<32xf32> to vector<32xbf16>
// ROUNDED: vector.store %[[NARROW]]
// ROUNDED: amx.tile_mulf
llm.weight @w {data_offset = 0 : i64} : tensor<32x64xf16>
func.func @f16_prompt(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @w : tensor<32x64xf16>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64xf16>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Decode and shapes the tiles do not take (here 16 output rows, not a
// multiple of 32) stay on the FMA kernel.
// CHECK-LABEL: func.func @bf16_decode
// CHECK-NOT: amx.
// CHECK: vector.fma
// ROUNDED-LABEL: func.func @bf16_decode
// ROUNDED-NOT: amx.
llm.weight @w {data_offset = 0 : i64} : tensor<32x64xbf16>
func.func @bf16_decode(%x: tensor<1x64xf32>) -> tensor<1x32xf32> {
  %w = llm.get_weight @w : tensor<32x64xbf16>
  %y = llm.matmul %x, %w : (tensor<1x64xf32>, tensor<32x64xbf16>) -> tensor<1x32xf32>
  return %y : tensor<1x32xf32>
}
// CHECK-LABEL: func.func @bf16_narrow
// CHECK-NOT: amx.
// CHECK: vector.fma
// ROUNDED-LABEL: func.func @bf16_narrow
// ROUNDED-NOT: amx.
llm.weight @v {data_offset = 4096 : i64} : tensor<16x64xbf16>
func.func @bf16_narrow(%x: tensor<?x64xf32>) -> tensor<?x16xf32> {
  %w = llm.get_weight @v : tensor<16x64xbf16>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<16x64xbf16>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}
