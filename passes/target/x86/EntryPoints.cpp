// hetc-x86-prepare-entries and hetc-x86-export-entries: the two halves of giving
// model entry points the runtime's calling convention (see Passes.td).
#include "passes/target/x86/Passes.h"

#include "abi/CodeRecord.h"
#include "abi/WeightLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86PREPAREENTRIESPASS
#define GEN_PASS_DEF_HETCX86EXPORTENTRIESPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;

namespace {

/// The argument attribute the llm → linalg conversion puts on the weight data.
constexpr llvm::StringLiteral kWeightsArgAttrName = "llm.weights";

bool isSegmentEntry(func::FuncOp func) {
  return func->hasAttr(hetrt::format::kSegmentEntryAttrName);
}

bool isModelEntry(func::FuncOp func) {
  return !func.isExternal() &&
         (isSegmentEntry(func) || (func.getNumArguments() > 0 &&
                                   func.getArgAttr(0, kWeightsArgAttrName)));
}

struct PrepareEntriesPass
    : hetc::x86::impl::HetcX86PrepareEntriesPassBase<PrepareEntriesPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!isModelEntry(func))
        continue;
      func.setPrivate();
      // Named, so that duplicate-function-elimination never merges two
      // entries of identical code (a batch's segment and a prefill's):
      // the runtime looks each one up by its name.
      func->setAttr(hetc::x86::kEntryAttrName, func.getSymNameAttr());
    }
  }
};

using CodeRecord = std::array<int64_t, hetrt::format::kCodeRecordLength>;

/// The shapes an exported entry point assumes, read off its buffer arguments:
/// the KV caches (memref<2xCxKxDxT>, one per layer) and the logits, its last
/// buffer (memref<NxVxf32>). Fails with a diagnostic when they are not static.
/// The record's magic, ABI version and model hash, its shapes zero.
FailureOr<CodeRecord> baseRecord(ModuleOp module) {
  using namespace hetrt::format;
  CodeRecord record{};
  record[CodeRecordMagic] = kCodeRecordMagic;
  record[CodeRecordAbiVersion] = kKernelAbiVersion;
  if (auto hash = module->getAttrOfType<StringAttr>(kModelHashAttrName)) {
    uint64_t value = 0;
    if (hash.getValue().getAsInteger(16, value))
      return module.emitOpError()
             << kModelHashAttrName << " must be 16 hex digits, not " << hash;
    record[CodeRecordModelHash] = static_cast<int64_t>(value);
  }
  return record;
}

FailureOr<CodeRecord> recordOf(func::FuncOp func) {
  using namespace hetrt::format;
  FailureOr<CodeRecord> base = baseRecord(func->getParentOfType<ModuleOp>());
  if (failed(base))
    return failure();
  CodeRecord record = *base;
  if (auto blockSize =
          func->getAttrOfType<IntegerAttr>(hetrt::format::kKvBlockSizeAttrName))
    record[CodeRecordKvBlockSize] = blockSize.getInt();
  MemRefType logits;
  for (BlockArgument argument : func.getArguments()) {
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!type)
      continue;
    logits = type;
    if (type.getRank() != 4 || type.getDimSize(0) != 2)
      continue;
    if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
      return func.emitOpError()
             << "takes a KV cache of type " << type
             << " with a dynamic shape; the runtime allocates caches from "
                "static shapes";
    CodeRecord cache = record;
    cache[CodeRecordNumKvHeads] = type.getDimSize(1);
    cache[CodeRecordContextLength] = type.getDimSize(2);
    cache[CodeRecordHeadDim] = type.getDimSize(3);
    cache[CodeRecordKvElementBytes] =
        type.getElementType().getIntOrFloatBitWidth() / 8;
    if (record[CodeRecordNumLayers] > 0 &&
        (cache[CodeRecordContextLength] != record[CodeRecordContextLength] ||
         cache[CodeRecordNumKvHeads] != record[CodeRecordNumKvHeads] ||
         cache[CodeRecordHeadDim] != record[CodeRecordHeadDim] ||
         cache[CodeRecordKvElementBytes] != record[CodeRecordKvElementBytes]))
      return func.emitOpError()
             << "takes KV caches of different shapes; the runtime gives every "
                "layer the same cache shape";
    cache[CodeRecordNumLayers] = record[CodeRecordNumLayers] + 1;
    record = cache;
  }
  // A batch's logits have a row per token, however many it runs.
  if (!logits || logits.getRank() != 2 || logits.isDynamicDim(1) ||
      !logits.getElementType().isF32())
    return func.emitOpError()
           << "must take the logits as its last buffer argument, a "
              "memref<NxVxf32> of static V";
  record[CodeRecordVocabSize] = logits.getDimSize(1);
  return record;
}

