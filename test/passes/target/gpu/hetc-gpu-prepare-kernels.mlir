// RUN: hetc-opt %s --split-input-file --hetc-gpu-prepare-kernels --verify-diagnostics | FileCheck %s
// RUN: hetc-opt %s --split-input-file --hetc-gpu-prepare-kernels=subgroup-size=64 --verify-diagnostics | FileCheck %s --check-prefix=WAVE64

// hetc-gpu-prepare-kernels (passes/target/gpu/PrepareKernels.cpp): helpers
// inlined, workgroup allocations become attributions, the SPIR-V workgroup
// size becomes the known block size, and subgroup operations are spelled
// for a fixed subgroup size.

// CHECK-LABEL: gpu.module @kernels
// CHECK-NOT:     func.func @block_sum
// CHECK:         gpu.func @normalize(%{{.*}}: memref<?xf32>) workgroup(%[[PARTIAL:.*]] : memref<2xf32, 3> {llvm.align = 16 : i64}) kernel
// CHECK-SAME:      known_block_size = array<i32: 64, 1, 1>
// The butterfly over 32 lanes: xor shuffles at distances 1 to 16.
// CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32
// CHECK-NOT:       gpu.subgroup_reduce
// The subgroup id is the linear thread id over 32 lanes, the count a
// constant from the known size.
// CHECK:           arith.divui %{{.*}}, %c32
// CHECK:           memref.store %{{.*}}, %[[PARTIAL]]
// CHECK-NOT:       memref.alloc
// CHECK-NOT:       gpu.subgroup_id
// CHECK-NOT:       gpu.num_subgroups
// CHECK:           gpu.return
// WAVE64:        gpu.shuffle  xor %{{.*}}, %c32_i32, %c64_i32
// WAVE64-NOT:    gpu.shuffle  xor %{{.*}}, %c64_i32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @block_sum(%v: f32) -> f32 {
      %partial = memref.alloc() : memref<2xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %reduced = gpu.subgroup_reduce add %v : (f32) -> f32
      %subgroup = gpu.subgroup_id : index
      %subgroups = gpu.num_subgroups : index
      %lane = gpu.lane_id
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        memref.store %reduced, %partial[%subgroup] : memref<2xf32, 3>
      }
      gpu.barrier
      %total = scf.for %s = %c0 to %subgroups step %c1 iter_args(%acc = %zero) -> f32 {
        %p = memref.load %partial[%s] : memref<2xf32, 3>
        %next = arith.addf %acc, %p : f32
        scf.yield %next : f32
      }
      return %total : f32
    }
    gpu.func @normalize(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<?xf32>
      %s = func.call @block_sum(%v) : (f32) -> f32
      memref.store %s, %x[%tid] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// A kernel without a known size counts its subgroups from the block's
// dimensions at run time.
// CHECK-LABEL: gpu.func @unsized
// CHECK-NOT:     known_block_size
// CHECK:         gpu.block_dim x
// CHECK:         gpu.block_dim y
// CHECK:         gpu.block_dim z
// CHECK:         arith.ceildivui
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @unsized(%x: memref<?xindex>) kernel {
      %n = gpu.num_subgroups : index
      %c0 = arith.constant 0 : index
      memref.store %n, %x[%c0] : memref<?xindex>
      gpu.return
    }
  }
}

// -----

// A workgroup buffer nothing reads once the helpers are inlined (a portable
// form's scratch, which the native form replacing it does not need) takes
// no shared memory.
// CHECK-LABEL: gpu.func @scratch_unused
// CHECK-SAME:    (%{{.*}}: memref<?xf32>) kernel
// CHECK-NOT:     memref.alloc
// CHECK:         gpu.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @emulated(%scratch: memref<64xf32, 3>, %v: f32) -> f32 {
      return %v : f32
    }
    gpu.func @scratch_unused(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %scratch = memref.alloc() : memref<64xf32, 3>
      %v = memref.load %x[%c0] : memref<?xf32>
      %w = func.call @emulated(%scratch, %v) : (memref<64xf32, 3>, f32) -> f32
      memref.store %w, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Workgroup memory is sized when the kernel is compiled.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @dynamic(%x: memref<?xf32>, %n: index) kernel {
      // expected-error @+1 {{workgroup memory must have a static shape and the identity layout to become a workgroup attribution; got 'memref<?xf32, 3>'}}
      %shared = memref.alloc(%n) : memref<?xf32, 3>
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %shared[%c0] : memref<?xf32, 3>
      gpu.return
    }
  }
}

// -----

// A helper that calls itself cannot be inlined.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    func.func private @forever(%v: f32) -> f32 {
      // expected-error @+1 {{@forever still calls helpers after 16 rounds of inlining; GPU targets need helpers that do not recurse}}
      %r = func.call @forever(%v) : (f32) -> f32
      return %r : f32
    }
    gpu.func @k(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<?xf32>
      %r = func.call @forever(%v) : (f32) -> f32
      memref.store %r, %x[%c0] : memref<?xf32>
      gpu.return
    }
  }
}
