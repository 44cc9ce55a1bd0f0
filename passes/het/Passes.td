// Passes over the het dialect: partitioning, outlining, transfers and the
// verifiers at their stage boundaries.
#ifndef HETC_PASSES_HET_PASSES_TD
#define HETC_PASSES_HET_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetPartitionPass : Pass<"het-partition", "mlir::ModuleOp"> {
  let summary = "Places every op, weight and KV cache of an imported model "
                "on a device of a system, by the cost model";
  let description = [{
    Reads the model's shapes from the module (its `llm.model` attribute and
    `llm.weight` declarations, as `hetc import` writes them), plans it on
    `system` exactly as `hetc plan` does, and writes the plan into the IR:

    - every op that computes gets `het.placement`, the `#het.device` of the
      decoder unit it belongs to (the embedding, a layer's attention or FFN,
      the output); an op belongs to the latest unit among its operands and
      the weights it reads, so a residual add stays with the part it ends;
    - every `llm.get_weight` gets `het.memory_space`, the memory its weight
      lives in: the device's own, or another device's when the plan streams it;
    - every KV-cache argument gets `het.memory_space` and `het.kv_cache`,
      naming a `het.kv_tiers` declaration of the memory that holds it;
    - the module gets `het.plan`: the system, objective, request size and
      predicted decode and prefill tokens/s, J/token and what limits the plan.

    Shape bookkeeping that yields no tensor (`tensor.dim`, constants) stays
    unplaced; `het-outline` leaves it outside the segments.
    The pass fails, naming the fix, when the module has no `llm.model`, the
    system cannot be read, or the model fits no memory of the system.

    ```mlir
    %w = llm.get_weight @blk.0.attn_q.weight {het.memory_space = #het.memory_space<dram, "cpu0">} : tensor<64x64xf32>
    %q = llm.matmul %xn, %w {het.placement = #het.device<"gpu0", cuda, "sm_89", memory = 25769803776>} : ...
    ```
  }];
  let options = [
    Option<"system", "system", "std::string", /*default=*/"\"\"",
           "A system JSON file, or the name of a system in the catalog">,
    Option<"catalog", "catalog", "std::string", /*default=*/"\"\"",
           "The hardware catalog directory (default: hetc's own)">,
    Option<"objective", "objective", "std::string", /*default=*/"\"latency\"",
           "latency, throughput, cost or energy">,
    Option<"batch", "batch", "int64_t", /*default=*/"1",
           "Sequences decoded together">,
    Option<"promptTokens", "prompt-tokens", "int64_t", /*default=*/"0",
           "Tokens of the prompt a prefill processes (default: 128, or half "
           "of a smaller KV cache)">,
    ListOption<"deviceMemory", "device-memory", "std::string",
               "Caps on what the plan may use of a device's memory, "
               "DEVICE=SIZE (as hetc plan --device-memory)">,
    ListOption<"computeDevices", "compute-devices", "std::string",
               "The devices units may run on (as hetc plan "
               "--compute-devices); the others' memories still hold "
               "weights">,
    ListOption<"reserveMemory", "reserve-memory", "std::string",
               "Bytes of a device's home memory the plan leaves free for "
               "what its programs compute with (activations, parameters), "
               "DEVICE=SIZE; the capacity het.plan records includes them">,
  ];
  let dependentDialects = ["::hetc::het::HetDialect"];
}

def HetOutlinePass : Pass<"het-outline", "mlir::ModuleOp"> {
  let summary = "Groups each run of ops on one device into a het.segment, "
                "with explicit transfers between memory spaces";
  let description = [{
    In every function, each maximal run of consecutive ops placed on the same
    device becomes one `het.segment` on that device; the ops lose their
    `het.placement`, which the segment now says. A value a segment uses that
    lives in memory its device does not own (another segment's result, a
    streamed weight, a KV cache elsewhere) is copied with `het.transfer` into
    the device's home memory just before the segment, which waits for the
    copies with one `het.wait`. A value is copied once per segment that uses
    it; a streamed weight therefore crosses the link on every use, as the plan
    costed it.

    `llm.get_weight` and unplaced shape bookkeeping move ahead of the
    segments: they compute nothing. An op that computes but has no placement
    is an error (run `het-partition` first), and so is a function with more
    than one block or one already outlined.

    ```mlir
    %h, %done = het.transfer %0 : tensor<1x64xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
    het.wait %done
    %1 = het.segment on #het.device<"gpu0", cuda, "sm_89"> -> tensor<1x64xf32> {
      ...
    }
    ```
  }];
  let dependentDialects = ["::hetc::het::HetDialect"];
}

