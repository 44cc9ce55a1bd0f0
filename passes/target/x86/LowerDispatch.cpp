// hetc-x86-lower-dispatch: kernel calls become parallel_for dispatches through
// the runtime interface (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringMap.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86LOWERDISPATCHPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

struct LowerDispatchPass
    : hetc::x86::impl::HetcX86LowerDispatchPassBase<LowerDispatchPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto pointer = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    // parallel_for(pool, task, args, begin, end)
    auto parallelForType = LLVM::LLVMFunctionType::get(
        voidType, {pointer, pointer, pointer, i64, i64});
    llvm::StringMap<LLVM::LLVMFuncOp> tasks;

    SmallVector<LLVM::CallOp> calls;
    module.walk([&](LLVM::CallOp call) {
      std::optional<StringRef> callee = call.getCallee();
      if (callee && callee->starts_with(hetc::x86::kKernelPrefix) &&
          !call->getParentOfType<LLVM::LLVMFuncOp>().getName().starts_with(
              hetc::x86::kKernelPrefix))
        calls.push_back(call);
    });

    for (LLVM::CallOp call : calls) {
      auto entry = call->getParentOfType<LLVM::LLVMFuncOp>();
      auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(*call.getCallee());
      unsigned numArguments = entry.getNumArguments();
      if (numArguments == 0 ||
          !isa<LLVM::LLVMPointerType>(
              entry.getArgument(numArguments - 1).getType())) {
        call.emitOpError() << "dispatches a kernel from a function without "
                              "the runtime-interface argument";
        return signalPassFailure();
      }
      Value runtime = entry.getArgument(numArguments - 1);
      ValueRange operands = call.getArgOperands();
      if (operands.size() < 2) {
        call.emitOpError() << "calls a kernel without its grid range";
        return signalPassFailure();
      }
      SmallVector<Type> fieldTypes(operands.drop_back(2).getTypes());
      auto argsType = LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);
      LLVM::LLVMFuncOp task = getOrCreateTask(module, kernel, argsType, tasks);

      OpBuilder b(ctx);
      Location loc = call.getLoc();
      b.setInsertionPointToStart(&entry.getBody().front());
      Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
      Value args = LLVM::AllocaOp::create(b, loc, pointer, argsType, one);
      b.setInsertionPoint(call);
      for (auto [field, value] : llvm::enumerate(operands.drop_back(2))) {
        Value slot = LLVM::GEPOp::create(
            b, loc, pointer, argsType, args,
            ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(field)});
        LLVM::StoreOp::create(b, loc, value, slot);
      }
      auto interfaceType =
          LLVM::LLVMStructType::getLiteral(ctx, {pointer, pointer});
      Value pool = LLVM::LoadOp::create(
          b, loc, pointer,
          LLVM::GEPOp::create(b, loc, pointer, interfaceType, runtime,
                              ArrayRef<LLVM::GEPArg>{0, 0}));
      Value parallelFor = LLVM::LoadOp::create(
          b, loc, pointer,
          LLVM::GEPOp::create(b, loc, pointer, interfaceType, runtime,
                              ArrayRef<LLVM::GEPArg>{0, 1}));
      Value taskAddress = LLVM::AddressOfOp::create(b, loc, task);
      SmallVector<Value> dispatchOperands = {parallelFor, pool, taskAddress,
                                             args, operands[operands.size() - 2],
                                             operands[operands.size() - 1]};
      LLVM::CallOp::create(b, loc, parallelForType, dispatchOperands);
      call.erase();
    }
  }

  /// `@<kernel>_task(args, begin, end)`: unpacks the struct and calls the
  /// kernel on [begin, end).
  LLVM::LLVMFuncOp getOrCreateTask(ModuleOp module, LLVM::LLVMFuncOp kernel,
                                   LLVM::LLVMStructType argsType,
                                   llvm::StringMap<LLVM::LLVMFuncOp> &tasks) {
    std::string name = (kernel.getName() + "_task").str();
    if (LLVM::LLVMFuncOp existing = tasks.lookup(name))
      return existing;
    MLIRContext *ctx = &getContext();
    auto pointer = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    Location loc = kernel.getLoc();
    auto task = LLVM::LLVMFuncOp::create(
        b, loc, name,
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {pointer, i64, i64}),
        LLVM::Linkage::Internal);
    Block *entry = task.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    SmallVector<Value> arguments;
    for (auto [field, type] : llvm::enumerate(argsType.getBody())) {
      Value slot = LLVM::GEPOp::create(
          b, loc, pointer, argsType, entry->getArgument(0),
          ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(field)});
      arguments.push_back(LLVM::LoadOp::create(b, loc, type, slot));
    }
    arguments.push_back(entry->getArgument(1));
    arguments.push_back(entry->getArgument(2));
    LLVM::CallOp::create(b, loc, kernel, arguments);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    tasks[name] = task;
    return task;
  }
};

} // namespace
