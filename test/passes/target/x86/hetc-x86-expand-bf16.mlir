// RUN: hetc-opt %s --hetc-x86-expand-bf16 | FileCheck %s

// f32 -> bf16 and back, scalar or vector, become integer ops: the upper
// half of the f32, rounded to nearest even by adding 0x7fff and the kept
// half's lowest bit, a NaN as the quiet 0x7fc0; f16 conversions and other
// ops are left alone.
// CHECK-LABEL: func.func @round_trip
// CHECK-DAG: %[[QUIET:.+]] = arith.constant 32704 : i16
// CHECK-DAG: %[[HALF:.+]] = arith.constant 32767 : i32
// CHECK-NOT: arith.truncf {{.+}} to bf16
// CHECK: %[[NAN:.+]] = arith.cmpf une, %arg0, %arg0 : f32
// CHECK: arith.bitcast {{.+}} : f32 to i32
// CHECK: arith.addi {{.+}}, %[[HALF]] : i32
// CHECK: arith.select %[[NAN]], %[[QUIET]]
// CHECK-NOT: arith.extf {{.+}} : bf16
// CHECK: arith.truncf {{.+}} : f32 to f16
// CHECK: arith.maximumf
func.func @round_trip(%x: f32) -> (f32, f16, f32) {
  %b = arith.truncf %x : f32 to bf16
  %e = arith.extf %b : bf16 to f32
  %h = arith.truncf %x : f32 to f16
  %m = arith.maximumf %x, %e : f32
  return %e, %h, %m : f32, f16, f32
}

// CHECK-LABEL: func.func @vector
// CHECK-NOT: bf16
// CHECK: arith.bitcast {{.+}} : vector<16xf32> to vector<16xi32>
func.func @vector(%x: vector<16xf32>) -> vector<16xf32> {
  %b = arith.truncf %x : vector<16xf32> to vector<16xbf16>
  %e = arith.extf %b : vector<16xbf16> to vector<16xf32>
  return %e : vector<16xf32>
}
