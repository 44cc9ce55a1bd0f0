// Passes of the SPIR-V target.
#ifndef HETC_PASSES_TARGET_SPIRV_PASSES_TD
#define HETC_PASSES_TARGET_SPIRV_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetcSpirvConvertKernelsPass
    : Pass<"hetc-spirv-convert-kernels", "mlir::ModuleOp"> {
  let summary = "Convert gpu.module kernels to spirv.module ops, math included";
  let description = [{
    Upstream `convert-gpu-to-spirv`, with the math dialect's patterns added
    (its exponentials, square roots and reciprocal square roots become
    GLSL.std.450 instructions, which every Vulkan device runs): model kernels
    need them (RMSNorm, SiLU, softmax), and upstream's pass converts only
    the gpu, arith, scf, memref, func and vector dialects.

    Each gpu.module is cloned and converted beside the original, which stays
    for the host side's `gpu.launch_func` ops. The clone's helper functions
    are inlined into its kernels first and erased, so every kernel is one
    SPIR-V function: buffers are never function arguments (they would need
    the VariablePointers capability), and each entry point lists the
    builtins its helpers read. A helper without a body, or one that keeps
    calling after 16 rounds (recursion), is an error. Each scf.for with
    results is put under an scf.if that yields its initial values when its
    range is empty: upstream's conversion keeps loop results in variables
    only the loop body stores. Memref memory spaces are
    mapped to Vulkan storage classes first (0: StorageBuffer, 3: Workgroup),
    and the conversion follows the module's `spirv.target_env` (or the
    default one): an op the environment cannot express is an error naming it.

    ```mlir
    gpu.module @kernels {
      gpu.func @k(%x: memref<?xf32>) kernel attributes {...} {
        %e = math.exp %v : f32
        ...
    // gains beside it
    spirv.module @__spv__kernels Logical GLSL450 {
      spirv.func @k(...) "None" attributes {...} {
        %e = spirv.GL.Exp %v : f32
    ```
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def HetcSpirvSpecializeKernelsPass
    : Pass<"hetc-spirv-specialize-kernels", "mlir::ModuleOp"> {
  let summary = "Choose a kernel library variant: tree reductions through "
                "workgroup memory, or subgroup operations";
  let description = [{
    A gpu.module's helper `@X_subgroup` is `@X` written with subgroup
    operations (`gpu.subgroup_reduce` and the subgroup ids). With
    `variant=portable` the `_subgroup` helpers are erased, and the module
    runs on every Vulkan device; with `variant=subgroup` each replaces its
    `@X` (the calls stay as they are) and the gpu.module's SPIR-V
    environment gains the GroupNonUniform and GroupNonUniformArithmetic
    capabilities, which the runtime checks against the device before it
    runs the variant.

    A `_subgroup` helper without its `@X`, or one called by name, is an
    error: callers name `@X` and the variant chooses the body.

    ```mlir
    func.func private @workgroup_sum(%v: f32, %tid: index) -> f32 {...}
    func.func private @workgroup_sum_subgroup(%v: f32, %tid: index) -> f32 {
      %r = gpu.subgroup_reduce add %v : (f32) -> f32
      ...
    // variant=subgroup keeps one @workgroup_sum, with the subgroup body
    ```
  }];
  let options = [
    Option<"variant", "variant", "std::string", /*default=*/"\"portable\"",
           "portable (tree reductions) or subgroup (subgroup arithmetic)">,
  ];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def HetcSpirvBuildProgramPass
    : Pass<"hetc-spirv-build-program", "mlir::ModuleOp"> {
  let summary = "Build the SPIR-V program of each model function: its "
                "kernel dispatches, host steps and buffers";
  let description = [{
    For each function of llm ops whose arguments are token ids, positions and
    KV caches (a model's `prefill` and `decode`), builds the program the
    runtime plays on a Vulkan device: every op becomes a dispatch of the
    SPIR-V kernel library (or a host step, such as the RoPE angle table),
    every tensor a flat buffer, and activation buffers are reused once their
    last reader has run. Sizes and parameters are linear in the step's token
    count `t` and the keys `k` the cache holds after it.

    The module is left as it is; the function gains a `hetc.spirv_steps`
    attribute with its number of steps, and with `print=true` the program is
    printed, one line per buffer and step. An op the library has no kernel
    for is an error naming it.

    ```
    program @decode: 53 buffers, 62 steps
      buffer 0 tokens: tokens, 4t bytes
      ...
      dispatch get_rows_f32 (token_embd.weight, tokens, act.0) grid [t, 1, 1] params [64]
    ```
  }];
  let options = [
    Option<"print", "print", "bool", /*default=*/"false",
           "Print each function's program">,
  ];
}

#endif // HETC_PASSES_TARGET_SPIRV_PASSES_TD
