// RUN: hetc-opt %s --split-input-file --het-verify-partitioned --mlir-print-local-scope | FileCheck %s

// IR that het-verify-partitioned accepts. The pass only checks: every case must
// come out exactly as it went in.

// Every llm op carries het.placement, and get_weight says where the weight lives
// (with het.memory_space, or through its placement).
#gpu = #het.device<"gpu0", cuda, "sm_90">

llm.weight @norm : tensor<64xf32>
llm.weight @wq : tensor<64x64x!llm.quant<q8_0>>

// CHECK:      llm.weight @norm : tensor<64xf32>
// CHECK-NEXT: llm.weight @wq : tensor<64x64x!llm.quant<q8_0>>
// CHECK-LABEL: func.func @fully_placed(
// CHECK-SAME:      %[[X:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32> {
// CHECK-NEXT:    %[[W:.*]] = llm.get_weight @norm {het.memory_space = #het.memory_space<hbm, "gpu0">} : tensor<64xf32>
// CHECK-NEXT:    %[[WQ:.*]] = llm.get_weight @wq {het.placement = #het.device<"gpu0", cuda, "sm_90">} : tensor<64x64x!llm.quant<q8_0>>
// CHECK-NEXT:    %[[N:.*]] = llm.rms_norm %[[X]], %[[W]] eps = 9.99999974E-6 {het.placement = #het.device<"gpu0", cuda, "sm_90">} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT:    %[[Q:.*]] = llm.matmul %[[N]], %[[WQ]] {het.placement = #het.device<"gpu0", cuda, "sm_90">} : (tensor<?x64xf32>, tensor<64x64x!llm.quant<q8_0>>) -> tensor<?x64xf32>
// CHECK-NEXT:    %[[Y:.*]] = llm.add %[[Q]], %[[N]] {het.placement = #het.device<"gpu0", cuda, "sm_90">} : tensor<?x64xf32>
// CHECK-NEXT:    return %[[Y]] : tensor<?x64xf32>
// CHECK-NEXT:  }
func.func @fully_placed(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<hbm, "gpu0">} : tensor<64xf32>
  %wq = llm.get_weight @wq {het.placement = #gpu} : tensor<64x64x!llm.quant<q8_0>>
  %n = llm.rms_norm %x, %w eps = 1.0e-05 {het.placement = #gpu} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %q = llm.matmul %n, %wq {het.placement = #gpu} : (tensor<?x64xf32>, tensor<64x64x!llm.quant<q8_0>>) -> tensor<?x64xf32>
  %y = llm.add %q, %n {het.placement = #gpu} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Work grouped into segments: a weight in cpu0's DRAM reaches the gpu0 segment
// through het.transfer; a get_weight inside a segment needs no memory space; the
// gpu0 result goes back to cpu0 before a cpu0 segment and a placed cpu0 op use it.
#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">

llm.weight @norm : tensor<64xf32>
llm.weight @wq : tensor<64x64x!llm.quant<q8_0>>

// CHECK:      llm.weight @norm : tensor<64xf32>
// CHECK-NEXT: llm.weight @wq : tensor<64x64x!llm.quant<q8_0>>
// CHECK-LABEL: func.func @segments(
// CHECK-SAME:      %[[X:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32> {
// CHECK-NEXT:    %[[W:.*]] = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
// CHECK-NEXT:    %[[WG:.*]], %[[DONE:.*]] = het.transfer %[[W]] : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
// CHECK-NEXT:    het.wait %[[DONE]]
// CHECK-NEXT:    %[[Y:.*]] = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x64xf32> {
// CHECK-NEXT:      %[[WQ:.*]] = llm.get_weight @wq : tensor<64x64x!llm.quant<q8_0>>
// CHECK-NEXT:      %[[N:.*]] = llm.rms_norm %[[X]], %[[WG]] eps = 9.99999974E-6 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT:      %[[Q:.*]] = llm.matmul %[[N]], %[[WQ]] : (tensor<?x64xf32>, tensor<64x64x!llm.quant<q8_0>>) -> tensor<?x64xf32>
// CHECK-NEXT:      het.yield %[[Q]] : tensor<?x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[YC:.*]], %[[BACK:.*]] = het.transfer %[[Y]] : tensor<?x64xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<dram, "cpu0">
// CHECK-NEXT:    het.wait %[[BACK]]
// CHECK-NEXT:    %[[Z:.*]] = het.segment on #het.device<"cpu0", cpu, "x86-64-v4"> -> tensor<?x64xf32> {
// CHECK-NEXT:      %[[S:.*]] = llm.silu %[[YC]] : tensor<?x64xf32>
// CHECK-NEXT:      het.yield %[[S]] : tensor<?x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:.*]] = llm.add %[[Z]], %[[YC]] {het.placement = #het.device<"cpu0", cpu, "x86-64-v4">} : tensor<?x64xf32>
// CHECK-NEXT:    return %[[R]] : tensor<?x64xf32>
// CHECK-NEXT:  }
func.func @segments(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  %wg, %done = het.transfer %w : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  het.wait %done
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    %wq = llm.get_weight @wq : tensor<64x64x!llm.quant<q8_0>>
    %n = llm.rms_norm %x, %wg eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %q = llm.matmul %n, %wq : (tensor<?x64xf32>, tensor<64x64x!llm.quant<q8_0>>) -> tensor<?x64xf32>
    het.yield %q : tensor<?x64xf32>
  }
  %yc, %back = het.transfer %y : tensor<?x64xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<dram, "cpu0">
  het.wait %back
  %z = het.segment on #cpu -> tensor<?x64xf32> {
    %s = llm.silu %yc : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  %r = llm.add %z, %yc {het.placement = #cpu} : tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// Nothing for the pass to check: llm.weight declarations are exempt and het and
// func ops are not llm ops, so the IR is left alone.
llm.weight @norm : tensor<64xf32>

// CHECK:      llm.weight @norm : tensor<64xf32>
// CHECK-LABEL: func.func @no_llm_compute(
// CHECK-SAME:      %[[X:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32> {
// CHECK-NEXT:    %[[T:.*]], %[[DONE:.*]] = het.transfer %[[X]] : tensor<?x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
// CHECK-NEXT:    het.wait %[[DONE]]
// CHECK-NEXT:    return %[[T]] : tensor<?x64xf32>
// CHECK-NEXT:  }
func.func @no_llm_compute(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %t, %done = het.transfer %x : tensor<?x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  het.wait %done
  return %t : tensor<?x64xf32>
}

// -----

// A placed op whose operands have no known memory space (function arguments) is
// not flagged: the pass only rejects uses it can prove cross devices.
#gpu = #het.device<"gpu0", cuda, "sm_90">

// CHECK-LABEL: func.func @unknown_memory_space_operands(
// CHECK-SAME:      %[[A:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32> {
// CHECK-NEXT:    %[[Y:.*]] = llm.add %[[A]], %[[B]] {het.placement = #het.device<"gpu0", cuda, "sm_90">} : tensor<?x64xf32>
// CHECK-NEXT:    return %[[Y]] : tensor<?x64xf32>
// CHECK-NEXT:  }
func.func @unknown_memory_space_operands(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = llm.add %a, %b {het.placement = #gpu} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
