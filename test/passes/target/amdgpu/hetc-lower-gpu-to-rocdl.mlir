// RUN: hetc-opt %s --hetc-lower-gpu-to-rocdl=chip=gfx90a | FileCheck %s
// RUN: hetc-opt %s --hetc-lower-gpu-to-rocdl="chip=gfx942 code-object=5" | FileCheck %s --check-prefix=V5
// RUN: not hetc-opt %s --hetc-lower-gpu-to-rocdl="chip=gfx942 code-object=6" 2>&1 | FileCheck %s --check-prefix=BADABI

// hetc-lower-gpu-to-rocdl (lib/Target/AMDGPU/AMDGPU.cpp): a kernel in the
// library's conventions becomes a ROCDL kernel for the chip and code object
// version, its workgroup memory in LDS, its block size as the flat
// work-group size, and its subgroup sum across a 64-lane wavefront.

// CHECK:       gpu.module @kernels [#rocdl.target<O = 3, chip = "gfx90a", abi = "400">]
// CHECK:         llvm.mlir.global internal @__wg_normalize_0() {addr_space = 3 : i32{{.*}}} : !llvm.array<64 x f32>
// CHECK:         llvm.func @__ocml_rsqrt_f32(f32) -> f32
// CHECK:         llvm.func @normalize(
// CHECK-SAME:      rocdl.flat_work_group_size = "64,64"
// CHECK-SAME:      rocdl.kernel
// Six butterfly steps: distances 1 to 32 across the wavefront.
// CHECK-COUNT-6:   llvm.fadd
// CHECK:           rocdl.barrier
// CHECK-NOT:       = gpu.
// CHECK-NOT:       scf.
// V5:          gpu.module @kernels [#rocdl.target<O = 3, chip = "gfx942", abi = "500">]
// BADABI:      hetc-lower-gpu-to-rocdl: code-object=6 is not a version hetc writes; choose 4 or 5
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
