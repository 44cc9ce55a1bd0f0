// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries | FileCheck %s --check-prefix=PREPARE
// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries --hetc-x86-export-entries | FileCheck %s --check-prefix=EXPORT

// Model entry points (a leading llm.weights argument) are privatized and tagged
// with their name for bufferization (so that no two look identical to
// duplicate-function-elimination), then exported with a C interface; other functions are
// left alone. Export writes the record of the shapes the entry points assume
// (magic, ABI version, vocabulary, layers, KV heads, head size, KV slots,
// element bytes, model hash, KV block size), read off the two KV caches, the
// logits and the paged caches' block size.
// PREPARE-LABEL: func.func private @entry
// PREPARE-SAME: attributes {hetc.entry = "entry", hetc.kv_block_size = 16 : i64}
// PREPARE-LABEL: func.func @helper
// PREPARE-NOT: hetc.entry
// EXPORT-LABEL: func.func @entry
// EXPORT-SAME: %{{.+}}: !llvm.ptr {hetc.runtime})
// EXPORT-SAME: attributes {hetc.entry = "entry", hetc.kv_block_size = 16 : i64, llvm.emit_c_interface}
// EXPORT-LABEL: func.func @helper
// EXPORT-NOT: llvm.emit_c_interface
// EXPORT: llvm.mlir.global external constant @hetc_code_record(dense<[3549757150917313864, 8, 300, 2, 4, 16, 64, 4, 0, 16]> : tensor<10xi64>) {addr_space = 0 : i32} : !llvm.array<10 x i64>
// No weight is read in another layout than the file's: an empty table.
// EXPORT: llvm.mlir.global external constant @hetc_weight_layouts(dense<0> : tensor<1xi64>)
func.func @entry(%w: memref<?xi8> {llm.weights}, %t: memref<?xi32>,
                 %p: memref<?xi32>, %b: memref<?xi32> {hetc.kv_block_table},
                 %c0: memref<2x4x64x16xf32>, %c1: memref<2x4x64x16xf32>,
                 %out: memref<1x300xf32>) attributes {hetc.kv_block_size = 16 : i64} {
  return
}
func.func @helper(%x: memref<4xf32>) {
  return
}

// -----

// Segment entry points (hetc.segment_entry: code for a CPU segment of a
// partitioned model) need no logits: each exports the signature of its
// buffers (count; then kind, element bytes, rank and sizes, -1 dynamic),
// and the record keeps the ABI and the model hash only.
// PREPARE-LABEL: func.func private @prefill_seg0
// PREPARE-SAME: attributes {hetc.entry = "prefill_seg0", hetc.segment_entry}
// EXPORT-LABEL: func.func @prefill_seg0
// EXPORT-SAME: %{{.+}}: !llvm.ptr {hetc.runtime})
// EXPORT: llvm.mlir.global external constant @hetc_signature_prefill_seg0(dense<[3, 1, 1, 1, -1, 0, 4, 2, -1, 64, 0, 4, 4, 2, 4, 8, 16]> : tensor<17xi64>)
// EXPORT: llvm.mlir.global external constant @hetc_signature_prefill_seg1(dense<[1, 0, 2, 1, -1]> : tensor<5xi64>)
// EXPORT: llvm.mlir.global external constant @hetc_code_record(dense<[3549757150917313864, 8, 0, 0, 0, 0, 0, 0, 81985529216486895, 0]> : tensor<10xi64>)
// The weights hetc-x86-block-matmuls chose to interleave, after their count.
// EXPORT: llvm.mlir.global external constant @hetc_weight_layouts(dense<[1, 0, 32, 36, 2, 1]> : tensor<6xi64>)
module attributes {hetc.model_hash = "0123456789abcdef", hetc.x86.weight_layouts = array<i64: 0, 32, 36, 2, 1>} {
  func.func @prefill_seg0(%w: memref<?xi8> {llm.weights}, %x: memref<?x64xf32>,
                          %c: memref<2x4x8x16xf32>) attributes {hetc.segment_entry} {
    return
  }
  func.func @prefill_seg1(%x: memref<?xf16>) attributes {hetc.segment_entry} {
    return
  }
}

// -----

// A batched decode's logits have a row per token: any count, the
// vocabulary static.
// EXPORT-LABEL: func.func @decode_batch
// EXPORT: llvm.mlir.global external constant @hetc_code_record(dense<[3549757150917313864, 8, 300, 1, 4, 16, 64, 4, 0, 64]> : tensor<10xi64>)
func.func @decode_batch(%w: memref<?xi8> {llm.weights}, %t: memref<?xi32>,
                        %p: memref<?xi32>, %b: memref<?x?xi32> {hetc.kv_block_table},
                        %c0: memref<2x4x64x16xf32>, %out: memref<?x300xf32>) attributes {hetc.kv_block_size = 64 : i64} {
  return
}
