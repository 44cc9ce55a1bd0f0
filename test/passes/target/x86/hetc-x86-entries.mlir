// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries | FileCheck %s --check-prefix=PREPARE
// RUN: hetc-opt %s --split-input-file --hetc-x86-prepare-entries --hetc-x86-export-entries | FileCheck %s --check-prefix=EXPORT

// Model entry points (a leading llm.weights argument) are privatized and tagged
// for bufferization, then exported with a C interface; other functions are
// left alone.
// PREPARE-LABEL: func.func private @entry
// PREPARE-SAME: attributes {hetc.entry}
// PREPARE-LABEL: func.func @helper
// PREPARE-NOT: hetc.entry
// EXPORT-LABEL: func.func @entry
// EXPORT-SAME: %{{.+}}: !llvm.ptr {hetc.runtime})
// EXPORT-SAME: attributes {hetc.entry, llvm.emit_c_interface}
// EXPORT-LABEL: func.func @helper
// EXPORT-NOT: llvm.emit_c_interface
func.func @entry(%w: memref<?xi8> {llm.weights}, %out: memref<4xf32>) {
  return
}
func.func @helper(%x: memref<4xf32>) {
  return
}
