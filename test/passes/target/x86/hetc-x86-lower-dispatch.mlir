// RUN: hetc-opt %s --hetc-x86-lower-dispatch | FileCheck %s

// A kernel call from an entry becomes: operands packed into a stack struct, and
// parallel_for(pool, task, args, begin, end) loaded from the runtime interface
// (the entry's last argument); the task trampoline unpacks and calls the kernel.
// CHECK-LABEL: llvm.func @entry
// CHECK-SAME: (%[[DATA:.+]]: !llvm.ptr, %[[N:.+]]: i64, %[[RT:.+]]: !llvm.ptr)
// CHECK: %[[ARGS:.+]] = llvm.alloca %{{.+}} x !llvm.struct<(ptr, i64)>
// CHECK: llvm.store %[[DATA]]
// CHECK: llvm.store %[[N]]
// CHECK: %[[POOL:.+]] = llvm.load {{.+}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[FOR:.+]] = llvm.load {{.+}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[TASK:.+]] = llvm.mlir.addressof @hetc_kernel_0_task
// CHECK: llvm.call %[[FOR]](%[[POOL]], %[[TASK]], %[[ARGS]], %{{.+}}, %[[N]])
// CHECK-NOT: llvm.call @hetc_kernel_0(
// CHECK-LABEL: llvm.func internal @hetc_kernel_0_task
// CHECK-SAME: (%[[P:.+]]: !llvm.ptr, %[[B:.+]]: i64, %[[E:.+]]: i64)
// CHECK: llvm.call @hetc_kernel_0(%{{.+}}, %{{.+}}, %[[B]], %[[E]])
llvm.func @hetc_kernel_0(%data: !llvm.ptr, %n: i64, %begin: i64, %end: i64) {
  llvm.return
}
llvm.func @entry(%data: !llvm.ptr, %n: i64, %rt: !llvm.ptr) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  llvm.call @hetc_kernel_0(%data, %n, %c0, %n) : (!llvm.ptr, i64, i64, i64) -> ()
  llvm.return
}
