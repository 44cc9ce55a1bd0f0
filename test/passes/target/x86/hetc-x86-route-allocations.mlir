// RUN: hetc-opt %s --hetc-x86-route-allocations | FileCheck %s

// The generic allocation functions the memref lowering declares get bodies
// that call the allocator installed in the exported table, and the C library
// while the table is empty.
// CHECK-LABEL: llvm.func @_mlir_memref_to_llvm_alloc(%{{.+}}: i64) -> !llvm.ptr
// CHECK: %[[TABLE:.+]] = llvm.mlir.addressof @hetc_buffer_allocator
// CHECK: %[[SLOT:.+]] = llvm.getelementptr %[[TABLE]][0, 0]
// CHECK: %[[FN:.+]] = llvm.load %[[SLOT]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.icmp "eq" %[[FN]]
// CHECK: llvm.cond_br
// CHECK: llvm.mlir.constant(64 : i64)
// CHECK: llvm.call %[[FN]]
// CHECK: llvm.call @malloc
// CHECK-LABEL: llvm.func @_mlir_memref_to_llvm_free(%{{.+}}: !llvm.ptr)
// CHECK: llvm.getelementptr %{{.+}}[0, 1]
// CHECK: llvm.call @free
// CHECK: llvm.mlir.global external @hetc_buffer_allocator() {{.*}} : !llvm.array<2 x ptr>
// CHECK: llvm.mlir.zero : !llvm.array<2 x ptr>
llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
llvm.func @kernel(%n: i64) {
  %p = llvm.call @_mlir_memref_to_llvm_alloc(%n) : (i64) -> !llvm.ptr
  llvm.call @_mlir_memref_to_llvm_free(%p) : (!llvm.ptr) -> ()
  llvm.return
}
