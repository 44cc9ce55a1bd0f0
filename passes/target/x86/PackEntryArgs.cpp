// hetc-x86-pack-entry-args: one-pointer wrappers around the entry points' C
// interfaces (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "abi/CodeRecord.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86PACKENTRYARGSPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kCInterfacePrefix = "_mlir_ciface_";

struct PackEntryArgsPass
    : hetc::x86::impl::HetcX86PackEntryArgsPassBase<PackEntryArgsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto pointer = LLVM::LLVMPointerType::get(ctx);
    SmallVector<LLVM::LLVMFuncOp> interfaces;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func.getName().starts_with(kCInterfacePrefix) && !func.isExternal())
        interfaces.push_back(func);
    OpBuilder b(ctx);
    b.setInsertionPointToEnd(module.getBody());
    for (LLVM::LLVMFuncOp interface : interfaces) {
      LLVM::LLVMFunctionType type = interface.getFunctionType();
      if (!llvm::all_of(type.getParams(),
                        [](Type t) { return isa<LLVM::LLVMPointerType>(t); }) ||
          !isa<LLVM::LLVMVoidType>(type.getReturnType())) {
        interface.emitOpError()
            << "is not an entry point taking only descriptor pointers";
        return signalPassFailure();
      }
      std::string name =
          (llvm::StringRef(hetrt::format::kEntryWrapperPrefix) + interface.getName().drop_front(kCInterfacePrefix.size()))
              .str();
      Location loc = interface.getLoc();
      auto wrapper = LLVM::LLVMFuncOp::create(
          b, loc, name,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {pointer}));
      Block *entry = wrapper.addEntryBlock(b);
      OpBuilder body = OpBuilder::atBlockBegin(entry);
      SmallVector<Value> descriptors;
      for (unsigned i = 0; i < type.getNumParams(); ++i) {
        Value slot = LLVM::GEPOp::create(
            body, loc, pointer, pointer, entry->getArgument(0),
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        descriptors.push_back(LLVM::LoadOp::create(body, loc, pointer, slot));
      }
      LLVM::CallOp::create(body, loc, interface, descriptors);
      LLVM::ReturnOp::create(body, loc, ValueRange{});
    }
  }
};

} // namespace
