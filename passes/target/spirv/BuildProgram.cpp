// hetc-spirv-build-program: each model function's program of SPIR-V kernel
// dispatches, counted on the function and printed on request.
#include "passes/target/spirv/Passes.h"
#include "passes/target/spirv/ProgramBuilder.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

namespace hetc::spirv {

#define GEN_PASS_DEF_HETCSPIRVBUILDPROGRAMPASS
#include "passes/target/spirv/Passes.h.inc"

namespace {

struct BuildProgramPass
    : impl::HetcSpirvBuildProgramPassBase<BuildProgramPass> {
  using Base::Base;

  void runOnOperation() override {
    bool failedAny = false;
    getOperation().walk([&](mlir::func::FuncOp function) {
      if (function.isExternal())
        return;
      // Only functions that compute with llm ops are model steps.
      bool computes = false;
      function.walk([&](mlir::Operation *op) {
        computes = computes || llvm::isa<llm::LLMDialect>(op->getDialect());
      });
      if (!computes)
        return;
      mlir::FailureOr<abi::Program> program = buildProgram(function);
      if (mlir::failed(program)) {
        failedAny = true;
        return;
      }
      mlir::Builder builder(function.getContext());
      function->setAttr("hetc.spirv_steps",
                        builder.getI64IntegerAttr(
                            static_cast<int64_t>(program->steps.size())));
      if (print)
        llvm::outs() << "program @" << function.getSymName() << ": "
                     << describeProgram(*program);
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
} // namespace hetc::spirv
