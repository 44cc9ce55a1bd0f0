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

/// A helper `@X<suffix>` of `kernels` (a gpu.module) is another form of
/// `@X`, for some targets: with `useSuffixed` each replaces its `@X` (the
/// calls stay as they are), else each is erased. A suffixed helper without
/// its `@X`, one called by name, or one of another type than `@X` is an
/// error naming both.
mlir::LogicalResult chooseHelperForms(mlir::Operation *kernels,
                                      llvm::StringRef suffix,
                                      bool useSuffixed);

#define GEN_PASS_DECL
#include "passes/target/gpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/target/gpu/Passes.h.inc"

} // namespace hetc::gpu

#endif // HETC_PASSES_TARGET_GPU_PASSES_H
