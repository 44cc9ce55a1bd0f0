// RUN: hetc import %shared/models/stories260K.gguf > %t.mlir
// RUN: hetc-opt %t.mlir --hetc-lower-cpu > %t.llvm.mlir
// RUN: FileCheck %s < %t.llvm.mlir
// RUN: not grep -E '^ *(%.+ = )?"?(llm|linalg|tensor|memref|scf|bufferization)\.' %t.llvm.mlir

// The whole CPU pipeline takes a real imported model to the LLVM dialect: both
// entry points exported with a C interface, no op of llm, linalg, tensor,
// memref, scf or bufferization left (the grep), and the only external calls
// malloc and free.
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @_mlir_ciface_prefill(
// CHECK-DAG: llvm.func @_mlir_ciface_decode(
