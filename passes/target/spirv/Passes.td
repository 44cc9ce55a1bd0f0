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

#endif // HETC_PASSES_TARGET_SPIRV_PASSES_TD
