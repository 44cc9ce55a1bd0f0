// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-outline

// Failures of het-outline (passes/het/HetOutline.cpp): modules that are not
// the output of het-partition.

#gpu = #het.device<"gpu0", cuda, "sm_90">

// An op that computes must say where; het-outline does not guess.
func.func @unplaced_compute(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = llm.silu %x {het.placement = #gpu} : tensor<?x64xf32>
  // expected-error @+1 {{is not placed on a device but uses a value computed on one; give it het.placement}}
  %b = llm.add %a, %a : tensor<?x64xf32>
  return %b : tensor<?x64xf32>
}

// -----

llm.weight @w : tensor<64xf32>

// Unplaced ops with effects cannot move ahead of the segments.
func.func @unplaced_effects(%x: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{is not placed on a device and has effects; run het-partition first, or give it het.placement}}
  memref.store %f, %x[%c0] : memref<64xf32>
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

// expected-error @+1 {{has 2 blocks; het-outline outlines single-block functions}}
func.func @two_blocks(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = llm.silu %x {het.placement = #gpu} : tensor<?x64xf32>
  cf.br ^next
^next:
  return %a : tensor<?x64xf32>
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

// Outlining twice would nest segments.
func.func @already_outlined(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{already exists; the function is outlined (run het-outline once, on the output of het-partition)}}
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    %a = llm.silu %x : tensor<?x64xf32>
    het.yield %a : tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}
