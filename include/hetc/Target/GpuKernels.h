// What the LLVM GPU targets (NVPTX, AMDGPU) share before their own lowering:
// the kernel library in its subgroup variant, its kernels prepared for a
// subgroup size, and their interface as the device layer dispatches it.
#ifndef HETC_TARGET_GPUKERNELS_H
#define HETC_TARGET_GPUKERNELS_H

#include "hetc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace hetc::target {

/// The kernel library with its subgroup and native helpers in place (the
/// LLVM GPU targets reduce across a warp or wavefront in registers, load
/// 16 and 128 bits at once and convert f16 in hardware), and the helpers of
/// `target` ("nvptx", "amdgpu": its matrix units); null with `error` when
/// it does not build.
mlir::OwningOpRef<mlir::ModuleOp>
subgroupKernelLibrary(mlir::MLIRContext *context, llvm::StringRef target,
                      std::string &error);

/// Runs hetc-gpu-prepare-kernels over `module` for `subgroupSize` lanes;
/// false with `error` (the diagnostics name the kernel) on failure.
bool prepareGpuKernels(mlir::ModuleOp module, unsigned subgroupSize,
                       std::string &error);

/// The kernels of `module`'s gpu.modules once prepared: entry point, buffer
/// count (each a rank-1 memref descriptor in the LLVM targets' ABI) and
/// workgroup size, in the gpu.module's order.
std::vector<KernelInfo> describeGpuKernels(mlir::ModuleOp module);

/// The one gpu.module of `module`, lowered to the LLVM dialect with its
/// target attribute (#nvvm.target, #rocdl.target), serialized to that
/// target's assembly (PTX, AMDGPU assembly) by upstream's serializer, with
/// the device libraries under `toolkit` linked for the math it calls.
bool serializeToAssembly(mlir::ModuleOp module, llvm::StringRef toolkit,
                         std::string &assembly, std::string &error);

} // namespace hetc::target

#endif // HETC_TARGET_GPUKERNELS_H
