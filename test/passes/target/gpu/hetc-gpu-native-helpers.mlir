// RUN: hetc-opt %s --split-input-file --hetc-gpu-native-helpers --verify-diagnostics | FileCheck %s

// hetc-gpu-native-helpers (passes/target/gpu/NativeHelpers.cpp): each
// helper @X_native replaces @X, and the calls stay as they are.

// CHECK-LABEL: gpu.module @kernels
// CHECK:         func.func private @widen(%{{.*}}: i32) -> f32
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK-NOT:     @widen_native
// CHECK:         gpu.func @k
// CHECK:           func.call @widen(
module attributes {gpu.container_module} {
  gpu.module @kernels {
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
      memref.store %f, %y[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    // expected-error @+1 {{@lonely_native is the native form of @lonely, which the module lacks; define @lonely (the portable form) beside it}}
    func.func private @lonely_native(%v: f32) -> f32 {
      return %v : f32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @f(%v: f32) -> f32 {
      return %v : f32
    }
    // expected-error @+1 {{@f_native has type '(i32) -> i32', but @f has '(f32) -> f32'; the two forms must be interchangeable}}
    func.func private @f_native(%v: i32) -> i32 {
      return %v : i32
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @g(%v: f32) -> f32 {
      return %v : f32
    }
    // expected-error @+1 {{@g_native is called by name; call @g and let the library variant choose its body}}
    func.func private @g_native(%v: f32) -> f32 {
      return %v : f32
    }
    gpu.func @k(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      %r = func.call @g_native(%v) : (f32) -> f32
      memref.store %r, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
