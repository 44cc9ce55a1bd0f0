// Passes of the x86 CPU target.
#ifndef HETC_PASSES_TARGET_X86_PASSES_TD
#define HETC_PASSES_TARGET_X86_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetcX86PrepareEntriesPass
    : Pass<"hetc-x86-prepare-entries", "mlir::ModuleOp"> {
  let summary = "Mark model entry points private for bufferization's ABI passes";
  let description = [{
    The model's entry points (functions with a `llm.weights` argument, and
    segment entry points tagged `hetc.segment_entry`) are
    marked private and tagged `hetc.entry`, so that, after one-shot
    bufferization, `drop-equivalent-buffer-results` can drop the KV caches
    they return (updated in place) and `buffer-results-to-out-params` can turn
    the logits into an output argument; both passes leave public functions
    alone. `hetc-x86-export-entries` makes the entry points public again.

    ```mlir
    func.func @decode(%w: memref<?xi8> {llm.weights}, ...)
    // becomes
    func.func private @decode(%w: memref<?xi8> {llm.weights}, ...) attributes {hetc.entry}
    ```
  }];
}

def HetcX86ExportEntriesPass
    : Pass<"hetc-x86-export-entries", "mlir::ModuleOp"> {
  let summary = "Export model entry points with a C interface for the runtime";
  let description = [{
    Makes every function tagged `hetc.entry` public again, appends the
    runtime-interface argument (`!llvm.ptr {hetc.runtime}`, through which
    kernels reach the runtime's thread pool) and asks the LLVM lowering for
    its C interface (`llvm.emit_c_interface`): the runtime calls
    `_mlir_ciface_<name>` with one memref descriptor per buffer argument, then
    the runtime interface.

    It also writes the record the runtime checks before it runs the code
    (`abi/CodeRecord.h`): an exported constant
    `@hetc_code_record`, an array of i64 holding a magic number, the kernel
    ABI version and the shapes the entry points assume, read off their
    buffer types (the logits' vocabulary, and from the KV caches
    `memref<2xCxKxDxT>` the layers, context length, KV heads, head size and
    element bytes). A pack whose manifest disagrees with it is refused.
    Beside it, `@hetc_weight_layouts` lists the weights the code reads in
    another layout than the model file's (`abi/WeightLayout.h`): their count,
    then the entries hetc-x86-block-matmuls recorded in the module attribute
    `hetc.x86.weight_layouts` (an attribute that is not whole entries is an
    error).

    ```mlir
    llvm.mlir.global external constant @hetc_code_record(dense<[magic, 2,
        512, 5, 4, 8, 512, 4]> : tensor<8xi64>) : !llvm.array<8 x i64>
    ```

    Segment entry points (`hetc.segment_entry`: the code of a CPU segment of
    a partitioned model, which takes activations in and out instead of
    tokens to logits) are exported the same way, each with its own
    signature instead of the model's shapes: an exported constant
    `@hetc_signature_<name>` holding the count of its buffers, then per
    buffer its kind (0 a tensor, 1 the model's weights), element bytes, rank
    and sizes (-1 where dynamic). The runtime checks every dispatch's buffers
    against it. A module of segment entries alone records only the magic
    number, the ABI version and the model hash.

    Fails if an entry point still returns values (the runtime passes every
    buffer in, so results must have become output arguments), if its last
    buffer is not a static `memref<NxVxf32>` of logits, if a KV cache has a
    dynamic shape or the caches differ, or if two entry points assume
    different shapes.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def HetcX86PromoteAccumulatorsPass
    : Pass<"hetc-x86-promote-accumulators", "mlir::ModuleOp"> {
  let summary = "Keep reduction accumulators in registers across scf.for loops";
  let description = [{
    Linalg reductions lowered to loops read and write their accumulator in
    memory on every iteration, a loop-carried dependence through memory that
    LLVM cannot vectorize when it cannot prove the buffer aliases nothing
    else. When an `scf.for` loads and stores one element of a buffer at
    loop-invariant indices, and the buffer is a `memref.alloc` of the same
    function that no other memory access in the loop touches (another alloc
    or an argument can never alias it), the element is loaded once before the
    loop, carried in `iter_args`, and stored once after. Applied innermost
    first until nothing changes, so nested reductions (blocks, then elements)
    are promoted through every level.

    ```mlir
    scf.for %k = %c0 to %n step %c1 {
      %a = memref.load %acc[%i] : memref<?xf32>
      %s = arith.addf %a, %p : f32
      memref.store %s, %acc[%i] : memref<?xf32>
    }
    // becomes
    %a0 = memref.load %acc[%i] : memref<?xf32>
    %r = scf.for %k = %c0 to %n step %c1 iter_args(%a = %a0) -> (f32) {
      %s = arith.addf %a, %p : f32
      scf.yield %s : f32
    }
    memref.store %r, %acc[%i] : memref<?xf32>
    ```
  }];
}

def HetcX86OutlineKernelsPass
    : Pass<"hetc-x86-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Outline each parallel loop nest of an entry point into a kernel";
  let description = [{
    Every outermost `scf.parallel` in an entry point becomes a kernel function
    `@hetc_kernel_<n>` over a one-dimensional grid: the parallel dimension
    with the largest static extent (the first when none is static) is split
    into `[begin, end)` ranges; the others run whole in each call. The loop is
    replaced by `func.call @hetc_kernel_<n>(captured values..., lb, ub)`, which
    `hetc-x86-lower-dispatch` turns into a dispatch on the runtime's thread
    pool. Kernels of the same shape (one per layer) are identical, so
    `duplicate-function-elimination` keeps one copy of each.

    A loop whose trip counts are all static and whose work (operations times
    enclosing iterations) is below 2^14 stays in the entry: a dispatch (wake
    the pool, join) costs more than splitting such a loop saves.

    A fixed-size `memref.alloca` in a kernel's loops (outside any
    `memref.alloca_scope`) moves to the kernel's entry block: a stack buffer
    serves one iteration, each call has its own frame, and left in the
    loop, every iteration's alloca would grow the stack until the call
    returns.

    ```mlir
    scf.parallel (%m, %n) = (%c0, %c0) to (%rows, %c4096) step (%c1, %c1) { ... }
    // becomes
    func.call @hetc_kernel_0(%x, %w, %out, %rows, %c0, %c4096)
    func.func private @hetc_kernel_0(%x, %w, %out, %rows, %begin, %end) {
      scf.parallel (%m, %n) = (%c0, %begin) to (%rows, %end) step (%c1, %c1) { ... }
    }
    ```
  }];
}

def HetcX86FuseDispatchesPass
    : Pass<"hetc-x86-fuse-dispatches", "mlir::ModuleOp"> {
  let summary = "Dispatch consecutive independent kernels of an entry as one";
  let description = [{
    A decode step dispatches a hundred kernels; each dispatch wakes the pool,
    waits for its slowest chunk and joins. Kernel calls that follow each
    other in an entry point (with only allocations or pure operations in
    between) and touch no common buffer that either writes (the Q, K and V
    projections of one normalized row; the gate and up projections) become
    one call of `@hetc_kernel_fused_<n>`, whose grid is theirs end to end:
    each call of it on `[begin, end)` calls every part whose stretch of the
    grid overlaps the range, on that overlap in the part's own indices.

    A kernel writes an argument when an operation in it has a write (or
    free) effect on a buffer viewed from that argument; an operation with
    unknown effects counts as writing them all, and calls of LLVM
    intrinsics declared as functions (`llvm.*`) as writing none.

    ```mlir
    call @hetc_kernel_1(%x, %wq, %q, %c0, %c48)
    %k = memref.alloc() : memref<1x768xf32>
    call @hetc_kernel_1(%x, %wk, %k, %c0, %c48)
    // becomes
    %k = memref.alloc() : memref<1x768xf32>
    call @hetc_kernel_fused_0(%x, %wq, %q, %wk, %k, %c0, %c48, %c0, %c48, %c0, %total)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def HetcX86LowerDispatchPass
    : Pass<"hetc-x86-lower-dispatch", "mlir::ModuleOp"> {
  let summary = "Turn kernel calls into dispatches on the runtime's thread pool";
  let description = [{
    In the LLVM dialect, each call of a `hetc_kernel_<n>` from an entry point
    becomes: the call's operands stored in a stack struct, and a call through
    the runtime interface (the entry's last argument, a struct
    `{pool, parallel_for}`) of `parallel_for(pool, @hetc_kernel_<n>_task, args,
    begin, end)`. The task trampoline `@hetc_kernel_<n>_task(args, begin, end)`
    reloads the operands and calls the kernel on its sub-range.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def HetcX86PackEntryArgsPass
    : Pass<"hetc-x86-pack-entry-args", "mlir::ModuleOp"> {
  let summary = "Give each entry point a one-argument wrapper for the runtime";
  let description = [{
    For every `_mlir_ciface_<name>` of an entry point, adds
    `llvm.func @hetc_entry_<name>(%args: !llvm.ptr)` that loads the memref
    descriptor pointers from the array `%args` and calls the C interface. The
    runtime can then call any model's entry points through one function type,
    whatever the number of layers (and so of KV-cache arguments).

    ```mlir
    llvm.func @hetc_entry_decode(%args: !llvm.ptr) {
      // %d0 = load args[0], %d1 = load args[1], ...
      llvm.call @_mlir_ciface_decode(%d0, %d1, ...) : (...) -> ()
      llvm.return
    }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // HETC_PASSES_TARGET_X86_PASSES_TD

def HetcX86RouteAllocationsPass
    : Pass<"hetc-x86-route-allocations", "mlir::ModuleOp"> {
  let summary = "Route buffer allocations through an allocator the runtime installs";
  let description = [{
    Defines the generic allocation functions the memref lowering calls with
    `use-generic-functions` (`_mlir_memref_to_llvm_alloc`, `..._aligned_alloc`,
    `..._free`): each calls the function the runtime stored in the exported
    table `hetc_buffer_allocator` (`[allocate(size, alignment), release(ptr)]`)
    and falls back to `malloc`/`aligned_alloc`/`free` while the table is empty.
    The runtime's allocator keeps freed buffers for reuse: every prefill and
    decode step allocates the same intermediate buffers, and fresh pages from
    the C library would be faulted in and zeroed by the kernel every step.

    ```mlir
    llvm.mlir.global external @hetc_buffer_allocator() : !llvm.array<2 x ptr>
    llvm.func @_mlir_memref_to_llvm_alloc(%size: i64) -> !llvm.ptr {
      // installed = hetc_buffer_allocator[0]
      // installed ? installed(%size, 64) : malloc(%size)
    }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def HetcX86BlockMatmulsPass
    : Pass<"hetc-x86-block-matmuls", "mlir::ModuleOp"> {
  let summary = "Register-block the matmuls convert-llm-to-linalg left portable";
  let description = [{
    convert-llm-to-linalg lowers every `x · wᵀ` (matmuls, logits) to a
    portable `linalg.generic` tagged with the weight's storage type
    (`llm.matmul_weight`). This pass replaces those whose weights are f32,
    f16, bf16, Q8_0, Q4_0 or a k-quant (Q2_K to Q6_K) (and whose row length is a whole
    number of vectors) with the x86 CPU's blocking: an `scf.forall` over
    blocks of activation rows × weight rows, each step loading one vector of
    every weight row of the block (decoded in registers: f16/bf16 widened,
    Q8_0 bytes converted, Q4_0 nibbles unbiased through the float mantissa)
    and multiply-adding it into one accumulator per (row, weight row), so a
    weight vector serves every activation row of the block. A K-quant step is
    a 256-element super-block read in groups of 32: each group's sub-block
    scale (and Q4_K/Q5_K min) is unpacked from the super-block's header once
    per row and applied to the decoded vectors in registers (Q5_K's fifth
    bits OR-ed into its nibbles). A prompt's rows are taken in chunks whose
    activations fit half of L2, each chunk a forall of its own (an `scf.for`
    around them). Prefill blocks are 4×4
    with 512-bit vectors (16 accumulators of AVX-512's 32 registers) and 2×4
    with narrower ones; decode streams one weight row at a time, front to
    back, with independent accumulator chains along it (two rows at a time
    when the activation row passes half of L1, so it is re-read half as
    often).

    `vector-bits` is the width of the device's vector registers, which the
    x86 target reads off the device's architecture: 512 for AVX-512 levels,
    256 for AVX2, 128 for SSE.

    With `int8-dot` (CPUs with AVX-512 VNNI), Q8_0, Q4_0, Q4_K, Q5_K and Q6_K
    matmuls multiply int8 activations instead: a parallel loop over the
    activation rows first rounds them to blocks of 32 codes with an f32
    scale (max|x| / 127, codes roundeven(x / scale)) and keeps, per 4 codes,
    their negated sum (for a weight code offset) and the block scale (and
    for Q4_K and Q5_K the scaled sum). Each step then reads 64 weight codes as
    unsigned bytes and multiplies them with 64 activation codes in one
    `vpdpbusd` (a call of the intrinsic `llvm.x86.avx512.vpdpbusd.512`),
    starting from the offset correction; the integer lanes times the lane
    scales (weight × activation) are added into the f32 accumulators, and a
    Q4_K/Q5_K min is taken off with the scaled sums. Q2_K and Q3_K keep
    the float path (their 16-element scales are applied per vector).

    With `int8-dot` and 512-bit vectors, a Q4_0, Q8_0, Q4_K or Q6_K weight that only
    matmuls read (in every entry point) and whose rows come in whole groups
    of 16 is read in an interleaved layout instead (abi/WeightLayout.h): per
    group of 16 rows and block, the rows' scales (Q4_K: d, dmin and the
    packed sub-block scales byte-major, unpacked lane by lane; Q6_K: d and
    per 32-element quarter its own scales, low nibbles and high bits) and
    then their quant bytes 4 at a time side by side, so one vector holds 4
    codes of each of the 16 rows. Each `vpdpbusd` multiplies them with 4 activation codes broadcast
    to every lane, the lanes end as the rows' block sums (the offset taken
    off with the activation block's code sum), and one FMA with the rows'
    scales times the activation scale adds a block of all 16 rows (a Q4_K
    sub-block's mins are taken off with a second one): no
    horizontal sums, and a row's 16 results are stored as one vector. The
    pass records its choices in the module attribute
    `hetc.x86.weight_layouts` (data offset, rows, row bytes, format, layout
    per weight); hetc-x86-export-entries writes them into the code, and the
    runtime rewrites those weights into the layout when it loads the code.

    With 512-bit vectors, an f32, f16 or bf16 weight that only matmuls read
    and whose rows come in whole groups of 16 is read element-major (the
    same table, format F32, F16 or BF16): per group, element k of its 16 rows is one
    vector. A prompt's block has 16 accumulators, 8 activation rows × 2
    groups (f16: 4 × 4): per element, each group's vector and each row's
    broadcast activation meet in one FMA (an outer product), so no
    horizontal sums remain and an f32 block reads 2 vectors and 8 scalars
    per element where the 4 × 4 dot products read 8 vectors. Decode streams
    one group front to back along 4 chains. bf16 weights are read as f16's.

    With `amx-tiles` as well (CPUs with AMX), a prompt's matmuls of
    interleaved weights (dynamic activation rows; decode stays on vpdpbusd)
    take 16 activation rows per block: the quantized codes are padded to a
    multiple of 16 rows (the padding repeats the last row) and read through
    `bufferization.to_buffer` as one `!amx.tile<16x32xi8>` per group; the
    group's decoded weight codes are stored as the 8 rows of a
    `!amx.tile<8x64xi8>` (already the VNNI layout), one `amx.tile_muli`
    (signed × zero-extended: tdpbsud) gives the 16 × 16 integer sums, and
    `amx.tile_store` returns them through a stack buffer in a
    `memref.alloca_scope` per group. Each activation row's sums are then
    offset-corrected and scaled exactly as in the vpdpbusd form (Q6_K: two
    products of 16 elements, one per part).

    With `amx-tiles`, a prompt's matmuls of element-major bf16 weights (and
    of f32 and f16 weights with `float-weights-bf16`, which rounds them to
    bf16) take bf16 tiles where K is a multiple of 32 and N of 32: the
    activation rows are rounded to bf16 once per matmul (padded to a
    multiple of 32 rows, repeating the last) and read as
    `!amx.tile<16x32xbf16>`; per 32 elements, each of a block's 2 weight
    groups is written to a stack buffer as the 16 element pairs of its 16
    rows (the VNNI layout) and read as the other tile; `amx.tile_mulf`
    (tdpbf16ps) adds into 2 × 2 `!amx.tile<16x16xf32>` sums that stay in
    tile registers through the whole K loop (`scf.for` iter_args), then
    leave through a stack buffer. The block's two stack buffers are plain
    `memref.alloca`s, which hetc-x86-outline-kernels allocates once per
    kernel call (a `memref.alloca_scope` must stay one block, which the K
    loop does not once lowered to branches). A block is 32 activation rows × 32
    weight rows, all 8 tile registers.

    ```mlir
    %y = linalg.generic {...} ins(%x, %w : tensor<?x64xf32>, tensor<32x64xf16>)
           outs(%zero : tensor<?x32xf32>) attrs = {llm.matmul_weight = f16} {...}
    // becomes
    %y = scf.forall (%j, %i) in (8, %row_blocks) shared_outs(%o = %empty) {
      %sums = scf.for %k = %c0 to %c4 step %c1 iter_args(...) -> (vector<16xf32>, ...) {
        // transfer_read of activation and weight vectors, vector.fma
      }
      // vector.reduction, transfer_write into the block, parallel_insert_slice
    }
    ```

    Generics whose rows are not whole vectors stay portable, as do the
    generics of a module the pass is not run on: the tag is only a hint.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "512",
           "width of the vector registers in bits (128, 256 or 512)">,
    Option<"int8Dot", "int8-dot", "bool", "false",
           "multiply Q8_0, Q4_0, Q4_K, Q5_K and Q6_K weights with int8-quantized "
           "activations through vpdpbusd (AVX-512 VNNI)">,
    Option<"amxTiles", "amx-tiles", "bool", "false",
           "multiply a prompt's activation rows with interleaved weights 16 "
           "rows at a time through AMX int8 tiles (needs int8-dot)">,
    Option<"floatWeightsBf16", "float-weights-bf16", "bool", "false",
           "with amx-tiles, a prompt's matmuls of f32 and f16 weights take "
           "bf16 tiles too, rounding the weights to bf16 (bf16 weights always "
           "do)">,
  ];
  let dependentDialects = ["::mlir::amx::AMXDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def HetcX86EmulateAmxPass
    : Pass<"hetc-x86-emulate-amx", "mlir::ModuleOp"> {
  let summary = "Rewrite AMX tile operations as AVX-512 vector code";
  let description = [{
    The AMX matmul kernels (hetc-x86-block-matmuls with `amx-tiles`) run only
    where the CPU has AMX. This pass makes them runnable, and their results
    checkable, everywhere AVX-512 VNNI is: each `amx` tile becomes a 2-D
    vector of its shape, `amx.tile_load` and `amx.tile_store` become a
    vector load or store per tile row (rows a stride apart: the explicit
    stride along the innermost index, or the buffer's own rows),
    `amx.tile_zero` a zero constant, and `amx.tile_muli` the sums it
    defines, `acc[m][n] += Σ_k ext(lhs[m][4k+i]) · ext(rhs[k][4n+i])`, each
    operand sign- or zero-extended as its `zext` flag says (the signed ×
    unsigned case with 16 columns as one `vpdpbusd` per row and k).
    Integer products are exact, so the emulated kernel computes what the
    tile instructions compute, bit for bit.

    `amx.tile_mulf` of bf16 tiles becomes
    `acc[m][n] += lhs[m][2k] · rhs[k][2n] + lhs[m][2k+1] · rhs[k][2n+1]` in
    f32, one FMA per element in tdpbf16ps's order (k, then the pair's
    halves): a product of two bf16 values is exact in f32, so each step
    rounds once, as the instruction's does; only its flushing of denormals
    to zero is not modelled. f16 tiles (AMX-FP16) are reported as not
    emulated.

    Tiles are defined by amx operations or carried by `scf.for` iter_args
    (the sums a K loop keeps in tile registers): such a loop's tile
    iter_args, results and yields become vectors too. Tiles passing
    through any other operation are reported as not emulated.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def HetcX86BlockAttentionPass
    : Pass<"hetc-x86-block-attention", "mlir::ModuleOp"> {
  let summary = "Register-block the products of the tiled attention's steps";
  let description = [{
    convert-llm-to-linalg lowers attention to tiles of query tokens
    walking blocks of cached keys with an online softmax; each step
    has two products, tagged `llm.attention_scores` (`s = q · kᵀ` over the
    head dimension) and `llm.attention_values` (`acc += p · v` over the
    step's keys). This pass replaces them with the x86 CPU's blocking when
    the head dimension is a whole number of vectors:

    - scores: blocks of 4 query rows × 4 keys (4 × 2 with fewer than 32
      vector registers), one vector accumulator per pair along the head
      dimension, so each query and key vector loaded serves 4 products;
      the accumulators are reduced once per block;
    - weighted values: blocks of 4 query rows × up to 4 vectors of the
      accumulator held in registers while the step's keys stream by, each
      value vector multiplied by 4 broadcast weights.

    Rows and keys past the end of a tile repeat the last one (reads stay in
    bounds; a repeated row is written again with the same values); a tile
    with fewer rows, statically (a decode step's one query), takes blocks of
    its own row count instead. f16 and
    bf16 caches are widened in registers.

    ```mlir
    %s = linalg.generic {...} ins(%q, %k : tensor<?x64xf32>, tensor<?x64xf16>)
           outs(%zero : tensor<?x?xf32>) attrs = {llm.attention_scores} {...}
    // becomes
    %s = scf.for %i = %c0 to %rows step %c4 iter_args(%t = %empty) {
      scf.for %j = %c0 to %cols step %c4 iter_args(%u = %t) {
        // transfer_read, vector.fma, vector.reduction, tensor.insert
      }
    }
    ```

    Products whose head dimension is not a whole number of vectors stay
    portable, as do those of a module the pass is not run on.
  }];
  let options = [
    Option<"vectorBits", "vector-bits", "int64_t", "512",
           "width of the vector registers in bits (128, 256 or 512)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def HetcX86FuseElementwisePass
    : Pass<"hetc-x86-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse producer generics into consumers unless that recomputes them";
  let description = [{
    Upstream elementwise fusion (`linalg-fuse-elementwise-ops`: single-use
    producers, reshape folding by expansion, the linalg canonicalizations),
    with one more rule: a producer is not fused into a consumer that iterates
    over loops the fused operand does not depend on, because the fused body
    would then recompute the producer once per value of those loops. Such a
    case is attention's scores, `s[h, p] = Σ_d rope(q)[h, d] · k[p, h, d]`:
    fusing RoPE into it recomputes the rotation of the query for every cached
    position. A producer whose body is a single operation (a cast, a
    broadcast) is cheap enough to recompute and still fuses.

    ```mlir
    %r = linalg.generic {maps = [(h, d) -> (h, d), ...]} ins(%q) ... // RoPE
    %s = linalg.generic {maps = [(h, p, d) -> (h, d), (h, p, d) -> (p, h, d),
                                 (h, p, d) -> (h, p)]} ins(%r, %k) ...
    // stays two generics; chains like add(mul(x, y), z) over the same loops
    // still become one.
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HetcX86ApproximateMathPass
    : Pass<"hetc-x86-approximate-math", "mlir::ModuleOp"> {
  let summary = "Expand math.exp into a vectorizable polynomial";
  let description = [{
    Rewrites f32 `math.exp` with upstream MLIR's polynomial approximation
    (range reduction by ln 2, a polynomial, and exponent bits set directly):
    plain arith ops that LLVM vectorizes with the loop around them, where the
    libm call `expf` would run once per element. SiLU in every FFN and the
    softmax of every attention evaluate it per element; the approximation
    stays within a few ulp of expf, far inside the 1e-4 relative agreement
    the reference checks demand.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def HetcX86ExpandBf16Pass : Pass<"hetc-x86-expand-bf16", "mlir::ModuleOp"> {
  let summary = "Convert f32 to and from bf16 with integer ops";
  let description = [{
    Rewrites `arith.truncf` to bf16 and `arith.extf` from bf16 (scalar or
    vector) into integer ops with upstream MLIR's patterns: the upper half
    of the f32, rounded to nearest even, a NaN kept quiet. A bf16 KV cache
    writes through them: LLVM would otherwise call `__truncsfbf2` on CPUs
    without AVX512-BF16, which loaded code cannot resolve, and the
    instruction it uses elsewhere flushes subnormals. Other ops are left
    alone.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}
