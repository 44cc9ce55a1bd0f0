// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-matmuls --mlir-print-local-scope | FileCheck %s
// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-matmuls=vector-bits=256 --mlir-print-local-scope | FileCheck %s --check-prefix=AVX2
// RUN: hetc-opt %s --split-input-file --convert-llm-to-linalg "--hetc-x86-block-matmuls=int8-dot=true" --mlir-print-local-scope | FileCheck %s --check-prefix=INT8
// RUN: not hetc-opt %s --split-input-file --convert-llm-to-linalg --hetc-x86-block-matmuls=vector-bits=384 2>&1 >/dev/null | FileCheck %s --check-prefix=BITS
// BITS: error: hetc-x86-block-matmuls: vector-bits is 384; x86 vector registers hold 128 (SSE), 256 (AVX2) or 512 (AVX-512) bits

// convert-llm-to-linalg leaves portable matmuls tagged with their weight's
// storage type; this pass gives them the CPU's blocking.
//
// A float matmul whose weight rows are not whole groups of 16 (f32 and f16;
// bf16 always) is register-blocked: a forall over (4-column, 4-row) blocks
// of the output whose body keeps 4×4 vector accumulators across a loop over
// 16-element steps of the reduction, reading each weight vector once per
// block. The weight reference becomes a view of the mapped model data at the
// weight's offset, passed in as a new leading argument. With a dynamic row
// count the block is written row by row, each row in bounds (a row past the
// end rewrites the last one with its own values), so no masked write needs a
// stack buffer.
llm.weight @w {data_offset = 256 : i64} : tensor<24x64xf32>
// CHECK-NOT: llm.
// CHECK-LABEL: func.func @f32_matmul
// With 256-bit vectors (AVX2's 16 registers) blocks hold 2 activation rows
// of 8 lanes.
// AVX2-LABEL: func.func @f32_matmul
// AVX2: arith.ceildivui %{{.+}}, %c2
// AVX2: scf.forall (%{{.+}}, %{{.+}}) in (6, %{{.+}}) shared_outs
// AVX2: scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// AVX2-NOT: llm.matmul_weight
// CHECK-SAME: (%[[DATA:.+]]: memref<?xi8> {llm.weights}, %[[X:.+]]: tensor<?x64xf32>)
// CHECK: %[[OFF:.+]] = arith.constant 256 : index
// CHECK: %[[VIEW:.+]] = memref.view %[[DATA]][%[[OFF]]][] : memref<?xi8> to memref<24x64xf32>
// CHECK: %[[W:.+]] = bufferization.to_tensor %[[VIEW]] restrict
// CHECK: %[[ROWS:.+]] = tensor.dim %[[X]]
// A prompt's rows go in chunks (here of 512: their activations fit half of
// L2), each a forall over its own row blocks.
// CHECK: scf.for %[[FIRST:.+]] = %{{.+}} to %[[ROWS]] step %c512 iter_args
// CHECK: %[[LEFT:.+]] = arith.subi %[[ROWS]], %[[FIRST]] : index
// CHECK: %[[CHUNK:.+]] = arith.minui %{{.+}}, %[[LEFT]] : index
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[CHUNK]], %{{.+}} : index
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (6, %[[BLOCKS]]) shared_outs
// CHECK-COUNT-4: arith.minui
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: vector.transfer_read %[[W]]{{.+}} : tensor<24x64xf32>, vector<16xf32>
// CHECK: vector.transfer_read %[[X]]
// CHECK-COUNT-4: vector.fma
// CHECK: scf.yield
// The 16 sums are reduced together: pairs halved and added level by level
// (15 adds of two shuffles each) into one vector of the block's 16 results.
// CHECK-NOT: vector.reduction
// CHECK-COUNT-30: vector.shuffle
// CHECK-NOT: vector.reduction
// CHECK: %[[OWNED:.+]] = arith.minui %{{.+}}, %{{.+}} : index
// CHECK: %[[LAST:.+]] = arith.subi %[[OWNED]], %{{.+}} : index
// CHECK-NOT: vector<4x4xf32>
// CHECK: %[[ROW:.+]] = vector.from_elements {{.+}} : vector<4xf32>
// CHECK: %[[AT:.+]] = arith.minui %{{.+}}, %[[LAST]] : index
// CHECK: vector.transfer_write %[[ROW]], %{{.+}}[%[[AT]], %{{.+}}] {in_bounds = [true]} : vector<4xf32>, tensor<?x4xf32>
// CHECK-COUNT-3: vector.transfer_write {{.+}} {in_bounds = [true]} : vector<4xf32>, tensor<?x4xf32>
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: llm.
// Float weights keep the float blocking with int8-dot too.
// INT8-LABEL: func.func @f32_matmul
// INT8-NOT: vpdpbusd
// INT8: vector.fma
func.func @f32_matmul(%x: tensor<?x64xf32>) -> tensor<?x24xf32> {
  %w = llm.get_weight @w : tensor<24x64xf32>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<24x64xf32>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// With 512-bit vectors, an f32 weight that only matmuls read, in whole
// groups of 16 rows, is read element-major (the module records it for the
// runtime, which rewrites it at load time: format 0, layout 1): a vector is
// element k of 16 rows. A prompt's block is 8 activation rows × 2 groups
// (32 weight rows): per element, each group's vector and each row's
// activation broadcast meet in one FMA, and each of the 16 accumulators ends
// as 16 results of one row (no horizontal sums), written as a vector.
// CHECK: module attributes {hetc.x86.weight_layouts = array<i64: 0, 64, 256, 0, 1>}
// CHECK-LABEL: func.func @f32_interleaved_matmul
// CHECK: tensor.expand_shape {{.+}} output_shape [4, 64, 16] : tensor<4096xf32> into tensor<4x64x16xf32>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (2, %{{.+}}) shared_outs
// CHECK-COUNT-8: arith.minui
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: vector.transfer_read {{.+}} : tensor<4x64x16xf32>, vector<16xf32>
// CHECK: %[[A:.+]] = tensor.extract %{{.+}} : tensor<?x64xf32>
// CHECK: %[[SPLAT:.+]] = vector.broadcast %[[A]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[SPLAT]], %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: vector.fma %[[SPLAT]], %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK-NOT: vector.shuffle
// CHECK: vector.transfer_write {{.+}} : vector<16xf32>, tensor<?x32xf32>
// AVX2-NOT: hetc.x86.weight_layouts
// AVX2-LABEL: func.func @f32_interleaved_matmul
// AVX2: scf.forall (%{{.+}}, %{{.+}}) in (16, %{{.+}}) shared_outs
llm.weight @w {data_offset = 0 : i64} : tensor<64x64xf32>
func.func @f32_interleaved_matmul(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llm.get_weight @w : tensor<64x64xf32>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A Q4_0 weight is its byte rows (64 elements = 2 blocks of 18 bytes),
// viewed as [rows, blocks, 18]. Each reduction step decodes one block of each
// of the block's weight rows in registers: the f16 scale, the 16 packed bytes
// split into nibbles, turned into floats by placing them in the mantissa of
// 2^23 and subtracting 2^23 + 8, and scaled. No dequantized copy of the
// weight is built.
llm.weight @q {data_offset = 0 : i64} : tensor<32x64x!llm.quant<q4_0>>
// CHECK-LABEL: func.func @q4_0_matmul
// With 8 lanes a block's 16 bytes are two reads; their low nibbles are
// elements 0-7 and 8-15, their high ones 16-23 and 24-31.
// AVX2-LABEL: func.func @q4_0_matmul
// AVX2: vector.transfer_read {{.+}} : tensor<32x2x18xi8>, vector<2xi8>
// AVX2-COUNT-2: vector.transfer_read {{.+}} : tensor<32x2x18xi8>, vector<8xi8>
// AVX2: arith.bitcast {{.+}} : vector<8xi32> to vector<8xf32>
// CHECK: memref.view {{.+}} : memref<?xi8> to memref<32x36xi8>
// CHECK: %[[BLOCKS:.+]] = tensor.expand_shape {{.+}} : tensor<32x36xi8> into tensor<32x2x18xi8>
// CHECK: scf.forall
// CHECK: scf.for %{{.+}} = %{{.+}} to %c2{{.*}} step
// CHECK: vector.transfer_read %[[BLOCKS]]{{.+}} : tensor<32x2x18xi8>, vector<2xi8>
// CHECK: vector.bitcast {{.+}} : vector<2xi8> to vector<1xf16>
// CHECK: vector.transfer_read %[[BLOCKS]]{{.+}} : tensor<32x2x18xi8>, vector<16xi8>
// CHECK: arith.extui {{.+}} : vector<16xi8> to vector<16xi32>
// CHECK: arith.andi
// CHECK: arith.shrui
// CHECK: arith.ori
// CHECK: arith.bitcast {{.+}} : vector<16xi32> to vector<16xf32>
// CHECK: arith.subf
// CHECK: vector.fma
// CHECK-COUNT-30: vector.shuffle
// CHECK-NOT: llm.
// With int8 dot products (int8-dot) the activation rows are first rounded to
// int8 blocks of 32 in a parallel loop over rows: scale max|x| / 127, codes
// roundeven(x / scale), and per block the negated code sum. A Q4_0 weight
// that only matmuls read, in whole groups of 16 rows, is read interleaved
// (the module records it for the runtime, which rewrites it at load time):
// a group's 16 rows are the 16 lanes of a vector, so each vpdpbusd multiplies
// 4 codes of every row with 4 activation codes broadcast to all lanes,
// starting from -8 × the block's code sum (two chains of four: their
// latencies overlap); each lane ends as its row's block sum, scaled by the rows' f16 scales times the activation scale, and a
// row's 16 results are written as one vector.
// INT8: module attributes {hetc.x86.weight_layouts = array<i64: 0, 32, 36, 2, 1>}
// INT8: func.func private @llvm.x86.avx512.vpdpbusd.512(vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// INT8-LABEL: func.func @q4_0_matmul
// INT8-NOT: output_shape [32, 2, 18]
// INT8: tensor.expand_shape {{.+}} output_shape [2, 2, 288] : tensor<1152xi8> into tensor<2x2x288xi8>
// INT8: scf.forall (%{{.+}}) in (%{{.+}}) shared_outs({{.+}}) -> (tensor<?x64xi8>, tensor<?x1x16xf32>, tensor<?x2xi32>)
// INT8: vector.reduction <maximumf>
// INT8: math.roundeven {{.+}} : vector<32xf32>
// INT8: vector.reduction <add>, {{.+}} : vector<8xi32> into i32
// INT8: scf.forall (%{{.+}}, %{{.+}}) in (2, %{{.+}})
// INT8: %[[HALF:.+]] = vector.bitcast {{.+}} : vector<32xi8> to vector<16xf16>
// INT8: arith.extf %[[HALF]] : vector<16xf16> to vector<16xf32>
// INT8: arith.andi {{.+}} : vector<64xi8>
// INT8: arith.shrui {{.+}} : vector<64xi8>
// INT8: %[[CODES:.+]] = vector.bitcast {{.+}} : vector<32xi8> to vector<8xi32>
// INT8: %[[SUM:.+]] = tensor.extract {{.+}} : tensor<?x2xi32>
// INT8: %[[SHIFTED:.+]] = arith.shli %[[SUM]], %{{.+}} : i32
// INT8: %[[BIAS:.+]] = vector.broadcast %[[SHIFTED]] : i32 to vector<16xi32>
// INT8: %[[QUAD:.+]] = vector.extract %[[CODES]][0] : i32 from vector<8xi32>
// INT8: %[[SPLAT:.+]] = vector.broadcast %[[QUAD]] : i32 to vector<16xi32>
// INT8: %[[BYTES:.+]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<64xi8>
// INT8: %[[FIRST:.+]] = func.call @llvm.x86.avx512.vpdpbusd.512(%[[BIAS]], %{{.+}}, %[[BYTES]])
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %{{.+}}, %{{.+}})
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(%[[FIRST]], %{{.+}}, %{{.+}})
// INT8-COUNT-5: func.call @llvm.x86.avx512.vpdpbusd.512
// INT8: %[[INT:.+]] = arith.sitofp %{{.+}} : vector<16xi32> to vector<16xf32>
// INT8: vector.fma %{{.+}}, %[[INT]], %{{.+}} : vector<16xf32>
// INT8-NOT: vector.reduction <add>
// INT8: vector.transfer_write {{.+}} : vector<16xf32>, tensor<?x16xf32>
func.func @q4_0_matmul(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @q : tensor<32x64x!llm.quant<q4_0>>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// Rows that are not whole groups of 16 keep the file's layout. The activation
// rows are first rounded to
// int8 blocks of 32 in a parallel loop over rows: scale max|x| / 127, codes
// roundeven(x / scale), and per 4-code lane the negated code sums (for the
// weight's offset) and the scale and scaled sums. A step of the matmul then
// reads 64 weight codes (two Q4_0 blocks: low nibbles, then high, of each)
// and multiplies them with 64 activation codes in one vpdpbusd whose
// accumulator starts at -8 × the lane sums; lane scales (weight × activation)
// turn the integer lanes into f32 sums.
// INT8-NOT: hetc.x86.weight_layouts
// CHECK-LABEL: func.func @q4_0_rows_matmul
// AVX2-LABEL: func.func @q4_0_rows_matmul
// INT8-LABEL: func.func @q4_0_rows_matmul
// INT8: scf.forall (%{{.+}}) in (%{{.+}}) shared_outs({{.+}}) -> (tensor<?x64xi8>, tensor<?x1x16xf32>, tensor<?x16xi32>)
// INT8: vector.reduction <maximumf>
// INT8: math.roundeven {{.+}} : vector<32xf32>
// INT8: arith.trunci {{.+}} : vector<32xi32> to vector<32xi8>
// INT8: scf.forall (%{{.+}}, %{{.+}}) in (6, %{{.+}})
// INT8: arith.andi {{.+}} : vector<16xi8>
// INT8: arith.shrui {{.+}} : vector<16xi8>
// INT8: vector.shuffle {{.+}} : vector<16xi8>, vector<16xi8>
// INT8: vector.shuffle {{.+}} : vector<32xi8>, vector<32xi8>
// INT8: vector.transfer_read {{.+}} : tensor<?x64xi8>, vector<64xi8>
// INT8: %[[SUMS:.+]] = vector.transfer_read {{.+}} : tensor<?x16xi32>, vector<16xi32>
// INT8: %[[BIAS:.+]] = arith.shli %[[SUMS]], %{{.+}} : vector<16xi32>
// INT8: %[[DOT:.+]] = func.call @llvm.x86.avx512.vpdpbusd.512(%[[BIAS]], %{{.+}}, %{{.+}})
// INT8: %[[INT:.+]] = arith.sitofp %[[DOT]] : vector<16xi32> to vector<16xf32>
// INT8: vector.fma %{{.+}}, %[[INT]], %{{.+}} : vector<16xf32>
llm.weight @q {data_offset = 0 : i64} : tensor<24x64x!llm.quant<q4_0>>
func.func @q4_0_rows_matmul(%x: tensor<?x64xf32>) -> tensor<?x24xf32> {
  %w = llm.get_weight @q : tensor<24x64x!llm.quant<q4_0>>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<24x64x!llm.quant<q4_0>>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// A weight that other code reads too (an output tied to the token
// embedding, which the gather reads in the file's layout) is multiplied from
// an interleaved copy after the data section: its entry is a copy (kind 2),
// and the copy is viewed from the end of the weights buffer (1152 bytes of
// copies), while the gather keeps reading the tensor itself.
// CHECK-LABEL: func.func @tied_q4_0
// AVX2-LABEL: func.func @tied_q4_0
// INT8: module attributes {hetc.x86.weight_layouts = array<i64: 0, 32, 36, 2, 2>}
// INT8-LABEL: func.func @tied_q4_0
// INT8: %[[SIZE:.+]] = memref.dim %arg0, %{{.+}} : memref<?xi8>
// INT8: %[[SHIFT:.+]] = arith.subi %[[SIZE]], %c1152 : index
// INT8: %[[COPY:.+]] = memref.view %arg0[%[[SHIFT]]][] : memref<?xi8> to memref<32x36xi8>
// INT8: %[[FILE:.+]] = memref.view %arg0[%c0][] : memref<?xi8> to memref<32x36xi8>
// INT8: %[[COPYT:.+]] = bufferization.to_tensor %[[COPY]]
// INT8: %[[FILET:.+]] = bufferization.to_tensor %[[FILE]]
// INT8: tensor.extract %[[FILET]]
// INT8: tensor.collapse_shape %[[COPYT]]
// INT8: tensor.expand_shape {{.+}} output_shape [2, 2, 288]
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512
llm.weight @t {data_offset = 0 : i64} : tensor<32x64x!llm.quant<q4_0>>
func.func @tied_q4_0(%ids: tensor<?xi32>) -> tensor<?x32xf32> {
  %w = llm.get_weight @t : tensor<32x64x!llm.quant<q4_0>>
  %x = llm.embedding %ids, %w : (tensor<?xi32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<?x64xf32>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64x!llm.quant<q4_0>>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A Q4_K weight in whole groups of 16 rows is read interleaved as well, a
// super-block of the group at a time: per sub-block, its 16 rows' 6-bit
// scales and mins are unpacked lane by lane from the scale bytes (stored
// byte-major), the nibbles of 8 runs meet the activation block's codes, and
// the mins are taken off with the block's code sum.
// CHECK-LABEL: func.func @q4_k_interleaved
// AVX2-LABEL: func.func @q4_k_interleaved
// INT8: module attributes {hetc.x86.weight_layouts = array<i64: 0, 16, 144, 12, 1>}
// INT8-LABEL: func.func @q4_k_interleaved
// INT8: tensor.expand_shape {{.+}} output_shape [1, 1, 2304] : tensor<2304xi8> into tensor<1x1x2304xi8>
// INT8: scf.forall (%{{.+}}, %{{.+}}) in (1, 1)
// INT8: arith.extui {{.+}} : vector<16xi8> to vector<16xi32>
// INT8: arith.andi {{.+}} : vector<16xi32>
// INT8-COUNT-8: func.call @llvm.x86.avx512.vpdpbusd.512
// INT8: vector.fma
// INT8: vector.fma
// INT8: vector.transfer_write {{.+}} : vector<16xf32>, tensor<1x16xf32>
llm.weight @k {data_offset = 0 : i64} : tensor<16x256x!llm.quant<q4_k>>
func.func @q4_k_interleaved(%x: tensor<1x256xf32>) -> tensor<1x16xf32> {
  %w = llm.get_weight @k : tensor<16x256x!llm.quant<q4_k>>
  %y = llm.matmul %x, %w : (tensor<1x256xf32>, tensor<16x256x!llm.quant<q4_k>>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// Q6_K, interleaved with each quarter's low nibbles and high bits apart
// (quarters share no bytes): a quarter's two 16-element halves have their
// own scales, so each half is a chain of 4 vpdpbusd starting from -32 × the
// half's activation code sum, and the halves' int8 scales weight the
// chains' integer sums before one conversion to f32. Each group prefetches
// its share of the block's lines 512 bytes ahead, clamped to the weight.
// CHECK-LABEL: func.func @q6_k_interleaved
// AVX2-LABEL: func.func @q6_k_interleaved
// INT8: module attributes {hetc.x86.weight_layouts = array<i64: 0, 16, 210, 14, 1>}
// INT8-LABEL: func.func @q6_k_interleaved
// INT8: tensor.expand_shape {{.+}} output_shape [1, 1, 3360] : tensor<3360xi8> into tensor<1x1x3360xi8>
// INT8: %[[FLAT:.+]] = memref.collapse_shape %{{.+}} {{\[}}[0, 1]] : memref<16x210xi8> into memref<3360xi8>
// INT8: scf.forall (%{{.+}}) in (1) shared_outs({{.+}}) -> (tensor<1x256xi8>, tensor<1x1x64xf32>, tensor<1x16xi32>)
// INT8: %[[AHEAD:.+]] = arith.addi %{{.+}}, %c512 : index
// INT8: %[[CLAMPED:.+]] = arith.minui %[[AHEAD]], %c3359 : index
// INT8: memref.prefetch %[[FLAT]][%[[CLAMPED]]], read, locality<3>, data : memref<3360xi8>
// INT8: %[[SCALE0:.+]] = arith.extsi {{.+}} : vector<16xi8> to vector<16xi32>
// INT8: %[[SCALE1:.+]] = arith.extsi {{.+}} : vector<16xi8> to vector<16xi32>
// INT8: %[[LOW:.+]] = arith.shli %{{.+}}, %{{.+}} : i32
// INT8: %[[LOWBIAS:.+]] = vector.broadcast %[[LOW]] : i32 to vector<16xi32>
// INT8: %[[HIGH:.+]] = arith.shli %{{.+}}, %{{.+}} : i32
// INT8: %[[HIGHBIAS:.+]] = vector.broadcast %[[HIGH]] : i32 to vector<16xi32>
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(%[[LOWBIAS]],
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512(%[[HIGHBIAS]],
// INT8: arith.muli %{{.+}}, %[[SCALE0]] : vector<16xi32>
// INT8: arith.muli %{{.+}}, %[[SCALE1]] : vector<16xi32>
// INT8: arith.sitofp %{{.+}} : vector<16xi32> to vector<16xf32>
llm.weight @s {data_offset = 0 : i64} : tensor<16x256x!llm.quant<q6_k>>
func.func @q6_k_interleaved(%x: tensor<1x256xf32>) -> tensor<1x16xf32> {
  %w = llm.get_weight @s : tensor<16x256x!llm.quant<q6_k>>
  %y = llm.matmul %x, %w : (tensor<1x256xf32>, tensor<16x256x!llm.quant<q6_k>>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// One activation row (decode) reads a row-major f16 weight (rows not in
// whole groups of 16) one row at a time (several interleaved short rows
// defeat the hardware prefetcher), along four independent accumulators; the
// weight is widened in registers and each result is written without bounds
// checks.
llm.weight @h {data_offset = 0 : i64} : tensor<24x64xf16>
// CHECK-LABEL: func.func @f16_decode_matmul
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (24, 1)
// CHECK-NOT: arith.minui
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK: vector.transfer_read {{.+}} : tensor<24x64xf16>, vector<16xf16>
// CHECK: arith.extf {{.+}} : vector<16xf16> to vector<16xf32>
// CHECK-COUNT-4: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-3: arith.addf {{.+}} : vector<16xf32>
// CHECK: vector.from_elements {{.+}} : vector<1x1xf32>
// CHECK: vector.transfer_write {{.+}} {in_bounds = [true, true]} : vector<1x1xf32>, tensor<1x1xf32>
func.func @f16_decode_matmul(%x: tensor<1x64xf32>) -> tensor<1x24xf32> {
  %w = llm.get_weight @h : tensor<24x64xf16>
  %y = llm.matmul %x, %w : (tensor<1x64xf32>, tensor<24x64xf16>) -> tensor<1x24xf32>
  return %y : tensor<1x24xf32>
}

// -----

// An f16 weight in whole groups of 16 rows is read element-major too (format
// 1 in the table), a prompt's block being 4 activation rows × 4 groups (64
// weight rows), each group's 16 halves widened once per element.
// CHECK: module attributes {hetc.x86.weight_layouts = array<i64: 0, 64, 128, 1, 1>}
// CHECK-LABEL: func.func @f16_interleaved_matmul
// CHECK: tensor.expand_shape {{.+}} output_shape [4, 64, 16] : tensor<4096xf16> into tensor<4x64x16xf16>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, %{{.+}}) shared_outs
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-4: arith.extf {{.+}} : vector<16xf16> to vector<16xf32>
// CHECK: tensor.extract %{{.+}} : tensor<?x64xf32>
// CHECK-COUNT-4: vector.fma
llm.weight @h {data_offset = 0 : i64} : tensor<64x64xf16>
func.func @f16_interleaved_matmul(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llm.get_weight @h : tensor<64x64xf16>
  %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<64x64xf16>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// An activation row past half of L1 (here 5632 floats) is shared by eight
// weight rows per step, so it is re-read an eighth as often.
llm.weight @wide {data_offset = 0 : i64} : tensor<24x5632xf16>
// CHECK-LABEL: func.func @wide_decode_matmul
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (3, 1)
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-8: vector.transfer_read {{.+}} : tensor<24x5632xf16>, vector<16xf16>
// CHECK-COUNT-14: vector.shuffle
// CHECK: vector.transfer_write {{.+}} : vector<1x8xf32>
// AVX2-LABEL: func.func @wide_decode_matmul
// INT8-LABEL: func.func @wide_decode_matmul
func.func @wide_decode_matmul(%x: tensor<1x5632xf32>) -> tensor<1x24xf32> {
  %w = llm.get_weight @wide : tensor<24x5632xf16>
  %y = llm.matmul %x, %w : (tensor<1x5632xf32>, tensor<24x5632xf16>) -> tensor<1x24xf32>
  return %y : tensor<1x24xf32>
}

// -----

// Decode streams an element-major f32 group front to back (one contiguous
// run), its elements handed to four accumulators in turn; their sum is the
// group's 16 results.
llm.weight @f {data_offset = 0 : i64} : tensor<16x64xf32>
// CHECK-LABEL: func.func @f32_decode_matmul
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, 1)
// CHECK: scf.for {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK-COUNT-4: vector.fma
// CHECK: scf.yield
// CHECK-COUNT-3: arith.addf {{.+}} : vector<16xf32>
// CHECK-NOT: vector.reduction
// CHECK: vector.transfer_write {{.+}} : vector<16xf32>, tensor<1x16xf32>
func.func @f32_decode_matmul(%x: tensor<1x64xf32>) -> tensor<1x16xf32> {
  %w = llm.get_weight @f : tensor<16x64xf32>
  %y = llm.matmul %x, %w : (tensor<1x64xf32>, tensor<16x64xf32>) -> tensor<1x16xf32>
  return %y : tensor<1x16xf32>
}

// -----

// A K-quant step is one 256-element super-block, read in 8 groups of 32
// elements. One activation row (decode) hands the groups to four
// accumulators in turn. A Q4_K group unpacks its sub-block's 6-bit scale and
// min from the header bytes (sub-block 0: bytes 4 and 8 masked to 6 bits;
// sub-block 4 assembles them from byte 12's nibbles and the top bits of bytes
// 4 and 8), scales both by the f16 d and dmin, and decodes 32 nibbles as
// d·scale·q − dmin·min with one fused multiply-add per vector.
llm.weight @q4k {data_offset = 0 : i64} : tensor<8x512x!llm.quant<q4_k>>
// CHECK-LABEL: func.func @q4_k_decode_matmul
// CHECK: tensor.expand_shape {{.+}} : tensor<8x288xi8> into tensor<8x2x144xi8>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (8, 1)
// CHECK: scf.for %{{.+}} = %{{.+}} to %c2{{.*}} step {{.+}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[S0:.+]] = tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c4{{.*}}] : tensor<8x2x144xi8>
// CHECK: %[[SC0:.+]] = arith.extui %[[S0]] : i8 to i32
// CHECK: arith.andi %[[SC0]], %c63{{.*}} : i32
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c8{{.*}}] : tensor<8x2x144xi8>
// CHECK: vector.bitcast {{.+}} : vector<2xi8> to vector<1xf16>
// CHECK: arith.mulf {{.+}} : f32
// CHECK: arith.negf {{.+}} : f32
// CHECK: vector.transfer_read {{.+}}[%{{.+}}, %{{.+}}, %c16{{.*}}]{{.+}} : tensor<8x2x144xi8>, vector<16xi8>
// CHECK: arith.andi {{.+}} : vector<16xi32>
// CHECK: arith.ori {{.+}} : vector<16xi32>
// CHECK: arith.subf
// CHECK: vector.fma
// CHECK: vector.transfer_read {{.+}} : tensor<1x512xf32>, vector<16xf32>
// Sub-block 4 (the fifth group) assembles its scale and min.
// CHECK-COUNT-3: vector.fma
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c12{{.*}}] : tensor<8x2x144xi8>
// CHECK: arith.shrui %{{.+}}, %c6{{.*}} : i32
// CHECK: arith.shli %{{.+}}, %c4{{.*}} : i32
// CHECK: arith.ori {{.+}} : i32
// CHECK: scf.yield
// CHECK-COUNT-3: arith.addf {{.+}} : vector<16xf32>
// CHECK: vector.reduction <add>
// AVX2-LABEL: func.func @q4_k_decode_matmul
// AVX2-COUNT-4: vector.transfer_read {{.+}} : tensor<8x2x144xi8>, vector<8xi8>
// With int8 dot products a Q4_K group is 64 codes (two sub-blocks' nibbles),
// its 8 scales and mins unpacked together from the 12 header bytes, and the
// min taken off with the activation's scaled lane sums; no code offset.
// INT8-LABEL: func.func @q4_k_decode_matmul
// INT8: scf.forall (%{{.+}}, %{{.+}}) in (8, 1)
// INT8: vector.transfer_read {{.+}} : tensor<8x2x144xi8>, vector<12xi8>
// INT8: vector.shuffle {{.+}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<12xi32>, vector<12xi32>
// INT8: arith.negf {{.+}} : vector<8xf32>
// INT8: vector.shuffle {{.+}} [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1] : vector<8xf32>, vector<8xf32>
// INT8-NOT: arith.shli {{.+}} : vector<16xi32>
// INT8: %[[DOT:.+]] = func.call @llvm.x86.avx512.vpdpbusd.512(%cst{{.*}}, %{{.+}}, %{{.+}})
// INT8: %[[INT:.+]] = arith.sitofp %[[DOT]]
// INT8: %[[SUM:.+]] = vector.fma %{{.+}}, %[[INT]], %{{.+}} : vector<16xf32>
// INT8: vector.fma %{{.+}}, %{{.+}}, %[[SUM]] : vector<16xf32>
func.func @q4_k_decode_matmul(%x: tensor<1x512xf32>) -> tensor<1x8xf32> {
  %w = llm.get_weight @q4k : tensor<8x512x!llm.quant<q4_k>>
  %y = llm.matmul %x, %w : (tensor<1x512xf32>, tensor<8x512x!llm.quant<q4_k>>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}

// -----

// A Q6_K group of 32 takes its low nibbles from the 128 low bytes, two high
// bits from the 64 bytes after them (bits 2t for quarter t of a half), and
// an int8 scale per 16 elements from byte 192 on, times the f16 d at byte
// 208; q − 32 comes out of the float mantissa like Q4_0's nibbles.
llm.weight @q6 {data_offset = 0 : i64} : tensor<4x256x!llm.quant<q6_k>>
// CHECK-LABEL: func.func @q6_k_matmul
// CHECK: tensor.expand_shape {{.+}} : tensor<4x210xi8> into tensor<4x1x210xi8>
// CHECK: scf.forall (%{{.+}}, %{{.+}}) in (1, %{{.+}})
// CHECK: vector.bitcast {{.+}} : vector<2xi8> to vector<1xf16>
// CHECK: vector.transfer_read {{.+}}[%{{.+}}, %{{.+}}, %c0{{.*}}]{{.+}} : tensor<4x1x210xi8>, vector<16xi8>
// CHECK: vector.transfer_read {{.+}}[%{{.+}}, %{{.+}}, %c128{{.*}}]{{.+}} : tensor<4x1x210xi8>, vector<16xi8>
// CHECK: arith.andi {{.+}} : vector<16xi32>
// CHECK: arith.shli {{.+}} : vector<16xi32>
// CHECK: arith.ori {{.+}} : vector<16xi32>
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c192{{.*}}] : tensor<4x1x210xi8>
// CHECK: arith.sitofp {{.+}} : i8 to f32
// CHECK: arith.mulf {{.+}} : vector<16xf32>
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}, %c193{{.*}}] : tensor<4x1x210xi8>
// CHECK: vector.fma
// CHECK-NOT: llm.
// With int8 dot products Q6_K codes keep their offset of 32 (taken off with
// 32 × the lane sums) and the four int8 scales of a 64-code group are read
// together and repeated over 4 lanes each.
// INT8-LABEL: func.func @q6_k_matmul
// INT8: arith.ori {{.+}} : vector<32xi8>
// INT8: vector.transfer_read {{.+}} : tensor<4x1x210xi8>, vector<4xi8>
// INT8: vector.shuffle {{.+}} [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3] : vector<4xf32>, vector<4xf32>
// INT8: arith.shli %{{.+}}, %cst{{.*}} : vector<16xi32>
// INT8: func.call @llvm.x86.avx512.vpdpbusd.512
func.func @q6_k_matmul(%x: tensor<?x256xf32>) -> tensor<?x4xf32> {
  %w = llm.get_weight @q6 : tensor<4x256x!llm.quant<q6_k>>
  %y = llm.matmul %x, %w : (tensor<?x256xf32>, tensor<4x256x!llm.quant<q6_k>>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// A row length that is not a whole number of vectors has no vector
// decoding: the generic stays portable, and the tag is consumed so nothing
// later takes a fused generic for a matmul.
llm.weight @short {data_offset = 0 : i64} : tensor<4x40xf32>
// CHECK-LABEL: func.func @short_rows_matmul
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: llm.matmul_weight
// CHECK-NOT: scf.forall
// CHECK: return
func.func @short_rows_matmul(%x: tensor<?x40xf32>) -> tensor<?x4xf32> {
  %w = llm.get_weight @short : tensor<4x40xf32>
  %y = llm.matmul %x, %w : (tensor<?x40xf32>, tensor<4x40xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
