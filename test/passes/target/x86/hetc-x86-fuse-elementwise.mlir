// RUN: hetc-opt %s --split-input-file --hetc-x86-fuse-elementwise | FileCheck %s

// A chain of elementwise generics over the same loops becomes one generic:
// the add is computed inside the multiply's body.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @chain_fuses
// CHECK: %[[FUSED:.+]] = linalg.generic
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return %[[FUSED]]
func.func @chain_fuses(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<64xf32> {
  %init = tensor.empty() : tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %prod = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%sum, %b : tensor<64xf32>, tensor<64xf32>) outs(%init : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<64xf32>
  return %prod : tensor<64xf32>
}

// -----

// Attention-shaped scores s[h, p] = sum_d r[h, d] * k[p, h, d]: the producer
// of r (here a scale and a shift, as RoPE) would run once per cached position
// p if fused, so the two generics stay apart.
#hd = affine_map<(h, d) -> (h, d)>
#q = affine_map<(h, p, d) -> (h, d)>
#k = affine_map<(h, p, d) -> (p, h, d)>
#s = affine_map<(h, p, d) -> (h, p)>
// CHECK-LABEL: func.func @recompute_refused
// CHECK: %[[ROTATED:.+]] = linalg.generic
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[ROTATED]], %{{.+}} : tensor<4x8xf32>, tensor<16x4x8xf32>)
func.func @recompute_refused(%q: tensor<4x8xf32>, %k: tensor<16x4x8xf32>,
                             %c: f32) -> tensor<4x16xf32> {
  %init = tensor.empty() : tensor<4x8xf32>
  %rotated = linalg.generic {indexing_maps = [#hd, #hd], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %m = arith.mulf %x, %c : f32
    %a = arith.addf %m, %c : f32
    linalg.yield %a : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %sinit = tensor.empty() : tensor<4x16xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%sinit : tensor<4x16xf32>) -> tensor<4x16xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #s],
                            iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%rotated, %k : tensor<4x8xf32>, tensor<16x4x8xf32>) outs(%filled : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %scores : tensor<4x16xf32>
}

// -----

// A producer of one operation (a widening) is as cheap to recompute as to
// read, so it still fuses into a consumer with more loops.
#hd = affine_map<(h, d) -> (h, d)>
#q = affine_map<(h, p, d) -> (h, d)>
#k = affine_map<(h, p, d) -> (p, h, d)>
#s = affine_map<(h, p, d) -> (h, p)>
// CHECK-LABEL: func.func @cheap_producer_fuses
// CHECK: linalg.generic
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @cheap_producer_fuses(%q: tensor<4x8xf16>, %k: tensor<16x4x8xf32>) -> tensor<4x16xf32> {
  %init = tensor.empty() : tensor<4x8xf32>
  %wide = linalg.generic {indexing_maps = [#hd, #hd], iterator_types = ["parallel", "parallel"]}
      ins(%q : tensor<4x8xf16>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f16, %out: f32):
    %e = arith.extf %x : f16 to f32
    linalg.yield %e : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %sinit = tensor.empty() : tensor<4x16xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%sinit : tensor<4x16xf32>) -> tensor<4x16xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #s],
                            iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%wide, %k : tensor<4x8xf32>, tensor<16x4x8xf32>) outs(%filled : tensor<4x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x16xf32>
  return %scores : tensor<4x16xf32>
}
