// Inlining the kernel library's helpers into its kernels, for every GPU
// target (see Passes.h).
#include "passes/target/gpu/Passes.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"

using namespace mlir;

namespace {

/// Upstream's inliner, except that calls at a gpu.func's top level inline
/// too (the gpu dialect admits its ops into inlined code, but no region of
/// a gpu.func as a destination).
struct KernelInliner : InlinerInterface {
  using InlinerInterface::InlinerInterface;
  bool isLegalToInline(Region *dest, Region *src, bool wouldBeCloned,
                       IRMapping &mapping) const override {
    return isa<gpu::GPUFuncOp>(dest->getParentOp()) ||
           InlinerInterface::isLegalToInline(dest, src, wouldBeCloned, mapping);
  }
  /// The matrix-unit ops of NVIDIA's and AMD's dialects compute on values
  /// alone, so they inline like arith ops (their dialects declare no
  /// inliner interface).
  bool isLegalToInline(Operation *op, Region *dest, bool wouldBeCloned,
                       IRMapping &mapping) const override {
    return isa<nvgpu::NVGPUDialect, amdgpu::AMDGPUDialect>(op->getDialect()) ||
           InlinerInterface::isLegalToInline(op, dest, wouldBeCloned, mapping);
  }
};

} // namespace

// A kernel becomes one function: for SPIR-V, a buffer is then never an
// argument (which would need the VariablePointers capability) and the entry
// point lists every builtin its reductions read (an interface before SPIR-V
// 1.4 lists what the entry function itself reads, not its callees); for the
// LLVM targets, the helpers' workgroup buffers become the kernel's.
LogicalResult hetc::gpu::inlineKernelHelpers(Operation *kernels) {
  KernelInliner inliner(kernels->getContext());
  InlinerConfig config;
  SymbolTable symbols(kernels);
  for (int round = 0;; ++round) {
    // Calls in the kernels only: inlining a helper into itself would grow
    // without bound.
    SmallVector<func::CallOp> calls;
    kernels->walk([&](mlir::gpu::GPUFuncOp kernel) {
      kernel.walk([&](func::CallOp call) { calls.push_back(call); });
    });
    if (calls.empty())
      break;
    if (round == 16)
      return calls.front().emitError()
             << "@" << calls.front().getCallee()
             << " still calls helpers after 16 rounds of inlining; GPU "
                "targets need helpers that do not recurse";
    for (func::CallOp call : calls) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return call.emitError() << "@" << call.getCallee()
                                << " has no body in the gpu.module to inline";
      if (failed(inlineCall(inliner, config.getCloneCallback(), call, callee,
                            &callee.getBody())))
        return call.emitError() << "@" << call.getCallee()
                                << " cannot be inlined into its kernel";
      call.erase();
    }
  }
  for (auto helper :
       llvm::make_early_inc_range(kernels->getRegion(0).getOps<func::FuncOp>()))
    helper.erase();
  return success();
}

LogicalResult hetc::gpu::chooseHelperForms(Operation *kernels,
                                           llvm::StringRef suffix,
                                           bool useSuffixed) {
  SymbolTable symbols(kernels);
  SmallVector<func::FuncOp> forms;
  for (auto helper : kernels->getRegion(0).getOps<func::FuncOp>())
    if (helper.getSymName().ends_with(suffix))
      forms.push_back(helper);
  bool failed = false;
  for (func::FuncOp form : forms) {
    StringRef name = form.getSymName().drop_back(suffix.size());
    auto original = symbols.lookup<func::FuncOp>(name);
    if (!original) {
      form.emitError() << "@" << form.getSymName() << " is the "
                       << suffix.drop_while([](char c) { return c == '_'; })
                       << " form of @" << name
                       << ", which the module lacks; define @" << name
                       << " (the portable form) beside it";
      failed = true;
      continue;
    }
    if (!SymbolTable::symbolKnownUseEmpty(form, kernels)) {
      form.emitError() << "@" << form.getSymName() << " is called by name; call @"
                       << name << " and let the library variant choose its body";
      failed = true;
      continue;
    }
    if (original.getFunctionType() != form.getFunctionType()) {
      form.emitError() << "@" << form.getSymName() << " has type "
                       << form.getFunctionType() << ", but @" << name
                       << " has " << original.getFunctionType()
                       << "; the two forms must be interchangeable";
      failed = true;
      continue;
    }
    if (!useSuffixed) {
      symbols.erase(form);
      continue;
    }
    symbols.erase(original);
    if (::mlir::failed(symbols.rename(form, name))) {
      form.emitError() << "cannot rename to @" << name;
      failed = true;
    }
  }
  return failure(failed);
}
