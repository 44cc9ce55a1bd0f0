// The het dialect definition and its base classes.
#ifndef HETC_HET_DIALECT_TD
#define HETC_HET_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Het_Dialect : Dialect {
  let name = "het";
  let cppNamespace = "::hetc::het";
  let summary = "Heterogeneous placement: devices, memory spaces, segments, transfers";
  let description = [{
    The `het` dialect says what runs where and what moves. Devices are described
    by `#het.device` (kind, architecture, memory), memories by
    `#het.memory_space` (a tier and the device that owns it). Any op may carry a
    `het.placement = #het.device<...>` attribute, and any value-producing op a
    `het.memory_space = #het.memory_space<...>` attribute saying where its result
    lives. `het.segment` groups ops that run on one device; `het.transfer` moves a
    value between memory spaces and `het.wait` orders on its completion;
    `het.kv_tiers` declares how a KV cache is split across memory tiers.
  }];
  let dependentDialects = ["::hetc::llm::LLMDialect"];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();

    /// Discardable attribute placing an op on a device.
    static constexpr ::llvm::StringLiteral kPlacementAttrName = "het.placement";
    /// Discardable attribute naming the memory space of an op's results.
    static constexpr ::llvm::StringLiteral kMemorySpaceAttrName =
        "het.memory_space";
    /// Argument attribute naming the het.kv_tiers a KV-cache argument is
    /// stored in.
    static constexpr ::llvm::StringLiteral kKVCacheAttrName = "het.kv_cache";
    /// Module attribute summarizing the plan het-partition wrote.
    static constexpr ::llvm::StringLiteral kPlanAttrName = "het.plan";
  }];
}

class Het_Op<string mnemonic, list<Trait> traits = []>
    : Op<Het_Dialect, mnemonic, traits>;

class Het_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Het_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class Het_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Het_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // HETC_HET_DIALECT_TD
