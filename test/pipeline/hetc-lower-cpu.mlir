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

// Kernels run over a grid and may process thousands of rows per call: none
// may allocate stack space in its loops (only entry points build argument
// structs on the stack), or the stack would grow with every row.
// RUN: %python -c "import re, sys; kernels = [f for f in re.split(r'\n  llvm\.func ', open(sys.argv[1]).read()) if f.startswith('private @hetc_kernel_') or f.startswith('internal @hetc_kernel_') or f.startswith('@hetc_kernel_')]; bad = [f.split('(')[0] for f in kernels if 'llvm.alloca' in f]; print(len(kernels), 'kernels;', 'allocating:', bad or 'none'); sys.exit(bool(bad) or not kernels)" %t.llvm.mlir | FileCheck %s --check-prefix=STACK
// STACK: {{[1-9][0-9]*}} kernels; allocating: none
