// RUN: hetc-opt %s --split-input-file --hetc-gpu-native-helpers=target=nvptx --verify-diagnostics | FileCheck %s --check-prefix=NVPTX
// RUN: hetc-opt %s --split-input-file --hetc-gpu-native-helpers=target=amdgpu --verify-diagnostics | FileCheck %s --check-prefix=AMDGPU
// RUN: hetc-opt %s --split-input-file --hetc-gpu-native-helpers | FileCheck %s --check-prefix=NONE
// RUN: not hetc-opt %s --split-input-file --hetc-gpu-native-helpers=target=spirv 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// hetc-gpu-native-helpers with a target: a helper's form for that target
// (@X_nvptx, @X_amdgpu) replaces @X, the other target's form is dropped,
// then the _native forms replace what is left. Without a target, the
// target forms stay, uncalled.

// NVPTX-LABEL: gpu.module @kernels
// NVPTX:         func.func private @product(
// NVPTX-NEXT:      arith.constant 1.000000e+00
// NVPTX-NOT:     @product_amdgpu
// NVPTX-NOT:     @product_nvptx
// NVPTX:         func.func private @widen(
// NVPTX:        arith.extf
// NVPTX:           func.call @product(

// AMDGPU-LABEL: gpu.module @kernels
// AMDGPU:         func.func private @product(
// AMDGPU-NEXT:      arith.constant 2.000000e+00
// AMDGPU-NOT:     @product_nvptx
// AMDGPU:         func.func private @widen(
// AMDGPU:        arith.extf

// NONE-LABEL: gpu.module @kernels
// NONE:         func.func private @product(
// NONE-NEXT:      arith.mulf
// NONE:         func.func private @product_nvptx(
// NONE:         func.func private @product_amdgpu(
// NONE:         func.func private @widen(
// NONE:        arith.extf

// UNKNOWN: hetc-gpu-native-helpers: unknown target "spirv"; use nvptx or amdgpu, or no target for the _native forms alone
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @product(%a: f32, %b: f32) -> f32 {
      %p = arith.mulf %a, %b : f32
      return %p : f32
    }
    func.func private @product_nvptx(%a: f32, %b: f32) -> f32 {
      %one = arith.constant 1.0 : f32
      return %one : f32
    }
    func.func private @product_amdgpu(%a: f32, %b: f32) -> f32 {
      %two = arith.constant 2.0 : f32
      return %two : f32
    }
    func.func private @widen(%bits: i32) -> f32 {
      %f = arith.uitofp %bits : i32 to f32
      return %f : f32
    }
    func.func private @widen_native(%bits: i32) -> f32 {
      %h16 = arith.trunci %bits : i32 to i16
      %h = arith.bitcast %h16 : i16 to f16
      %f = arith.extf %h : f16 to f32
      return %f : f32
    }
    gpu.func @k(%x: memref<?xi32>, %y: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %b = memref.load %x[%c0] : memref<?xi32>
      %f = func.call @widen(%b) : (i32) -> f32
      %p = func.call @product(%f, %f) : (f32, f32) -> f32
      memref.store %p, %y[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A target form follows the rules of the others: it needs its @X, whichever
// target the pass chooses.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{@lonely_nvptx is the nvptx form of @lonely, which the module lacks; define @lonely (the portable form) beside it}}
    func.func private @lonely_nvptx(%v: f32) -> f32 {
      return %v : f32
    }
  }
}
