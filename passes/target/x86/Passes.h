// The x86 target pass group: declarations and registration (from Passes.td).
#ifndef HETC_PASSES_TARGET_X86_PASSES_H
#define HETC_PASSES_TARGET_X86_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace hetc::x86 {

/// The attribute marking a model entry point through the lowering: its own
/// name, so that no two entries ever look identical.
inline constexpr llvm::StringLiteral kEntryAttrName = "hetc.entry";
/// The argument attribute of the runtime-interface argument of an entry.
inline constexpr llvm::StringLiteral kRuntimeArgAttrName = "hetc.runtime";
/// Kernels outlined from entry points are named with this prefix.
inline constexpr llvm::StringLiteral kKernelPrefix = "hetc_kernel_";
/// The exported table through which the runtime installs its buffer allocator
/// (hetc-x86-route-allocations).
inline constexpr llvm::StringLiteral kAllocatorTableName =
    "hetc_buffer_allocator";

/// The model entry points of `module` (functions marked kEntryAttrName), as
/// a list: passes that add functions to the module walk a copy.
inline llvm::SmallVector<mlir::func::FuncOp> entryPoints(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::func::FuncOp> entries;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (func->hasAttr(kEntryAttrName))
      entries.push_back(func);
  return entries;
}

#define GEN_PASS_DECL
#include "passes/target/x86/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/target/x86/Passes.h.inc"

} // namespace hetc::x86

#endif // HETC_PASSES_TARGET_X86_PASSES_H
