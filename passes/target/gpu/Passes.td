// Passes shared by the GPU targets (NVPTX, AMDGPU, SPIR-V).
#ifndef HETC_PASSES_TARGET_GPU_PASSES_TD
#define HETC_PASSES_TARGET_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetcGpuPrepareKernelsPass
    : Pass<"hetc-gpu-prepare-kernels", "mlir::ModuleOp"> {
  let summary = "Make the kernel library's gpu.modules ready for an LLVM GPU "
                "target: helpers inlined, workgroup memory as attributions, "
                "subgroup operations for a fixed subgroup size";
  let description = [{
    The kernel library is written once, for every GPU target. SPIR-V
    lowers it as it is; the LLVM GPU targets (`convert-gpu-to-nvvm`,
    `convert-gpu-to-rocdl`) need three things it does not spell out:

    - Helper functions are inlined into their kernels and erased (as for
      SPIR-V), so the workgroup buffers the helpers allocate belong to a
      kernel. Recursion, or a helper without a body, is an error.
    - Each statically shaped `memref.alloc` in workgroup memory (memory
      space 3) becomes a workgroup attribution of its kernel, which the
      LLVM targets place in shared memory / LDS, aligned to 16 bytes so
      128-bit accesses and ldmatrix are legal. One with a dynamic shape
      is an error: workgroup memory is sized when the kernel is compiled;
      one nothing reads once the helpers are inlined (a portable form's
      scratch) is dropped.
    - A kernel's workgroup size (its `spirv.entry_point_abi`) becomes its
      `known_block_size`, which the targets turn into launch bounds
      (`nvvm.reqntid`, `amdgpu-flat-work-group-size`), so the register
      allocator knows how many threads share the register file.
      `gpu.subgroup_reduce` becomes a butterfly of `gpu.shuffle`s over
      `subgroup-size` lanes (32 on NVIDIA, 64 on CDNA), and
      `gpu.subgroup_id`, `gpu.num_subgroups` and `gpu.subgroup_size` are
      computed from the thread id and the workgroup size.

    ```mlir
    gpu.func @k(...) kernel attributes {spirv.entry_point_abi =
        #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %partial = memref.alloc() : memref<64xf32, 3>
    // becomes
    gpu.func @k(...) workgroup(%partial : memref<64xf32, 3> {llvm.align = 16})
        kernel
        attributes {known_block_size = array<i32: 64, 1, 1>, ...} {
    ```
  }];
  let options = [
    Option<"subgroupSize", "subgroup-size", "unsigned", "32",
           "Lanes per subgroup (warp or wavefront) on the target">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect"];
}

def HetcGpuNativeHelpersPass
    : Pass<"hetc-gpu-native-helpers", "mlir::ModuleOp"> {
  let summary = "Give the kernel library's helpers their forms for the LLVM "
                "GPU targets: wide loads and native half-precision conversion";
  let description = [{
    A helper `@X_native` of a gpu.module is `@X` written for NVIDIA and AMD
    GPUs, with what SPIR-V's portable Vulkan baseline lacks: loads of 16
    and 128 bits (`vector.load` with its alignment) where the portable form
    reads bytes, and f16 converted by the hardware (`arith.extf`) where the
    portable form widens the bits with integer arithmetic. Each replaces its
    `@X`; the calls stay as they are, so the kernels are the ones the SPIR-V
    tests check on every Vulkan device. The SPIR-V target never runs this
    pass, and its conversion drops the `_native` helpers with the others.

    A helper may also have a form for one target, `@X_nvptx` or
    `@X_amdgpu` (NVIDIA's tensor cores, AMD's matrix cores): with
    `target=nvptx` the `_nvptx` forms replace their `@X` and the `_amdgpu`
    forms are dropped, and the other way round; then the `_native` forms
    replace what is left. Without a target, only the `_native` forms are
    chosen and target forms stay as they are, uncalled. A kernel written
    for one target's matrix units (`hetc.matrix_units = "nvptx"`) is
    dropped when the pass chooses the other target: there it would run its
    helpers' portable forms, which emulate the units.

    A form without its `@X`, one called by name, or one of another type
    than `@X` is an error.

    ```mlir
    func.func private @load_u16(%b: memref<?xi8>, %at: index) -> i32 {...}
    func.func private @load_u16_native(%b: memref<?xi8>, %at: index) -> i32 {
      %v = vector.load %b[%at] {alignment = 2} : memref<?xi8>, vector<2xi8>
      ...
    // becomes
    func.func private @load_u16(%b: memref<?xi8>, %at: index) -> i32 {
      %v = vector.load %b[%at] {alignment = 2} : memref<?xi8>, vector<2xi8>
    ```
  }];
  let options = [
    Option<"target", "target", "std::string", "\"\"",
           "The LLVM GPU target (nvptx or amdgpu) whose own helper forms "
           "replace the portable ones">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect"];
}

#endif // HETC_PASSES_TARGET_GPU_PASSES_TD
