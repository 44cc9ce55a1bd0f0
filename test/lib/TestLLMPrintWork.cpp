// test-llm-print-work: prints every llm op's WorkOpInterface figures as remarks,
// so lit tests can check the numbers the cost model will see.
#include "dialects/llm/LLMOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

#define DEBUG_TYPE "test-llm-print-work"

using namespace mlir;

namespace {

struct TestLLMPrintWorkPass
    : PassWrapper<TestLLMPrintWorkPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestLLMPrintWorkPass)

  TestLLMPrintWorkPass() = default;
  TestLLMPrintWorkPass(const TestLLMPrintWorkPass &other)
      : PassWrapper(other) {}

  StringRef getArgument() const final { return "test-llm-print-work"; }
  StringRef getDescription() const final {
    return "Emit a remark with the FLOPs and bytes of every llm op";
  }

  void runOnOperation() override {
    hetc::llm::WorkContext context{numTokens, contextLength};
    getOperation().walk([&](hetc::llm::WorkOpInterface op) {
      hetc::llm::OpWork work = op.getWork(context);
      op->emitRemark() << "flops = " << work.flops
                       << ", bytes_read = " << work.bytesRead
                       << ", weight_bytes_read = " << work.weightBytesRead
                       << ", bytes_written = " << work.bytesWritten;
    });
    markAllAnalysesPreserved();
  }

  Option<int64_t> numTokens{*this, "num-tokens",
                            llvm::cl::desc("Size of every dynamic dimension"),
                            llvm::cl::init(1)};
  Option<int64_t> contextLength{
      *this, "context-length",
      llvm::cl::desc("KV-cache positions after this step"), llvm::cl::init(1)};
};

} // namespace

namespace hetc::test {
void registerTestLLMPrintWorkPass() {
  PassRegistration<TestLLMPrintWorkPass>();
}
} // namespace hetc::test
