// het-lower-to-program: each outlined function's program over the plan's
// devices, with its CPU segments extracted as functions (see Passes.td).
#include "passes/het/Passes.h"

#include "dialects/het/HetOps.h"
#include "passes/target/spirv/ProgramBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

namespace hetc::het {
#define GEN_PASS_DEF_HETLOWERTOPROGRAMPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;

namespace {

struct LowerToProgramPass
    : hetc::het::impl::HetLowerToProgramPassBase<LowerToProgramPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The functions to lower, listed first: lowering adds segment functions.
    SmallVector<func::FuncOp> outlined;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal() &&
          !function.getBody().getOps<hetc::het::SegmentOp>().empty())
        outlined.push_back(function);
    for (func::FuncOp function : outlined) {
      FailureOr<hetc::abi::Program> program =
          hetc::spirv::buildPlannedProgram(function, module);
      if (failed(program))
        return signalPassFailure();
      function->setAttr("hetc.program_steps",
                        Builder(&getContext())
                            .getI64IntegerAttr(static_cast<int64_t>(
                                program->steps.size())));
      if (print)
        llvm::outs() << "program @" << function.getSymName() << ": "
                     << hetc::spirv::describeProgram(*program);
    }
  }
};

} // namespace
