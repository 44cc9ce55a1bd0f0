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
    for the host side's `gpu.launch_func` ops. Memref memory spaces are
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
