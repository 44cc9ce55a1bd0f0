// The passes shared by the GPU targets: declarations and registration (from
// Passes.td), and the helper inliner the SPIR-V conversion uses too.
#ifndef HETC_PASSES_TARGET_GPU_PASSES_H
#define HETC_PASSES_TARGET_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/Pass.h"

namespace hetc::gpu {

/// Inlines every call of a helper function into the kernels of `kernels`
/// (a gpu.module) and erases the helpers. A helper without a body, or
/// calls left after 16 rounds (recursion), is an error naming the helper.
mlir::LogicalResult inlineKernelHelpers(mlir::Operation *kernels);

#define GEN_PASS_DECL
#include "passes/target/gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/target/gpu/Passes.h.inc"

} // namespace hetc::gpu

#endif // HETC_PASSES_TARGET_GPU_PASSES_H
