// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries | FileCheck %s --check-prefix=PREPARE
// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries --hetc-x86-export-entries | FileCheck %s --check-prefix=EXPORT

// Model entry points (a leading llm.weights argument) are privatized and tagged
// for bufferization, then exported with a C interface; other functions are
// left alone. Export writes the record of the shapes the entry points assume
// (magic, ABI version, vocabulary, layers, KV heads, head size, context,
// element bytes), read off the two KV caches and the logits.
// PREPARE-LABEL: func.func private @entry
// PREPARE-SAME: attributes {hetc.entry}
// PREPARE-LABEL: func.func @helper
// PREPARE-NOT: hetc.entry
// EXPORT-LABEL: func.func @entry
// EXPORT-SAME: %{{.+}}: !llvm.ptr {hetc.runtime})
// EXPORT-SAME: attributes {hetc.entry, llvm.emit_c_interface}
// EXPORT-LABEL: func.func @helper
// EXPORT-NOT: llvm.emit_c_interface
// EXPORT: llvm.mlir.global external constant @hetc_code_record(dense<[3549757150917313864, 4, 300, 2, 4, 16, 64, 4, 0]> : tensor<9xi64>) {addr_space = 0 : i32} : !llvm.array<9 x i64>
func.func @entry(%w: memref<?xi8> {llm.weights}, %t: memref<?xi32>,
                 %p: memref<?xi32>, %c0: memref<2x64x4x16xf32>,
                 %c1: memref<2x64x4x16xf32>, %out: memref<1x300xf32>) {
  return
}
func.func @helper(%x: memref<4xf32>) {
  return
}
