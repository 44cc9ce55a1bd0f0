// RUN: hetc-opt %s --split-input-file --verify-diagnostics

// Verifier-error cases of the het dialect: the attribute checks of
// dialects/het/HetDialect.cpp and one case per rule listed in the op
// descriptions of dialects/het/HetOps.td.

//===----------------------------------------------------------------------===//
// #het.device
//===----------------------------------------------------------------------===//

// A device is referred to by name (memory spaces name their owner), so it needs one.
func.func @device_empty_name(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{#het.device needs a non-empty name}}
  %0 = llm.add %a, %a {het.placement = #het.device<"", cuda, "sm_90">} : tensor<?x64xf32>
  return
}

// -----

// cuda architectures are spelled as nvcc spells them, sm_<NN>; an AMD name is rejected.
func.func @device_cuda_arch(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{#het.device "gpu0" has arch "gfx942", which is not a cuda architecture (expected e.g. "sm_90")}}
  %0 = llm.add %a, %a {het.placement = #het.device<"gpu0", cuda, "gfx942">} : tensor<?x64xf32>
  return
}

// -----

// hip architectures are gfx<hex digits>; an NVIDIA name is rejected.
func.func @device_hip_arch(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{#het.device "gpu0" has arch "sm_90", which is not a hip architecture (expected e.g. "gfx942")}}
  %0 = llm.add %a, %a {het.placement = #het.device<"gpu0", hip, "sm_90">} : tensor<?x64xf32>
  return
}

// -----

// cpu architectures are lower-case LLVM CPU names; "X86-64" is not how -march spells it.
func.func @device_cpu_arch(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{#het.device "cpu0" has arch "X86-64", which is not a cpu architecture (expected e.g. "x86-64-v4")}}
  %0 = llm.add %a, %a {het.placement = #het.device<"cpu0", cpu, "X86-64">} : tensor<?x64xf32>
  return
}

// -----

// spirv accepts any target environment name, but not an empty one.
func.func @device_spirv_arch(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{#het.device "vk0" has arch "", which is not a spirv architecture (expected e.g. "vulkan1.3")}}
  %0 = llm.add %a, %a {het.placement = #het.device<"vk0", spirv, "">} : tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// #het.memory_space
//===----------------------------------------------------------------------===//

// A memory space belongs to a device; without an owner nothing can compute on it.
func.func @memory_space_empty_owner(%x: tensor<64xf32>) {
  // expected-error @+1 {{#het.memory_space needs the name of its owning device}}
  %y, %done = het.transfer %x : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "">
  return
}

// -----

//===----------------------------------------------------------------------===//
// Discardable het attributes (HetDialect::verifyOperationAttribute)
//===----------------------------------------------------------------------===//

// het.placement names a device, not a device name as a string.
func.func @placement_not_a_device(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{expects 'het.placement' to be a #het.device attribute, got "gpu0"}}
  %0 = llm.add %a, %a {het.placement = "gpu0"} : tensor<?x64xf32>
  return
}

// -----

// het.memory_space takes a memory space; a device is not one (its HBM or DRAM is).
func.func @memory_space_not_a_memory_space(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{expects 'het.memory_space' to be a #het.memory_space attribute, got #het.device<"gpu0", cuda, "sm_90">}}
  %0 = llm.add %a, %a {het.memory_space = #het.device<"gpu0", cuda, "sm_90">} : tensor<?x64xf32>
  return
}

// -----

// het.memory_space says where an op's results live; a declaration has none.
// expected-error @+1 {{has 'het.memory_space' but no results to place in that memory space}}
llm.weight @memory_space_on_op_without_results {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>

// -----

// Only het.placement and het.memory_space exist; a misspelling must not be
// silently ignored.
func.func @unknown_het_attribute(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{has unknown het attribute 'het.device'; the het dialect defines 'het.placement', 'het.memory_space' and 'het.plan' on ops}}
  %0 = llm.add %a, %a {het.device = #het.device<"gpu0", cuda, "sm_90">} : tensor<?x64xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// het.segment
//===----------------------------------------------------------------------===//

#gpu = #het.device<"gpu0", cuda, "sm_90">

// C1: the yielded value must have the declared result type.
func.func @segment_c1_yield_type(%x: tensor<?x64xf32>, %s: tensor<?x32xf32>) {
  // expected-error @+1 {{yields 1 value(s) of types ('tensor<?x32xf32>') but has result types ('tensor<?x64xf32>')}}
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    het.yield %s : tensor<?x32xf32>
  }
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

// C1: a segment with results cannot end in the implicit empty yield.
func.func @segment_c1_missing_yield(%x: tensor<?x64xf32>) {
  // expected-error @+1 {{yields 0 value(s) of types () but has result types ('tensor<?x64xf32>')}}
  %y = het.segment on #gpu -> tensor<?x64xf32> {
  }
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">

llm.weight @norm : tensor<64xf32>

// C2: a weight in cpu0's DRAM cannot be read by a segment on gpu0; it must be
// transferred first.
func.func @segment_c2_value_in_other_memory(%x: tensor<?x64xf32>) {
  // expected-note @+1 {{value defined here}}
  %w = llm.get_weight @norm {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    // expected-error @+1 {{uses a value in #het.memory_space<dram, "cpu0"> inside a segment on device "gpu0", which does not own that memory; move it with het.transfer}}
    %n = llm.rms_norm %x, %w eps = 1.0e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    het.yield %n : tensor<?x64xf32>
  }
  return
}

// -----

#gpu0 = #het.device<"gpu0", cuda, "sm_90">
#gpu1 = #het.device<"gpu1", cuda, "sm_90">

// C2: the results of a segment on gpu1 live in gpu1's HBM, which gpu0 does not own.
func.func @segment_c2_value_from_other_segment(%x: tensor<?x64xf32>) {
  // expected-note @+1 {{value defined here}}
  %a = het.segment on #gpu1 -> tensor<?x64xf32> {
    %s = llm.silu %x : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  %b = het.segment on #gpu0 -> tensor<?x64xf32> {
    // expected-error @+1 {{uses a value in #het.memory_space<hbm, "gpu1"> inside a segment on device "gpu0", which does not own that memory; move it with het.transfer}}
    %s = llm.silu %a : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">

// C2: an op placed on cpu0 produces its result in cpu0's DRAM.
func.func @segment_c2_value_from_placed_op(%x: tensor<?x64xf32>) {
  // expected-note @+1 {{value defined here}}
  %a = llm.silu %x {het.placement = #cpu} : tensor<?x64xf32>
  %b = het.segment on #gpu -> tensor<?x64xf32> {
    // expected-error @+1 {{uses a value in #het.memory_space<dram, "cpu0"> inside a segment on device "gpu0", which does not own that memory; move it with het.transfer}}
    %s = llm.silu %a : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">

// C3: an op inside a segment runs on the segment's device; a placement on
// another device contradicts it.
func.func @segment_c3_placed_on_other_device(%x: tensor<?x64xf32>) {
  %y = het.segment on #gpu -> tensor<?x64xf32> {
    // expected-error @+1 {{is placed on #het.device<"cpu0", cpu, "x86-64-v4"> inside a segment on #het.device<"gpu0", cuda, "sm_90">; move it out of the segment or drop its het.placement}}
    %s = llm.silu %x {het.placement = #cpu} : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  return
}

// -----

#gpu = #het.device<"gpu0", cuda, "sm_90">
#cpu = #het.device<"cpu0", cpu, "x86-64-v4">

// C4: a segment is one kernel-launch sequence on one device; segments do not nest.
func.func @segment_c4_nested(%x: tensor<?x64xf32>) {
  het.segment on #gpu {
    // expected-error @+1 {{is nested in a segment on "gpu0"; segments do not nest}}
    het.segment on #cpu {
      het.yield
    }
    het.yield
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// het.transfer
//===----------------------------------------------------------------------===//

// C1: a copy into the memory the value is already in does nothing.
func.func @transfer_c1_same_memory_space(%x: tensor<64xf32>) {
  // expected-error @+1 {{transfers between identical memory spaces (#het.memory_space<hbm, "gpu0">); remove the transfer}}
  %y, %done = het.transfer %x : tensor<64xf32> from #het.memory_space<hbm, "gpu0"> to #het.memory_space<hbm, "gpu0">
  return
}

// -----

// C2 (AllTypesMatch): a transfer copies; it does not change the type. The
// custom syntax has one type, so the generic form states the mismatch.
func.func @transfer_c2_result_type(%x: tensor<64xf32>) {
  // expected-error @+1 {{failed to verify that all of {source, result} have same type}}
  %y, %done = "het.transfer"(%x) <{from = #het.memory_space<dram, "cpu0">, to = #het.memory_space<hbm, "gpu0">}> : (tensor<64xf32>) -> (tensor<64xf16>, !het.token)
  return
}

// -----

llm.weight @w : tensor<64xf32>

// C3: the weight is known to live in cpu0's DRAM, so a transfer claiming it
// comes from cpu0's CXL memory is wrong.
func.func @transfer_c3_source_elsewhere() {
  %w = llm.get_weight @w {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64xf32>
  // expected-error @+1 {{transfers from #het.memory_space<cxl, "cpu0"> but the source lives in #het.memory_space<dram, "cpu0">}}
  %y, %done = het.transfer %w : tensor<64xf32> from #het.memory_space<cxl, "cpu0"> to #het.memory_space<hbm, "gpu0">
  return
}

// -----

//===----------------------------------------------------------------------===//
// het.wait
//===----------------------------------------------------------------------===//

// C1: waiting on nothing is a no-op that hides a missing token.
func.func @wait_c1_no_tokens() {
  // expected-error @+1 {{needs at least one token to wait on}}
  het.wait
  return
}

// -----

// C2: the same token listed twice is a mistake for another token.
func.func @wait_c2_duplicate_token(%x: tensor<64xf32>) {
  %y, %done = het.transfer %x : tensor<64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
  // expected-error @+1 {{waits on the same token twice}}
  het.wait %done, %done
  return
}

// -----

//===----------------------------------------------------------------------===//
// het.kv_tiers
//===----------------------------------------------------------------------===//

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C1: the cache has to be stored somewhere.
// expected-error @+1 {{needs at least one tier}}
het.kv_tiers @kv_tiers_c1_no_tiers for !cache block_tokens = 16 tiers []

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C2: blocks of zero positions hold nothing.
// expected-error @+1 {{expects block_tokens to be positive, got 0}}
het.kv_tiers @kv_tiers_c2_block_tokens_not_positive for !cache block_tokens = 0 tiers [#het.kv_tier<hbm, "gpu0", blocks = 32>]

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C3: an empty tier is a tier that should not be listed.
// expected-error @+1 {{expects every tier to hold a positive number of blocks, got 0 in #het.memory_space<dram, "cpu0">}}
het.kv_tiers @kv_tiers_c3_tier_without_blocks for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 32>, #het.kv_tier<dram, "cpu0", blocks = 0>]

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C4: two tiers in one memory space are one tier split in two.
// expected-error @+1 {{lists memory space #het.memory_space<hbm, "gpu0"> twice; merge the two tiers}}
het.kv_tiers @kv_tiers_c4_duplicate_memory_space for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 16>, #het.kv_tier<hbm, "gpu0", blocks = 16>]

// -----

!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>

// C5: 16 + 8 blocks of 16 positions hold 384 of the 512 positions; 8 more
// blocks are needed.
// expected-error @+1 {{tiers hold 384 positions but the cache has capacity 512; add 8 block(s)}}
het.kv_tiers @kv_tiers_c5_capacity_not_covered for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 16>, #het.kv_tier<dram, "cpu0", blocks = 8>]

// -----

// Segment C3: the placement must be the segment's device itself; the same name
// with another description is a contradiction, not a match.
func.func @segment_c3_same_name_other_device(%x: tensor<?x64xf32>) {
  %y = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x64xf32> {
    // expected-error @+1 {{is placed on #het.device<"gpu0", hip, "gfx942"> inside a segment on #het.device<"gpu0", cuda, "sm_90">}}
    %s = llm.silu %x {het.placement = #het.device<"gpu0", hip, "gfx942">} : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  return
}

// -----

// #het.kv_tier: like a memory space, a tier names the device owning it.
!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>
// expected-error @+1 {{#het.memory_space needs the name of its owning device}}
het.kv_tiers @kv_tier_empty_owner for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "", blocks = 16>, #het.kv_tier<dram, "cpu0", blocks = 16>]

// -----

// KV tiers C5: block counts whose total overflows are rejected, not wrapped.
!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>
// expected-error @+1 {{'het.kv_tiers' op tiers hold more than 2^63 positions; the block counts are not plausible}}
het.kv_tiers @kv_tiers_c5_overflow for !cache block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 9223372036854775807>, #het.kv_tier<dram, "cpu0", blocks = 1>]

// -----

// het.plan summarizes a whole module's plan; on an op it means nothing.
func.func @plan_on_an_op(%a: tensor<?x64xf32>) {
  // expected-error @+1 {{expects 'het.plan' only on a module, as a dictionary (het-partition writes it)}}
  %0 = llm.add %a, %a {het.plan = {objective = "latency"}} : tensor<?x64xf32>
  return
}

// -----

// A function argument's memory space must be a #het.memory_space.
// expected-error @+1 {{expects 'het.memory_space' of argument #0 to be a #het.memory_space attribute, got "gpu0"}}
func.func @argument_memory_space_not_a_space(%a: tensor<?x64xf32> {het.memory_space = "gpu0"}) {
  return
}

// -----

// het.kv_cache names the het.kv_tiers the argument is stored in; it must exist.
!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>
// expected-error @+1 {{stores argument #0 in @kv.blk.0, which is not a het.kv_tiers in scope; declare it}}
func.func @kv_cache_undeclared(%c: !cache {het.kv_cache = @kv.blk.0}) {
  return
}

// -----

// ... and be declared for the argument's own cache type.
!cache = !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>
!other = !llm.kv_cache<capacity = 256, kvHeads = 4, headDim = 8, elementType = f16>
het.kv_tiers @kv.blk.0 for !other block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 16>]
// expected-error @+1 {{stores argument #0 of type '!llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16>' in @kv.blk.0, which is declared for '!llm.kv_cache<capacity = 256, kvHeads = 4, headDim = 8, elementType = f16>'}}
func.func @kv_cache_other_type(%c: !cache {het.kv_cache = @kv.blk.0}) {
  return
}

// -----

// Only KV caches are stored in KV tiers.
het.kv_tiers @kv.blk.0 for !llm.kv_cache<capacity = 512, kvHeads = 4, headDim = 8, elementType = f16> block_tokens = 16 tiers [#het.kv_tier<hbm, "gpu0", blocks = 32>]
// expected-error @+1 {{has 'het.kv_cache' on argument #0 of type 'tensor<?x64xf32>', which is not a !llm.kv_cache}}
func.func @kv_cache_not_a_cache(%a: tensor<?x64xf32> {het.kv_cache = @kv.blk.0}) {
  return
}

// -----

// Misspelled argument attributes are rejected too.
// expected-error @+1 {{has unknown het argument attribute 'het.memory' on argument #0; the het dialect defines 'het.memory_space' and 'het.kv_cache'}}
func.func @unknown_argument_attribute(%a: tensor<?x64xf32> {het.memory = #het.memory_space<hbm, "gpu0">}) {
  return
}

// -----

// Segment C2 knows a function argument's memory from its attribute: a cache in
// the CPU's DRAM cannot be read on the GPU without a transfer.
func.func @segment_c2_argument_elsewhere(%x: tensor<?x64xf32> {het.memory_space = #het.memory_space<dram, "cpu0">}) {
  %y = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x64xf32> {
    // expected-error @+1 {{uses a value in #het.memory_space<dram, "cpu0"> inside a segment on device "gpu0", which does not own that memory; move it with het.transfer}}
    %s = llm.silu %x : tensor<?x64xf32>
    het.yield %s : tensor<?x64xf32>
  }
  return
}
