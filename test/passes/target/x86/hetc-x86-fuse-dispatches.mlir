// RUN: hetc-opt %s --split-input-file --hetc-x86-fuse-dispatches | FileCheck %s

// Two kernels that read one row and write their own buffers (the Q and K
// projections) are dispatched as one over both grids: each call of the
// fused kernel on [begin, end) runs every part whose stretch overlaps it,
// on the overlap in the part's own indices. The allocation between them
// moves ahead of the fused call.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[X:.+]]: memref<64xf32>, %[[Q:.+]]: memref<64xf32>, %[[RT:.+]]: !llvm.ptr
// CHECK: %[[K:.+]] = memref.alloc() : memref<64xf32>
// CHECK: call @hetc_kernel_fused_0(%[[X]], %[[Q]], %[[K]], %[[C0:.+]], %[[C64:.+]], %[[C0]], %[[C32:.+]], %{{.+}}, %{{.+}})
// CHECK-NOT: call @hetc_kernel_
// CHECK-LABEL: func.func private @hetc_kernel_fused_0
// CHECK-SAME: (%[[FX:.+]]: memref<64xf32>, %[[FQ:.+]]: memref<64xf32>, %[[FK:.+]]: memref<64xf32>, %[[L0:.+]]: index, %[[U0:.+]]: index, %[[L1:.+]]: index, %[[U1:.+]]: index, %[[BEGIN:.+]]: index, %[[END:.+]]: index)
// CHECK: %[[SIZE0:.+]] = arith.subi %[[U0]], %[[L0]]
// CHECK: %[[STOP0:.+]] = arith.addi %{{.+}}, %[[SIZE0]]
// CHECK: %[[FROM0:.+]] = arith.maxsi %[[BEGIN]], %{{.+}}
// CHECK: %[[TO0:.+]] = arith.minsi %[[END]], %[[STOP0]]
// CHECK: %[[ANY0:.+]] = arith.cmpi slt, %[[FROM0]], %[[TO0]]
// CHECK: scf.if %[[ANY0]]
// CHECK: func.call @hetc_kernel_0(%[[FX]], %[[FQ]], %{{.+}}, %{{.+}})
// CHECK: scf.if
// CHECK: func.call @hetc_kernel_1(%[[FX]], %[[FK]], %{{.+}}, %{{.+}})
func.func @entry(%x: memref<64xf32>, %q: memref<64xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  call @hetc_kernel_0(%x, %q, %c0, %c64) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
  %k = memref.alloc() : memref<64xf32>
  call @hetc_kernel_1(%x, %k, %c0, %c32) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
  return
}
func.func private @hetc_kernel_0(%x: memref<64xf32>, %y: memref<64xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  }
  return
}
func.func private @hetc_kernel_1(%x: memref<64xf32>, %y: memref<64xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %j = arith.muli %i, %c2 : index
    %v = memref.load %x[%j] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  }
  return
}

// -----

// The second kernel reads what the first writes, and a deallocation
// between two others ends the run: no call is fused.
// CHECK-LABEL: func.func @dependent
// CHECK: call @hetc_kernel_0(
// CHECK: call @hetc_kernel_0(
// CHECK: memref.dealloc
// CHECK: call @hetc_kernel_0(
// CHECK-NOT: fused
func.func @dependent(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  call @hetc_kernel_0(%x, %y, %c0, %c64) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
  %t = memref.alloc() : memref<64xf32>
  call @hetc_kernel_0(%y, %t, %c0, %c64) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
  memref.dealloc %t : memref<64xf32>
  call @hetc_kernel_0(%x, %z, %c0, %c64) : (memref<64xf32>, memref<64xf32>, index, index) -> ()
  return
}
func.func private @hetc_kernel_0(%x: memref<64xf32>, %y: memref<64xf32>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32>
  }
  return
}

// -----

// Views of one buffer are that buffer: two kernels writing halves of it
// through subviews are not known to be independent.
// CHECK-LABEL: func.func @views
// CHECK-COUNT-2: call @hetc_kernel_0(
// CHECK-NOT: fused
func.func @views(%x: memref<64xf32>, %y: memref<128xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %low = memref.subview %y[0] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1]>>
  %high = memref.subview %y[64] [64] [1] : memref<128xf32> to memref<64xf32, strided<[1], offset: 64>>
  %lowCast = memref.cast %low : memref<64xf32, strided<[1]>> to memref<64xf32, strided<[1], offset: ?>>
  %highCast = memref.cast %high : memref<64xf32, strided<[1], offset: 64>> to memref<64xf32, strided<[1], offset: ?>>
  call @hetc_kernel_0(%x, %lowCast, %c0, %c64) : (memref<64xf32>, memref<64xf32, strided<[1], offset: ?>>, index, index) -> ()
  call @hetc_kernel_0(%x, %highCast, %c0, %c64) : (memref<64xf32>, memref<64xf32, strided<[1], offset: ?>>, index, index) -> ()
  return
}
func.func private @hetc_kernel_0(%x: memref<64xf32>, %y: memref<64xf32, strided<[1], offset: ?>>, %begin: index, %end: index) {
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%begin) to (%end) step (%c1) {
    %v = memref.load %x[%i] : memref<64xf32>
    memref.store %v, %y[%i] : memref<64xf32, strided<[1], offset: ?>>
  }
  return
}
