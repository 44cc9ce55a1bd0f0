// RUN: hetc-opt %s --split-input-file --het-outline --het-verify-partitioned --mlir-print-local-scope | FileCheck %s

// het-outline (passes/het/HetOutline.cpp): runs of ops on one device become
// segments; what a segment reads from memory its device does not own is
// transferred in first.

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">
llm.weight @norm : tensor<64xf32>
llm.weight @wq : tensor<64x64xf32>

// CHECK-LABEL: func.func @gpu_then_cpu(
// CHECK-SAME:      %[[X:.*]]: tensor<?x64xf32>) -> tensor<?x64xf32> {
// Weight lookups move ahead of the segments.
// CHECK-NEXT:    %[[W:.*]] = llm.get_weight @norm {het.memory_space = #het.memory_space<hbm, "gpu0">}
// CHECK-NEXT:    %[[WQ:.*]] = llm.get_weight @wq {het.memory_space = #het.memory_space<dram, "cpu0">}
// The streamed weight is copied in for the GPU's segment.
// CHECK-NEXT:    %[[WQG:.*]], %[[D0:.*]] = het.transfer %[[WQ]] : tensor<64x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
// CHECK-NEXT:    het.wait %[[D0]]
// Only values used after the segment are its results.
// CHECK-NEXT:    %[[G:.*]]:2 = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x64xf32>, tensor<?x64xf32> {
// CHECK-NEXT:      %[[N:.*]] = llm.rms_norm %[[X]], %[[W]] eps = 9.99999974E-6 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT:      %[[Q:.*]] = llm.matmul %[[N]], %[[WQG]] : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
// CHECK-NEXT:      %[[S:.*]] = llm.silu %[[Q]] : tensor<?x64xf32>
// CHECK-NEXT:      het.yield %[[N]], %[[S]] : tensor<?x64xf32>, tensor<?x64xf32>
// CHECK-NEXT:    }
// Both GPU results cross to the CPU; one wait covers both copies.
// CHECK-NEXT:    %[[NC:.*]], %[[D1:.*]] = het.transfer %[[G]]#0 : tensor<?x64xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<dram, "cpu0">
// CHECK-NEXT:    %[[SC:.*]], %[[D2:.*]] = het.transfer %[[G]]#1 : tensor<?x64xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<dram, "cpu0">
// CHECK-NEXT:    het.wait %[[D1]], %[[D2]]
// CHECK-NEXT:    %[[C:.*]] = het.segment on #het.device<"cpu0", cpu, "x86-64-v4"> -> tensor<?x64xf32> {
// CHECK-NEXT:      %[[A:.*]] = llm.add %[[NC]], %[[SC]] : tensor<?x64xf32>
// CHECK-NEXT:      het.yield %[[A]] : tensor<?x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[C]] : tensor<?x64xf32>
func.func @gpu_then_cpu(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<hbm, "gpu0">} : tensor<64xf32>
  %n = llm.rms_norm %x, %w eps = 1.0e-05 {het.placement = #gpu} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %wq = llm.get_weight @wq {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64x64xf32>
  %q = llm.matmul %n, %wq {het.placement = #gpu} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %s = llm.silu %q {het.placement = #gpu} : tensor<?x64xf32>
  %a = llm.add %n, %s {het.placement = #cpu} : tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 16, elementType = f32>
het.kv_tiers @kv.blk.0 for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 4>]

// A value returning to a device it left is not copied back: the GPU still
// holds it. Unplaced shape bookkeeping moves ahead with the weights; a cache
// in the GPU's memory needs no transfer into the GPU's segment.
// CHECK-LABEL: func.func @back_and_forth(
// CHECK-SAME:      %[[X:.*]]: tensor<?x32xf32>, %[[P:.*]]: tensor<?xi32>, %[[KV:.*]]: !llm.kv_cache<{{.+}}> {het.kv_cache = @kv.blk.0, het.memory_space = #het.memory_space<hbm, "gpu0">})
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[DIM:.*]] = tensor.dim %[[X]], %[[C0]]
// CHECK-NEXT:    %[[G:.*]]:2 = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x2x16xf32>, !llm.kv_cache<{{.+}}> {
// CHECK-NEXT:      %[[E:.*]] = tensor.expand_shape %[[X]] {{.+}} output_shape [%[[DIM]], 2, 16]
// CHECK-NEXT:      %[[A:.*]] = llm.kv_append %[[E]], %[[E]] into %[[KV]] at %[[P]]
// CHECK-NEXT:      het.yield %[[E]], %[[A]]
// CHECK:         het.transfer %[[G]]#0 : tensor<?x2x16xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<dram, "cpu0">
// CHECK:         %[[C:.*]] = het.segment on #het.device<"cpu0", cpu, "x86-64-v4"> -> tensor<?x2x16xf32>
// CHECK-NOT:     het.transfer
// CHECK:         het.segment on #het.device<"gpu0", cuda, "sm_90">
// CHECK-NEXT:      llm.attention %[[G]]#0, %[[G]]#1 at %[[P]]
func.func @back_and_forth(%x: tensor<?x32xf32>, %p: tensor<?xi32>, %kv: !cache {het.kv_cache = @kv.blk.0, het.memory_space = #het.memory_space<hbm, "gpu0">}) -> (tensor<?x2x16xf32>, !cache) {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %x, %c0 : tensor<?x32xf32>
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [%dim, 2, 16] {het.placement = #gpu} : tensor<?x32xf32> into tensor<?x2x16xf32>
  %appended = llm.kv_append %e, %e into %kv at %p {het.placement = #gpu} : (tensor<?x2x16xf32>, tensor<?x2x16xf32>, !cache, tensor<?xi32>) -> !cache
  %s = llm.silu %e {het.placement = #cpu} : tensor<?x2x16xf32>
  %o = llm.attention %e, %appended at %p causal {het.placement = #gpu} : (tensor<?x2x16xf32>, !cache, tensor<?xi32>) -> tensor<?x2x16xf32>
  %sum = llm.add %o, %o {het.placement = #gpu} : tensor<?x2x16xf32>
  return %s, %appended : tensor<?x2x16xf32>, !cache
}
