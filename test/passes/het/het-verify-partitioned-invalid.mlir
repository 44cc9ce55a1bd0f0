// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-verify-partitioned

// Failures of het-verify-partitioned (passes/het/HetVerifyPartitioned.cpp): IR
// the het and llm verifiers accept but that is not fully partitioned.

// An llm op outside any segment and without het.placement runs nowhere.
func.func @unplaced_llm_op(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{is not placed on a device after partitioning; put it in a het.segment or give it het.placement}}
  %y = llm.silu %x : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

// One op left unplaced among placed ones is still caught.
func.func @unplaced_llm_op_among_placed(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %a = llm.silu %x {het.placement = #gpu} : tensor<?x64xf32>
  // expected-error @+1 {{is not placed on a device after partitioning; put it in a het.segment or give it het.placement}}
  %b = llm.add %a, %a : tensor<?x64xf32>
  return %b : tensor<?x64xf32>
}

// -----

llm.weight @norm : tensor<64xf32>

// A weight read outside a segment must say which memory holds it, or later
// passes cannot tell whether it needs a transfer.
func.func @get_weight_without_memory_space() -> tensor<64xf32> {
  // expected-error @+1 {{does not say where the weight lives after partitioning; give it het.memory_space}}
  %w = llm.get_weight @norm : tensor<64xf32>
  return %w : tensor<64xf32>
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

llm.weight @norm : tensor<64xf32>

// An op placed on gpu0 cannot read a weight in cpu0's DRAM without a transfer.
func.func @placed_op_uses_weight_in_other_memory(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-note @+1 {{value defined here}}
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  // expected-error @+1 {{is placed on "gpu0" but uses a value in #het.memory_space<dram, "cpu0">; move the value with het.transfer}}
  %y = llm.rms_norm %x, %w eps = 1.0e-05 {het.placement = #gpu} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">

// The result of a segment on cpu0 lives in cpu0's DRAM; an op placed on gpu0
// cannot use it directly.
func.func @placed_op_uses_segment_result_on_other_device(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-note @+1 {{value defined here}}
  %a = het.segment on #cpu -> tensor<?x64xf32> {
    %s = llm.silu %x : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  // expected-error @+1 {{is placed on "gpu0" but uses a value in #het.memory_space<dram, "cpu0">; move the value with het.transfer}}
  %b = llm.add %a, %a {het.placement = #gpu} : tensor<?x64xf32>
  return %b : tensor<?x64xf32>
}

// -----

#gpu0 = #het.device<"gpu0", cuda, "sm_90">

// A transfer to gpu1's HBM does not make the value available to gpu0.
func.func @placed_op_uses_transfer_to_other_device(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-note @+1 {{value defined here}}
  %t, %done = het.transfer %x : tensor<?x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu1">
  het.wait %done
  // expected-error @+1 {{is placed on "gpu0" but uses a value in #het.memory_space<hbm, "gpu1">; move the value with het.transfer}}
  %y = llm.silu %t {het.placement = #gpu0} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
