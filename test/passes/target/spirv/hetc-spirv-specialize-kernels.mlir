// RUN: hetc-opt %s --split-input-file --hetc-spirv-specialize-kernels=variant=subgroup --verify-diagnostics | FileCheck %s --check-prefix=SUBGROUP
// RUN: hetc-opt %s --split-input-file --hetc-spirv-specialize-kernels --verify-diagnostics | FileCheck %s --check-prefix=PORTABLE
// RUN: hetc-opt %s --split-input-file --hetc-spirv-specialize-kernels=variant=subgroup --hetc-lower-gpu-to-spirv --verify-diagnostics | FileCheck %s --check-prefix=LOWERED

// hetc-spirv-specialize-kernels (passes/target/spirv/SpecializeKernels.cpp):
// @X_subgroup replaces @X in the subgroup variant, with the capabilities it
// needs added to the gpu.module's environment, and is erased in the
// portable one; the kernels call @X either way.

// SUBGROUP-LABEL: gpu.module @kernels
// SUBGROUP-SAME:    spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniform, GroupNonUniformArithmetic], [SPV_KHR_storage_buffer_storage_class]>
// SUBGROUP:         func.func private @sum(
// SUBGROUP:           gpu.subgroup_reduce add
// SUBGROUP-NOT:     @sum_subgroup
// SUBGROUP:         func.call @sum(

// PORTABLE-LABEL: gpu.module @kernels {
// PORTABLE:         func.func private @sum(
// PORTABLE-NOT:       gpu.subgroup_reduce
// PORTABLE-NOT:     @sum_subgroup
// PORTABLE:         func.call @sum(

// The lowered subgroup variant reduces in the subgroup, and its entry point
// lists the builtins the inlined helper reads.
// LOWERED:       spirv.module @__spv__kernels Logical GLSL450 requires #spirv.vce<v1.3, [Shader, GroupNonUniformArithmetic, Matrix, GroupNonUniform]
// LOWERED:         spirv.GroupNonUniformFAdd <Subgroup> <Reduce>
// LOWERED:         spirv.EntryPoint "GLCompute" @total, {{.*}}@__builtin__SubgroupLocalInvocationId__
module attributes {gpu.container_module, spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
  gpu.module @kernels {
    func.func private @sum(%v: f32) -> f32 {
      %shared = memref.alloc() : memref<64xf32, 3>
      %tid = gpu.thread_id x
      memref.store %v, %shared[%tid] : memref<64xf32, 3>
      gpu.barrier
      %c0 = arith.constant 0 : index
      %r = memref.load %shared[%c0] : memref<64xf32, 3>
      return %r : f32
    }
    func.func private @sum_subgroup(%v: f32) -> f32 {
      %r = gpu.subgroup_reduce add %v : (f32) -> f32
      %lane = gpu.lane_id
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %lane, %c0 : index
      %s = arith.select %first, %r, %v : f32
      return %s : f32
    }
    gpu.func @total(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<?xf32>
      %t = func.call @sum(%v) : (f32) -> f32
      memref.store %t, %x[%tid] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A subgroup form without the portable one has nothing to replace.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{@max_subgroup is the subgroup form of @max, which the module lacks}}
    func.func private @max_subgroup(%v: f32) -> f32 {
      return %v : f32
    }
  }
}

// -----

// Callers name the portable form; the variant chooses the body.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @max(%v: f32) -> f32 {
      return %v : f32
    }
    // expected-error @+1 {{@max_subgroup is called by name; call @max}}
    func.func private @max_subgroup(%v: f32) -> f32 {
      return %v : f32
    }
    func.func private @user(%v: f32) -> f32 {
      %r = func.call @max_subgroup(%v) : (f32) -> f32
      return %r : f32
    }
  }
}

// -----

// The two forms must be interchangeable.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @max(%v: f32) -> f32 {
      return %v : f32
    }
    // expected-error @+1 {{@max_subgroup has type '(f32, index) -> f32', but @max has '(f32) -> f32'}}
    func.func private @max_subgroup(%v: f32, %i: index) -> f32 {
      return %v : f32
    }
  }
}