def HetLowerToProgramPass : Pass<"het-lower-to-program", "mlir::ModuleOp"> {
  let summary = "Lowers each outlined function's het ops to a program of "
                "dispatch and transfer steps over the plan's devices";
  let description = [{
    For every function `het-outline` left with segments (a model's prefill
    and decode), builds the program the runtime plays over the devices
    (`abi/Program.h`): each SPIR-V segment's ops become dispatches of the
    SPIR-V kernel library on its device; each CPU segment becomes a function
    `@<function>_seg<N>` of the module, tagged `hetc.segment_entry`, that the
    x86 target compiles, and one dispatch of it; each `het.transfer` of an
    activation becomes a transfer step (the runtime orders it after the work
    that wrote its source, and the work that reads it after it, which is
    what `het.wait` asked). A weight the plan streams to a GPU stays in its
    home (a buffer of the device that owns the memory, such as the CPU's
    DRAM) and is copied into a `streamed-weight` buffer of the GPU on every
    step, a unit ahead: the first step that reads unit U's weights (a
    layer's attention or FFN) issues the next streamed unit's copies, into
    the buffers the unit before U has released, so the copy overlaps U
    (double buffering). CPU code reads every weight where it
    lives. KV caches stay on the device of the segment that first reads
    them.

    The function gets `hetc.program_steps`, the program's step count; with
    `print`, the program is printed in words (buffers with their device,
    role and size, steps with their device).

    Fails with a diagnostic on what no program can run: a segment on a device
    that is neither a CPU nor a SPIR-V device, an op the SPIR-V library has
    no kernel for, a transfer of anything but an f32 activation.
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "Print each function's program">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def HetInlineSegmentsPass : Pass<"het-inline-segments", "mlir::ModuleOp"> {
  let summary = "Inlines the segments of a plan that runs on one CPU, "
                "leaving the module as the import wrote it";
  let description = [{
    The one-segment case of a plan: when every segment of every function
    runs on the same CPU device and nothing moves between memories, the
    segments' bodies take their places, and the plan's annotations
    (`het.placement`, `het.memory_space`, `het.kv_cache`, the
    `het.kv_tiers` declarations and `het.plan`) are dropped. The module is
    then the model as `hetc import` wrote it, which the CPU target compiles
    into whole-model entry points; `hetc compile` without `--system` plans
    the model on a CPU-only system and takes this path.

    Fails, naming the devices, when the plan uses more than one device or a
    device that is not a CPU, or moves a value with `het.transfer`.
  }];
}

def HetPageKVCachePass : Pass<"het-page-kv-cache", "mlir::ModuleOp"> {
  let summary = "Pages the KV caches of the model's entry points in blocks "
                "found through a block table";
  let description = [{
    Turns each entry function's KV caches into pools of blocks of
    `block-size` slots and gives the function a block table: a
    `tensor<?xi32>` argument, placed before its first cache and marked
    `hetc.kv_block_table`, that maps a sequence's logical block `p /
    block-size` to its block in the pools (the same block in every layer's
    pool). Every `llm.kv_append` and `llm.attention` of the function reads
    and writes through it (`pages %blocks block_size = B`), so the runtime
    decides where each block of a sequence lives: blocks can be shared by
    sequences with a common prefix, and moved between memories, without the
    code changing. The function records the block size in
    `hetc.kv_block_size`, which the code's record carries to the runtime.
    A function marked `llm.sequence_per_token` (a batch of sequences, one
    token each) gets a `tensor<?x?xi32>` table with a row per token.

    Each pool holds `pool-blocks` blocks, or, with 0, enough blocks for the
    cache's capacity (rounded up to whole blocks), so one sequence of the
    full context still fits. A plan's `het.kv_tiers` declarations then
    declare the paged caches: the paged type in blocks of `block-size`, the
    first tier (the memory the code reads) holding the pool, a later tier
    at least the positions it held.

    Before:
    ```mlir
    func.func @decode(%t: tensor<1xi32>, %pos: tensor<1xi32>, %c: !llm.kv_cache<capacity = 100, ...>) ...
      %c1 = llm.kv_append %k, %v into %c at %pos : ...
    ```
    After (`block-size=64`):
    ```mlir
    func.func @decode(%t: tensor<1xi32>, %pos: tensor<1xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %c: !llm.kv_cache<capacity = 128, ...>) attributes {hetc.kv_block_size = 64 : i64} ...
      %c1 = llm.kv_append %k, %v into %c at %pos pages %blocks block_size = 64 : ...
    ```

    Fails on a function whose caches are already paged, a block size that is
    not positive, and a pool past the positions hetc addresses.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"64",
           "Slots of a block (a multiple or a divisor of the 64 keys a step of the tiled attention takes)">,
    Option<"poolBlocks", "pool-blocks", "int64_t", /*default=*/"0",
           "Blocks of each layer's pool (0: the cache's capacity)">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def HetVerifyPartitionedPass
    : Pass<"het-verify-partitioned", "mlir::ModuleOp"> {
  let summary = "Checks that every llm op is placed and every cross-device use "
                "goes through het.transfer";
  let description = [{
    The stage verifier after partitioning. It changes nothing; it fails with a
    diagnostic on the first op that breaks a rule:

    - every llm op (except the `llm.weight` declarations) runs somewhere: it is
      inside a `het.segment` or carries `het.placement`;
    - every `llm.get_weight` outside a segment says where the weight lives with
      `het.memory_space`;
    - an op placed with `het.placement` uses only values in memory its device
      owns (segments check the same rule in their own verifier).

    Passes:
    ```mlir
    %w = llm.get_weight @w {het.memory_space = #het.memory_space<hbm, "gpu0">} : tensor<64xf32>
    %y = llm.rms_norm %x, %w eps = 1.0e-05 {het.placement = #het.device<"gpu0", cuda, "sm_90">} : ...
    ```
    Fails: the same `llm.rms_norm` without `het.placement`.
  }];
  let dependentDialects = ["::hetc::het::HetDialect"];
}

#endif // HETC_PASSES_HET_PASSES_TD