/// A segment entry's signature (abi/CodeRecord.h): its buffers' kinds,
/// element bytes and shapes. Fails with a diagnostic on an argument that is
/// not a memref of identity layout with whole-byte elements.
FailureOr<SmallVector<int64_t>> signatureOf(func::FuncOp func) {
  using hetrt::format::SegmentBindingKind;
  SmallVector<int64_t> signature = {0};
  for (BlockArgument argument : func.getArguments()) {
    if (func.getArgAttr(argument.getArgNumber(),
                        hetc::x86::kRuntimeArgAttrName))
      continue;
    auto type = dyn_cast<MemRefType>(argument.getType());
    if (!type || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() ||
        type.getElementType().getIntOrFloatBitWidth() % 8 != 0)
      return func.emitOpError()
             << "argument " << argument.getArgNumber() << " of type "
             << argument.getType()
             << " is not a buffer of whole-byte elements the runtime can "
                "bind";
    bool weights = func.getArgAttr(argument.getArgNumber(),
                                   kWeightsArgAttrName) != nullptr;
    signature.push_back(static_cast<int64_t>(
        weights ? SegmentBindingKind::ModelWeights
                : SegmentBindingKind::Tensor));
    signature.push_back(type.getElementType().getIntOrFloatBitWidth() / 8);
    signature.push_back(type.getRank());
    for (int64_t size : type.getShape())
      signature.push_back(ShapedType::isDynamic(size) ? -1 : size);
    ++signature[0];
  }
  if (signature[0] > hetrt::format::kMaxSegmentBindings)
    return func.emitOpError() << "takes " << signature[0]
                              << " buffers, more than a segment may";
  return signature;
}

struct ExportEntriesPass
    : hetc::x86::impl::HetcX86ExportEntriesPassBase<ExportEntriesPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    std::optional<CodeRecord> record;
    bool anySegment = false;
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
      if (isSegmentEntry(func)) {
        FailureOr<SmallVector<int64_t>> signature = signatureOf(func);
        if (failed(signature))
          return signalPassFailure();
        writeConstant(hetrt::format::kSegmentSignaturePrefix +
                          func.getName().str(),
                      *signature);
        anySegment = true;
        continue;
      }
      FailureOr<CodeRecord> entryRecord = recordOf(func);
      if (failed(entryRecord))
        return signalPassFailure();
      if (record && *record != *entryRecord) {
        func.emitOpError() << "assumes other model shapes than the entry "
                              "points before it; one module holds one model";
        return signalPassFailure();
      }
      record = *entryRecord;
    }
    // Segment code alone records the ABI and the model it reads; its shapes
    // are in the signatures.
    if (!record && anySegment) {
      FailureOr<CodeRecord> segmentRecord = baseRecord(getOperation());
      if (failed(segmentRecord))
        return signalPassFailure();
      record = *segmentRecord;
    }
    if (record) {
      writeConstant(hetrt::format::kCodeRecordSymbol, *record);
      // The weights the code reads in another layout than the file's: the
      // count, then the entries hetc-x86-block-matmuls recorded.
      SmallVector<int64_t> layouts = {0};
      if (auto chosen = getOperation()->getAttrOfType<DenseI64ArrayAttr>(
              hetrt::format::kWeightLayoutsAttrName)) {
        if (chosen.size() % hetrt::format::kWeightLayoutFields != 0) {
          getOperation().emitOpError()
              << hetrt::format::kWeightLayoutsAttrName << " holds "
              << chosen.size() << " values, not a whole number of "
              << static_cast<int>(hetrt::format::kWeightLayoutFields)
              << "-value entries";
          return signalPassFailure();
        }
        layouts.front() = chosen.size() / hetrt::format::kWeightLayoutFields;
        llvm::append_range(layouts, chosen.asArrayRef());
      }
      writeConstant(hetrt::format::kWeightLayoutsSymbol, layouts);
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(hetc::x86::kEntryAttrName))
        continue;
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

  /// `values` as an exported constant array, which the runtime finds with
  /// dlsym; one already present (the pass run twice) is replaced.
  void writeConstant(const std::string &symbol,
                     llvm::ArrayRef<int64_t> record) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (Operation *old = module.lookupSymbol(symbol))
      old->erase();
    auto i64 = IntegerType::get(ctx, 64);
    auto values = DenseIntElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(record.size())}, i64),
        llvm::ArrayRef<int64_t>(record));
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    LLVM::GlobalOp::create(builder, module.getLoc(),
                           LLVM::LLVMArrayType::get(i64, record.size()),
                           /*isConstant=*/true, LLVM::Linkage::External,
                           symbol, values);
  }
};

} // namespace
