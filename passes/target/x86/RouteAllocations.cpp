// hetc-x86-route-allocations: buffer allocations of the generated code go
// through an allocator the runtime installs (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86ROUTEALLOCATIONSPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

struct RouteAllocationsPass
    : hetc::x86::impl::HetcX86RouteAllocationsPassBase<RouteAllocationsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Location loc = module.getLoc();
    auto pointer = LLVM::LLVMPointerType::get(ctx);
    auto i64 = IntegerType::get(ctx, 64);
    auto voidType = LLVM::LLVMVoidType::get(ctx);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());

    // The table the runtime fills after loading: {allocate(size, alignment),
    // release(pointer)}; zero means "use the C library".
    auto tableType = LLVM::LLVMArrayType::get(pointer, 2);
    auto table = LLVM::GlobalOp::create(b, loc, tableType, /*isConstant=*/false,
                                        LLVM::Linkage::External,
                                        hetc::x86::kAllocatorTableName,
                                        Attribute());
    {
      Block *init = b.createBlock(&table.getInitializerRegion());
      OpBuilder ib = OpBuilder::atBlockBegin(init);
      LLVM::ReturnOp::create(ib, loc,
                             LLVM::ZeroOp::create(ib, loc, tableType).getResult());
    }
    b.setInsertionPointToEnd(module.getBody());

    auto allocateType = LLVM::LLVMFunctionType::get(pointer, {i64, i64});
    auto releaseType = LLVM::LLVMFunctionType::get(voidType, {pointer});
    auto declare = [&](StringRef name, LLVM::LLVMFunctionType type) {
      if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
        return existing;
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(module.getBody());
      return LLVM::LLVMFuncOp::create(b, loc, name, type);
    };

    // Defines `name` (a generic allocation function the memref lowering
    // calls) as: the installed function from table slot `slot` when set,
    // else `fallback` from the C library.
    auto define = [&](StringRef name, unsigned slot,
                      LLVM::LLVMFunctionType installedType,
                      StringRef fallbackName,
                      LLVM::LLVMFunctionType fallbackType,
                      function_ref<SmallVector<Value>(OpBuilder &, ValueRange)>
                          installedArgs) {
      auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!func || !func.isExternal())
        return;
      LLVM::LLVMFuncOp fallback = declare(fallbackName, fallbackType);
      Block *entry = func.addEntryBlock(b);
      Block *routed = new Block();
      Block *library = new Block();
      func.getBody().push_back(routed);
      func.getBody().push_back(library);
      OpBuilder eb = OpBuilder::atBlockBegin(entry);
      Value base = LLVM::AddressOfOp::create(eb, loc, table);
      Value slotAddress =
          LLVM::GEPOp::create(eb, loc, pointer, tableType, base,
                              ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(slot)});
      Value installed = LLVM::LoadOp::create(eb, loc, pointer, slotAddress);
      Value null = LLVM::ZeroOp::create(eb, loc, pointer);
      Value missing = LLVM::ICmpOp::create(eb, loc, LLVM::ICmpPredicate::eq,
                                           installed, null);
      LLVM::CondBrOp::create(eb, loc, missing, library, routed);
      bool returnsValue =
          !isa<LLVM::LLVMVoidType>(func.getFunctionType().getReturnType());

      OpBuilder rb = OpBuilder::atBlockBegin(routed);
      SmallVector<Value> operands = {installed};
      llvm::append_range(operands, installedArgs(rb, entry->getArguments()));
      auto call = LLVM::CallOp::create(rb, loc, installedType, operands);
      LLVM::ReturnOp::create(rb, loc,
                             returnsValue ? ValueRange{call.getResult()}
                                          : ValueRange{});

      OpBuilder lb = OpBuilder::atBlockBegin(library);
      auto libraryCall =
          LLVM::CallOp::create(lb, loc, fallback, entry->getArguments());
      LLVM::ReturnOp::create(lb, loc,
                             returnsValue ? ValueRange{libraryCall.getResult()}
                                          : ValueRange{});
    };

    auto constant = [&](OpBuilder &cb, int64_t value) -> Value {
      return LLVM::ConstantOp::create(cb, loc, i64, cb.getI64IntegerAttr(value));
    };
    // memref.alloc without an alignment: the runtime still gets a cache line.
    define("_mlir_memref_to_llvm_alloc", 0, allocateType, "malloc",
           LLVM::LLVMFunctionType::get(pointer, {i64}),
           [&](OpBuilder &cb, ValueRange args) -> SmallVector<Value> {
             return {args[0], constant(cb, 64)};
           });
    define("_mlir_memref_to_llvm_aligned_alloc", 0, allocateType,
           "aligned_alloc", LLVM::LLVMFunctionType::get(pointer, {i64, i64}),
           [&](OpBuilder &, ValueRange args) -> SmallVector<Value> {
             return {args[1], args[0]};
           });
    define("_mlir_memref_to_llvm_free", 1, releaseType, "free", releaseType,
           [&](OpBuilder &, ValueRange args) -> SmallVector<Value> {
             return {args[0]};
           });
  }
};

} // namespace
