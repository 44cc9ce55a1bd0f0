// RUN: hetc-opt %s --hetc-x86-approximate-math | FileCheck %s

// f32 exp, scalar or vector, becomes arith ops (a polynomial and exponent
// bits); other math ops are left alone.
// CHECK-LABEL: func.func @exp_scalar
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: arith.shli
// CHECK: arith.bitcast
// CHECK: math.sqrt
func.func @exp_scalar(%x: f32) -> (f32, f32) {
  %e = math.exp %x : f32
  %s = math.sqrt %x : f32
  return %e, %s : f32, f32
}

// CHECK-LABEL: func.func @exp_vector
// CHECK-NOT: math.exp
// CHECK: arith.bitcast {{.+}} : vector<16xi32> to vector<16xf32>
func.func @exp_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %e = math.exp %x : vector<16xf32>
  return %e : vector<16xf32>
}
