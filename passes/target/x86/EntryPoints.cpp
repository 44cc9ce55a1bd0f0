// hetc-x86-prepare-entries and hetc-x86-export-entries: the two halves of giving
// model entry points the runtime's calling convention (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86PREPAREENTRIESPASS
#define GEN_PASS_DEF_HETCX86EXPORTENTRIESPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// The argument attribute the llm → linalg conversion puts on the weight data.
constexpr llvm::StringLiteral kWeightsArgAttrName = "llm.weights";

bool isModelEntry(func::FuncOp func) {
  return !func.isExternal() && func.getNumArguments() > 0 &&
         func.getArgAttr(0, kWeightsArgAttrName);
}

struct PrepareEntriesPass
    : hetc::x86::impl::HetcX86PrepareEntriesPassBase<PrepareEntriesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!isModelEntry(func))
        continue;
      func.setPrivate();
      func->setAttr(hetc::x86::kEntryAttrName, UnitAttr::get(&getContext()));
    }
  }
};

struct ExportEntriesPass
    : hetc::x86::impl::HetcX86ExportEntriesPassBase<ExportEntriesPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(hetc::x86::kEntryAttrName))
        continue;
      if (func.getNumResults() != 0) {
        func.emitOpError()
            << "still returns " << func.getNumResults()
            << " value(s); run buffer-results-to-out-params first so the "
               "runtime can pass every buffer in";
        return signalPassFailure();
      }
      func.setPublic();
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    UnitAttr::get(ctx));
      unsigned last = func.getNumArguments();
      if (last == 0 || !func.getArgAttr(last - 1, hetc::x86::kRuntimeArgAttrName))
        if (failed(func.insertArgument(
                last, LLVM::LLVMPointerType::get(ctx),
                DictionaryAttr::get(
                    ctx, {NamedAttribute(
                             StringAttr::get(ctx, hetc::x86::kRuntimeArgAttrName),
                             UnitAttr::get(ctx))}),
                func.getLoc())))
          return signalPassFailure();
    }
  }
};

} // namespace
