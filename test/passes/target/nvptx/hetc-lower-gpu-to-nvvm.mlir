// RUN: hetc-opt %s --hetc-lower-gpu-to-nvvm=chip=sm_80 | FileCheck %s
// RUN: hetc-opt %s --hetc-lower-gpu-to-nvvm=chip=sm_90 | FileCheck %s --check-prefix=HOPPER

// hetc-lower-gpu-to-nvvm (lib/Target/NVPTX/NVPTX.cpp): a kernel in the
// library's conventions becomes an NVVM kernel for the chip, with the PTX
// ISA version the chip needs, its workgroup memory in shared memory, its
// block size as a launch bound (maxntid) and its subgroup sum as warp shuffles.

// CHECK:       gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// CHECK:         llvm.mlir.global internal @__wg_normalize_0() {addr_space = 3 : i32{{.*}}} : !llvm.array<64 x f32>
// CHECK:         llvm.func @normalize(
// CHECK-SAME:      gpu.kernel
// CHECK-SAME:      nvvm.kernel
// CHECK-SAME:      nvvm.maxntid = array<i32: 64, 1, 1>
// CHECK:           nvvm.shfl.sync bfly
// CHECK:           nvvm.barrier
// CHECK-NOT:       = gpu.
// CHECK-NOT:       scf.
// HOPPER:      gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @normalize(%x: memref<?xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %shared = memref.alloc() : memref<64xf32, 3>
      %tid = gpu.thread_id x
      %v = memref.load %x[%tid] : memref<?xf32>
      %sum = gpu.subgroup_reduce add %v : (f32) -> f32
      memref.store %sum, %shared[%tid] : memref<64xf32, 3>
      gpu.barrier
      %c0 = arith.constant 0 : index
      %first = memref.load %shared[%c0] : memref<64xf32, 3>
      %r = math.rsqrt %first : f32
      memref.store %r, %x[%tid] : memref<?xf32>
      gpu.return
    }
  }
}
