// RUN: hetc-opt %s --split-input-file | hetc-opt --split-input-file --mlir-print-local-scope | FileCheck %s
// RUN: hetc-opt %s --split-input-file --mlir-print-op-generic | hetc-opt --split-input-file --mlir-print-local-scope | FileCheck %s
// Without a local scope, devices and memory spaces print as short aliases.
// RUN: hetc-opt %s --split-input-file | FileCheck %s --check-prefix=ALIAS
// ALIAS-DAG: #gpu0 = #het.device<"gpu0", cuda, "sm_90a", memory = 85899345920>
// ALIAS-DAG: #cpu0 = #het.device<"cpu0", cpu, "x86-64-v4">
// ALIAS-DAG: llm.add {{.+}} {het.placement = #gpu0}

// Round-trip of every het op and attribute, in custom and generic form.

// Device descriptions of each kind, and memory spaces of each tier, as
// placements and memory-space annotations on llm ops.
// CHECK-LABEL: func.func @devices_and_spaces
func.func @devices_and_spaces(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: llm.add {{.+}} {het.placement = #het.device<"gpu0", cuda, "sm_90a", memory = 85899345920>}
  %a = llm.add %x, %x {het.placement = #het.device<"gpu0", cuda, "sm_90a", memory = 85899345920>} : tensor<?x64xf32>
  // CHECK: llm.add {{.+}} {het.placement = #het.device<"gpu1", hip, "gfx942", memory = 206158430208>}
  %b = llm.add %x, %x {het.placement = #het.device<"gpu1", hip, "gfx942", memory = 206158430208>} : tensor<?x64xf32>
  // CHECK: llm.add {{.+}} {het.placement = #het.device<"cpu0", cpu, "x86-64-v4">}
  %c = llm.add %x, %x {het.placement = #het.device<"cpu0", cpu, "x86-64-v4">} : tensor<?x64xf32>
  // CHECK: llm.add {{.+}} {het.placement = #het.device<"npu0", spirv, "vulkan1.3">}
  %d = llm.add %x, %x {het.placement = #het.device<"npu0", spirv, "vulkan1.3">} : tensor<?x64xf32>
  // CHECK: llm.add {{.+}} {het.memory_space = #het.memory_space<cxl, "cpu0">}
  %e = llm.add %x, %x {het.memory_space = #het.memory_space<cxl, "cpu0">} : tensor<?x64xf32>
  // CHECK: llm.add {{.+}} {het.memory_space = #het.memory_space<disk, "cpu0">}
  %f = llm.add %x, %x {het.memory_space = #het.memory_space<disk, "cpu0">} : tensor<?x64xf32>
  return %a : tensor<?x64xf32>
}

// -----

// A weight in host DRAM moved to GPU memory, awaited, and used by a segment on
// the GPU; the segment's result is used by an op placed on the same GPU.
#gpu = #het.device<"gpu0", cuda, "sm_90", memory = 85899345920>
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">
llm.weight @norm : tensor<64xf32>
// CHECK-LABEL: func.func @segment_transfer_wait
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32>)
func.func @segment_transfer_wait(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[W:.+]] = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  // CHECK: %[[WG:.+]], %[[DONE:.+]] = het.transfer %[[W]] : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  %wg, %done = het.transfer %w : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  // CHECK: %[[XG:.+]], %[[DONE2:.+]] = het.transfer %[[X]] : tensor<?x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  %xg, %done2 = het.transfer %x : tensor<?x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  // CHECK: het.wait %[[DONE]], %[[DONE2]]
  het.wait %done, %done2
  // CHECK: %[[Y:.+]] = het.segment on #het.device<"gpu0", cuda, "sm_90", memory = 85899345920> -> tensor<?x64xf32> {
  // CHECK:   %[[N:.+]] = llm.rms_norm %[[XG]], %[[WG]]
  // CHECK:   het.yield %[[N]] : tensor<?x64xf32>
  // CHECK: }
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    %n = llm.rms_norm %xg, %wg eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    het.yield %n : tensor<?x64xf32>
  }
  // CHECK: llm.add %[[Y]], %[[Y]] {het.placement = #het.device<"gpu0", cuda, "sm_90", memory = 85899345920>}
  %z = llm.add %y, %y {het.placement = #gpu} : tensor<?x64xf32>
  // A segment with no results needs no explicit yield.
  // CHECK: het.segment on #het.device<"cpu0", cpu, "x86-64-v4"> {
  het.segment on #cpu {
  }
  return %z : tensor<?x64xf32>
}

// -----

// A KV cache split across GPU memory, host DRAM and disk.
// CHECK: het.kv_tiers @kv0 for !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16> block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 64>, #het.kv_tier<dram, "cpu0", blocks = 128>, #het.kv_tier<disk, "cpu0", blocks = 64>]
het.kv_tiers @kv0 for !llm.kv_cache<capacity = 4096, kvHeads = 8, headDim = 128, elementType = f16> block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 64>, #het.kv_tier<dram, "cpu0", blocks = 128>, #het.kv_tier<disk, "cpu0", blocks = 64>]
