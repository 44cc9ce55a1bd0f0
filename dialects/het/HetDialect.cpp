// Registration of the het dialect, its attributes, types and discardable-attribute
// checks.
#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Regex.h"

using namespace mlir;
using namespace hetc::het;

#include "dialects/het/HetDialect.cpp.inc"
#include "dialects/het/HetEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/het/HetAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/het/HetTypes.cpp.inc"

namespace {

/// Prints devices and memory spaces by short aliases (`#gpu0`,
/// `#gpu0_hbm`), so a partitioned module reads as what runs where.
struct HetOpAsmInterface : OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;

  AliasResult getAlias(Attribute attr, llvm::raw_ostream &os) const override {
    auto identifier = [&](StringRef name) {
      if (name.empty() || llvm::isDigit(name.front()))
        os << "dev_";
      for (char c : name)
        os << (llvm::isAlnum(c) || c == '_' ? c : '_');
    };
    if (auto device = dyn_cast<DeviceAttr>(attr)) {
      identifier(device.getName());
      return AliasResult::FinalAlias;
    }
    if (auto space = dyn_cast<MemorySpaceAttr>(attr)) {
      identifier(space.getOwner());
      os << "_" << stringifyMemoryKind(space.getKind());
      return AliasResult::FinalAlias;
    }
    return AliasResult::NoAlias;
  }
};

} // namespace

void HetDialect::initialize() {
  addInterfaces<HetOpAsmInterface>();
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialects/het/HetOps.cpp.inc"
      >();
}

void HetDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/het/HetAttrs.cpp.inc"
      >();
}

void HetDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/het/HetTypes.cpp.inc"
      >();
}

LogicalResult HetDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name == kPlacementAttrName) {
    if (!isa<DeviceAttr>(attribute.getValue()))
      return op->emitOpError()
             << "expects '" << kPlacementAttrName
             << "' to be a #het.device attribute, got " << attribute.getValue();
    return success();
  }
  if (name == kMemorySpaceAttrName) {
    if (!isa<MemorySpaceAttr>(attribute.getValue()))
      return op->emitOpError()
             << "expects '" << kMemorySpaceAttrName
             << "' to be a #het.memory_space attribute, got "
             << attribute.getValue();
    if (op->getNumResults() == 0)
      return op->emitOpError()
             << "has '" << kMemorySpaceAttrName
             << "' but no results to place in that memory space";
    return success();
  }
  if (name == kPlanAttrName) {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(attribute.getValue()))
      return op->emitOpError()
             << "expects '" << kPlanAttrName
             << "' only on a module, as a dictionary (het-partition writes it)";
    return success();
  }
  return op->emitOpError() << "has unknown het attribute '" << name
                           << "'; the het dialect defines '"
                           << kPlacementAttrName << "', '"
                           << kMemorySpaceAttrName << "' and '" << kPlanAttrName
                           << "' on ops, and '" << kMemorySpaceAttrName
                           << "' and '" << kKVCacheAttrName
                           << "' on function arguments";
}

LogicalResult HetDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Region &region = op->getRegion(regionIndex);
  if (region.empty() || argIndex >= region.front().getNumArguments())
    return op->emitOpError() << "has '" << name << "' on argument #"
                             << argIndex << ", which does not exist";
  Type type = region.front().getArgument(argIndex).getType();
  if (name == kMemorySpaceAttrName) {
    if (!isa<MemorySpaceAttr>(attribute.getValue()))
      return op->emitOpError()
             << "expects '" << kMemorySpaceAttrName << "' of argument #"
             << argIndex << " to be a #het.memory_space attribute, got "
             << attribute.getValue();
    return success();
  }
  if (name == kKVCacheAttrName) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(attribute.getValue());
    if (!ref)
      return op->emitOpError()
             << "expects '" << kKVCacheAttrName << "' of argument #"
             << argIndex << " to name a het.kv_tiers symbol, got "
             << attribute.getValue();
    if (!isa<hetc::llm::KVCacheType>(type))
      return op->emitOpError()
             << "has '" << kKVCacheAttrName << "' on argument #" << argIndex
             << " of type " << type << ", which is not a !llm.kv_cache";
    auto tiers = dyn_cast_or_null<KVTiersOp>(
        SymbolTable::lookupNearestSymbolFrom(op, ref.getAttr()));
    if (!tiers)
      return op->emitOpError()
             << "stores argument #" << argIndex << " in " << ref
             << ", which is not a het.kv_tiers in scope; declare it";
    if (tiers.getCacheType() != type)
      return op->emitOpError()
             << "stores argument #" << argIndex << " of type " << type << " in "
             << ref << ", which is declared for " << tiers.getCacheType();
    return success();
  }
  return op->emitOpError() << "has unknown het argument attribute '" << name
                           << "' on argument #" << argIndex << "; the het "
                           << "dialect defines '" << kMemorySpaceAttrName
                           << "' and '" << kKVCacheAttrName << "'";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef name, DeviceKind kind,
                                 StringRef arch, uint64_t memory) {
  if (name.empty())
    return emitError() << "#het.device needs a non-empty name";
  // Architectures are named the way each vendor's compiler spells them, so they
  // can be handed to the back end unchanged.
  StringRef pattern;
  StringRef example;
  switch (kind) {
  case DeviceKind::cuda:
    pattern = "^sm_[0-9]+[af]?$";
    example = "sm_90";
    break;
  case DeviceKind::hip:
    pattern = "^gfx[0-9a-f]+$";
    example = "gfx942";
    break;
  case DeviceKind::cpu:
    pattern = "^[a-z][a-z0-9_.-]*$";
    example = "x86-64-v4";
    break;
  case DeviceKind::spirv:
    pattern = "^.+$";
    example = "vulkan1.3";
    break;
  }
  if (!llvm::Regex(pattern).match(arch))
    return emitError() << "#het.device \"" << name << "\" has arch \"" << arch
                       << "\", which is not a " << stringifyDeviceKind(kind)
                       << " architecture (expected e.g. \"" << example << "\")";
  return success();
}

LogicalResult
MemorySpaceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        MemoryKind kind, StringRef owner) {
  if (owner.empty())
    return emitError() << "#het.memory_space needs the name of its owning "
                          "device";
  return success();
}

LogicalResult KVTierAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 MemoryKind kind, StringRef owner,
                                 int64_t blocks) {
  return MemorySpaceAttr::verify(emitError, kind, owner);
}

MemorySpaceAttr KVTierAttr::getMemorySpace() const {
  return MemorySpaceAttr::get(getContext(), getKind(), getOwner());
}
