// RUN: hetc-opt %s --split-input-file --hetc-spirv-convert-kernels --verify-diagnostics | FileCheck %s

// hetc-spirv-convert-kernels (passes/target/spirv/ConvertKernels.cpp):
// upstream's gpu → spirv conversion with the math dialect, workgroup memory
// (memory space 3) and helper functions, in hetc's default Vulkan
// environment when the module names none. The gpu.module stays beside the
// spirv.module for the host's launches.

// CHECK-LABEL: spirv.module @__spv__kernels Logical GLSL450
// CHECK-SAME:    spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan
// CHECK:         spirv.GlobalVariable @{{.+}} : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
// Helpers are inlined into the kernels and erased: each kernel is one
// function.
// CHECK-NOT:     spirv.func @twice
// CHECK:         spirv.func @normalize
// CHECK:           spirv.GL.Exp
// CHECK:           spirv.ControlBarrier <Workgroup>, <Workgroup>
// CHECK:           spirv.GL.InverseSqrt
// CHECK-NOT:       spirv.FunctionCall
// CHECK:           spirv.FAdd
// CHECK:       gpu.module @kernels
// CHECK:         func.func @twice
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func @twice(%v: f32) -> f32 {
      %r = arith.addf %v, %v : f32
      return %r : f32
    }
    gpu.func @normalize(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %shared = memref.alloc() : memref<64xf32, 3>
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<?xf32>
      %e = math.exp %v : f32
      memref.store %e, %shared[%tid] : memref<64xf32, 3>
      gpu.barrier
      %s = memref.load %shared[%tid] : memref<64xf32, 3>
      %r = math.rsqrt %s : f32
      %t = func.call @twice(%r) : (f32) -> f32
      memref.store %t, %x[%tid] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// An op the environment cannot express is an error naming it: f64 needs
// the Float64 capability, which the default environment does not claim.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{failed to legalize operation 'gpu.func'}}
    gpu.func @wide(%x: memref<?xf64>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf64>
      memref.store %v, %x[%c0] : memref<?xf64>
      gpu.return
    }
  }
}

// -----

// A helper whose body is not in the gpu.module cannot be inlined.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @elsewhere(f32) -> f32
    gpu.func @calls(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      // expected-error @+1 {{@elsewhere has no body in the gpu.module to inline}}
      %r = func.call @elsewhere(%v) : (f32) -> f32
      memref.store %r, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Recursion never ends in inlining.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @forever(%v: f32) -> f32 {
      // expected-error @+1 {{still calls helpers after 16 rounds of inlining}}
      %r = func.call @forever(%v) : (f32) -> f32
      return %r : f32
    }
    gpu.func @recurse(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      %r = func.call @forever(%v) : (f32) -> f32
      memref.store %r, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A loop with results runs under a selection that keeps its initial values
// when its range is empty (a thread past the end of a strided loop): the
// loop alone would leave them in variables nothing stored.
// CHECK-LABEL: spirv.func @strided
// CHECK:         %[[RESULT:.*]] = spirv.Variable : !spirv.ptr<f32, Function>
// CHECK:         spirv.mlir.selection {
// CHECK:           spirv.BranchConditional
// CHECK:           spirv.mlir.loop {
// CHECK:           spirv.Store "Function" %[[RESULT]]
// CHECK:           spirv.Store "Function" %[[RESULT]]
// CHECK:           spirv.mlir.merge
// CHECK:         %{{.*}} = spirv.Load "Function" %[[RESULT]] : f32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @strided(%x: memref<?xf32>, %n: index) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %tid = gpu.thread_id x
      %sum = scf.for %i = %tid to %n step %c64 iter_args(%acc = %zero) -> f32 {
        %v = memref.load %x[%i] : memref<?xf32>
        %next = arith.addf %acc, %v : f32
        scf.yield %next : f32
      }
      memref.store %sum, %x[%tid] : memref<?xf32>
      gpu.return
    }
  }
}
