// Attributes of the het dialect: devices, memory spaces and KV-cache tiers.
#ifndef HETC_HET_ATTRS_TD
#define HETC_HET_ATTRS_TD

include "dialects/het/HetDialect.td"
include "dialects/het/HetEnums.td"

def Het_DeviceAttr : Het_Attr<"Device", "device"> {
  let summary = "A compute device: name, kind, architecture and memory";
  let description = [{
    Names one device of the system and says what it is. `arch` is checked
    against the kind: `sm_<NN>` for cuda, `gfx<NNN>` for hip, an x86-64 level or
    CPU name (`x86-64-v3`, `x86-64-v4`, `sapphirerapids`, ...) for cpu, any
    non-empty name for spirv. `memory` is the bytes of the device's own memory
    (its HBM, or the DRAM of a CPU), when known.

    ```mlir
    #het.device<"gpu0", cuda, "sm_90", memory = 85899345920>
    #het.device<"cpu0", cpu, "x86-64-v4">
    ```
  }];
  let parameters = (ins StringRefParameter<"device name">:$name,
                        EnumParameter<Het_DeviceKind>:$kind,
                        StringRefParameter<"architecture">:$arch,
                        OptionalParameter<"uint64_t">:$memory);
  let assemblyFormat =
      "`<` $name `,` $kind `,` $arch (`,` `memory` `=` $memory^)? `>`";
  let genVerifyDecl = 1;
}

def Het_MemorySpaceAttr : Het_Attr<"MemorySpace", "memory_space"> {
  let summary = "A memory tier owned by a device";
  let description = [{
    Where a value lives: a tier (`hbm`, `dram`, `cxl`, `disk`) and the name of
    the device that owns it. A device computes directly only on values in
    memory it owns; anything else reaches it through `het.transfer`.

    ```mlir
    #het.memory_space<hbm, "gpu0">
    #het.memory_space<dram, "cpu0">
    ```
  }];
  let parameters = (ins EnumParameter<Het_MemoryKind>:$kind,
                        StringRefParameter<"owning device">:$owner);
  let assemblyFormat = "`<` $kind `,` $owner `>`";
  let genVerifyDecl = 1;
}

def Het_KVTierAttr : Het_Attr<"KVTier", "kv_tier"> {
  let summary = "One tier of a KV cache: a memory space and its block count";
  let description = [{
    `blocks` KV-cache blocks (each `block_tokens` positions of the owning
    `het.kv_tiers`) in the memory tier `kind` of device `owner`.

    ```mlir
    #het.kv_tier<hbm, "gpu0", blocks = 1024>
    ```
  }];
  let parameters = (ins EnumParameter<Het_MemoryKind>:$kind,
                        StringRefParameter<"owning device">:$owner,
                        "int64_t":$blocks);
  let assemblyFormat = "`<` $kind `,` $owner `,` `blocks` `=` $blocks `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The memory space this tier occupies.
    MemorySpaceAttr getMemorySpace() const;
  }];
}

#endif // HETC_HET_ATTRS_TD
