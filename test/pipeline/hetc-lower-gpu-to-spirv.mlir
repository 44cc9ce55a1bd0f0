// RUN: hetc-opt %s --split-input-file --hetc-lower-gpu-to-spirv --verify-diagnostics | FileCheck %s

// A gpu.module kernel becomes a spirv.module beside it: storage buffers at
// descriptor set 0 in argument order, the workgroup size as its LocalSize,
// and the minimal version, capabilities and extensions deduced.
// CHECK-LABEL: spirv.module @__spv__kernels Logical GLSL450 requires #spirv.vce<v1.0, [Shader
// CHECK-SAME: [SPV_KHR_storage_buffer_storage_class]>
// CHECK: spirv.GlobalVariable @add_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<1024 x f32, stride=4> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @add_arg_1 bind(0, 1)
// CHECK: spirv.GlobalVariable @add_arg_2 bind(0, 2)
// CHECK: spirv.func @add() "None"
// CHECK: spirv.FAdd
// CHECK: spirv.EntryPoint "GLCompute" @add
// CHECK: spirv.ExecutionMode @add "LocalSize", 64, 1, 1
module attributes {gpu.container_module, spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
  gpu.module @kernels {
    gpu.func @add(%a: memref<1024xf32>, %b: memref<1024xf32>, %c: memref<1024xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %dim = gpu.block_dim x
      %base = arith.muli %bid, %dim : index
      %i = arith.addi %base, %tid : index
      %x = memref.load %a[%i] : memref<1024xf32>
      %y = memref.load %b[%i] : memref<1024xf32>
      %z = arith.addf %x, %y : f32
      memref.store %z, %c[%i] : memref<1024xf32>
      gpu.return
    }
  }
}

// -----

// f64 needs the Float64 capability, which this environment lacks: the
// kernel is refused, not silently narrowed.
module attributes {gpu.container_module, spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
  gpu.module @kernels {
    // expected-error @+1 {{failed to legalize operation 'gpu.func'}}
    gpu.func @add(%a: memref<16xf64>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [16, 1, 1]>} {
      gpu.return
    }
  }
}
