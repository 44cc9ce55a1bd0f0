// RUN: hetc-opt %s --split-input-file --hetc-x86-promote-accumulators | FileCheck %s

// A reduction into a fresh allocation: the accumulator is loaded once, carried
// through the loop, and stored once.
// CHECK-LABEL: func.func @promoted
// CHECK: %[[ACC:.+]] = memref.alloc
// CHECK: %[[INIT:.+]] = memref.load %[[ACC]][%{{.+}}]
// CHECK: %[[SUM:.+]] = scf.for {{.+}} iter_args(%[[A:.+]] = %[[INIT]]) -> (f32)
// CHECK: %[[NEXT:.+]] = arith.addf %[[A]]
// CHECK: scf.yield %[[NEXT]] : f32
// CHECK: memref.store %[[SUM]], %[[ACC]][%{{.+}}]
func.func @promoted(%x: memref<64xf32>, %i: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %acc = memref.alloc() : memref<4xf32>
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %acc[%i] : memref<4xf32>
    %v = memref.load %x[%k] : memref<64xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[%i] : memref<4xf32>
  }
  return %acc : memref<4xf32>
}

// -----

// An argument may alias the other buffers the loop reads: left alone.
// CHECK-LABEL: func.func @argument_accumulator
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: memref.store
func.func @argument_accumulator(%x: memref<64xf32>, %acc: memref<4xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %acc[%i] : memref<4xf32>
    %v = memref.load %x[%k] : memref<64xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[%i] : memref<4xf32>
  }
  return
}

// -----

// Indices that change in the loop are not an accumulator: left alone.
// CHECK-LABEL: func.func @varying_index
// CHECK-NOT: iter_args
func.func @varying_index(%x: memref<64xf32>) -> memref<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %acc = memref.alloc() : memref<64xf32>
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %acc[%k] : memref<64xf32>
    %v = memref.load %x[%k] : memref<64xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[%k] : memref<64xf32>
  }
  return %acc : memref<64xf32>
}
