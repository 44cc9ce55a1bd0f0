// RUN: hetc-opt %s --split-input-file --hetc-x86-outline-kernels | FileCheck %s

// An outermost parallel loop of an entry becomes a kernel over the dimension
// with the largest static extent (here the 4096 features, not the dynamic
// token dimension); the loop becomes a call with the captured values and the
// grid range. Constants are rematerialized in the kernel, not passed, so its
// loops keep static steps and trip counts.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[W:.+]]: memref<?xi8> {llm.weights}, %[[X:.+]]: memref<?x4096xf32>, %[[Y:.+]]: memref<?x4096xf32>
// CHECK: %[[ROWS:.+]] = memref.dim %[[X]]
// CHECK: call @hetc_kernel_0(%[[ROWS]], %[[X]], %[[Y]], %{{[^,]+}}, %{{[^,]+}}) : (index, memref<?x4096xf32>, memref<?x4096xf32>, index, index) -> ()
// CHECK-NOT: scf.parallel
// CHECK-LABEL: func.func private @hetc_kernel_0
// CHECK-SAME: (%[[KROWS:[^:]+]]: index, %{{[^:]+}}: memref<?x4096xf32>, %{{[^:]+}}: memref<?x4096xf32>, %[[BEGIN:[^:]+]]: index, %[[END:[^:]+]]: index)
// CHECK-DAG: %[[ONE:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: scf.parallel (%{{.+}}, %{{.+}}) = (%[[ZERO]], %[[BEGIN]]) to (%[[KROWS]], %[[END]]) step (%[[ONE]], %[[ONE]])
func.func @entry(%w: memref<?xi8> {llm.weights}, %x: memref<?x4096xf32>, %y: memref<?x4096xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %rows = memref.dim %x, %c0 : memref<?x4096xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4096) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x4096xf32>
    memref.store %v, %y[%i, %j] : memref<?x4096xf32>
  }
  return
}

// -----

// Functions that are not entry points keep their loops.
// CHECK-LABEL: func.func @helper
// CHECK: scf.parallel
// CHECK-NOT: hetc_kernel
func.func @helper(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %y[%i] : memref<8xf32>
  }
  return
}

// -----

// A loop whose static work is below a dispatch's cost (768 elements, two
// operations each) stays on the calling thread; one with a dynamic inner
// trip count may be large and becomes a kernel.
// CHECK-LABEL: func.func @small_and_dynamic
// CHECK: scf.parallel (%{{.+}}) = (%{{.+}}) to (%{{.+}}) step
// CHECK: memref.store
// CHECK: call @hetc_kernel_{{[0-9]+}}
func.func @small_and_dynamic(%x: memref<768xf32>, %y: memref<768xf32>, %n: index, %z: memref<12x?xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %c768 = arith.constant 768 : index
  %f = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c768) step (%c1) {
    %v = memref.load %x[%i] : memref<768xf32>
    memref.store %v, %y[%i] : memref<768xf32>
  }
  scf.parallel (%h) = (%c0) to (%c12) step (%c1) {
    scf.for %p = %c0 to %n step %c1 {
      memref.store %f, %z[%h, %p] : memref<12x?xf32>
    }
  }
  return
}

// -----

// A fixed-size stack buffer of the loop body moves to the kernel's entry
// block: each call allocates it once, not once per iteration (the frame
// would grow until the call returns). A dynamic one, and one inside an
// alloca_scope (released every iteration), stay where they are.
// CHECK-LABEL: func.func private @hetc_kernel_0
// CHECK-NEXT: %[[BUFFER:.+]] = memref.alloca() : memref<16xf32>
// CHECK: scf.parallel
// CHECK: memref.alloca(%{{.+}}) : memref<?xf32>
// CHECK: memref.alloca_scope
// CHECK-NEXT: memref.alloca() : memref<8xf32>
// CHECK: memref.store %{{.+}}, %[[BUFFER]]
func.func @entry(%x: memref<?x4096xf32>, %y: memref<?x4096xf32>, %rt: !llvm.ptr {hetc.runtime}) attributes {hetc.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4096 = arith.constant 4096 : index
  %rows = memref.dim %x, %c0 : memref<?x4096xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4096) step (%c1, %c1) {
    %buffer = memref.alloca() : memref<16xf32>
    %rowsBuffer = memref.alloca(%rows) : memref<?xf32>
    memref.alloca_scope {
      %scoped = memref.alloca() : memref<8xf32>
      %s = memref.load %x[%i, %j] : memref<?x4096xf32>
      memref.store %s, %scoped[%c0] : memref<8xf32>
    }
    %v = memref.load %x[%i, %j] : memref<?x4096xf32>
    memref.store %v, %buffer[%c0] : memref<16xf32>
    memref.store %v, %rowsBuffer[%c0] : memref<?xf32>
    %w = memref.load %buffer[%c0] : memref<16xf32>
    memref.store %w, %y[%i, %j] : memref<?x4096xf32>
  }
  return
}
