// Enumerations of the het dialect.
#ifndef HETC_HET_ENUMS_TD
#define HETC_HET_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def Het_DeviceKind : I32EnumAttr<"DeviceKind", "kind of compute device", [
    I32EnumAttrCase<"cpu", 0>,
    I32EnumAttrCase<"cuda", 1>,
    I32EnumAttrCase<"hip", 2>,
    I32EnumAttrCase<"spirv", 3>,
  ]> {
  let cppNamespace = "::hetc::het";
  let genSpecializedAttr = 0;
}

def Het_MemoryKind : I32EnumAttr<"MemoryKind", "memory tier", [
    // Device-attached high-bandwidth memory (GPU HBM/GDDR).
    I32EnumAttrCase<"hbm", 0>,
    // Host DRAM of a CPU socket.
    I32EnumAttrCase<"dram", 1>,
    // CXL-attached memory expander (a far NUMA node).
    I32EnumAttrCase<"cxl", 2>,
    // File-backed pages on local storage.
    I32EnumAttrCase<"disk", 3>,
  ]> {
  let cppNamespace = "::hetc::het";
  let genSpecializedAttr = 0;
}

#endif // HETC_HET_ENUMS_TD
