// Operations of the het dialect. Each op lists the rules its verifier enforces
// (C1, C2, ...); test/dialects/het/invalid.mlir has one case per rule.
#ifndef HETC_HET_OPS_TD
#define HETC_HET_OPS_TD

include "dialects/het/HetDialect.td"
include "dialects/het/HetAttrs.td"
include "dialects/het/HetTypes.td"
include "dialects/llm/LLMTypes.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Het_SegmentOp : Het_Op<"segment", [
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "A region of work that runs on one device";
  let description = [{
    The ops in the body run on `device`. Values it uses from outside must live
    in memory that device owns: anything else comes through `het.transfer`
    first. The results live in the device's own memory (its HBM, or DRAM for a
    CPU). `het-outline` turns each segment into one kernel-launch sequence.

    ```mlir
    %y = het.segment on #het.device<"gpu0", cuda, "sm_90"> -> tensor<?x4096xf32> {
      %h = llm.rms_norm %x_gpu, %w eps = 1.0e-05 : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
      het.yield %h : tensor<?x4096xf32>
    }
    ```

    Verifier rules:
    - C1: the values yielded match the result types.
    - C2: every value used from outside lives in memory the device owns (when
      its memory space is known: a `het.transfer` result, an op with a
      `het.memory_space`, or a value computed on a device).
    - C3: ops inside carry no `het.placement` other than the segment's device.
    - C4: segments do not nest.
  }];
  let arguments = (ins Het_DeviceAttr:$device);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `on` qualified($device) (`->` type($results)^)? attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "DeviceAttr":$device, "::mlir::TypeRange":$resultTypes)>,
  ];
  let extraClassDeclaration = [{
    /// The memory the segment's results live in: the device's own.
    MemorySpaceAttr getHomeMemorySpace();
  }];
}

def Het_YieldOp : Het_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"SegmentOp">]> {
  let summary = "Returns values from a segment";
  let description = [{
    Ends a `het.segment`, producing its results.

    ```mlir
    het.yield %h : tensor<?x4096xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

def Het_TransferOp : Het_Op<"transfer", [AllTypesMatch<["source", "result"]>]> {
  let summary = "Moves a value from one memory space to another";
  let description = [{
    Copies `source`, which lives in `from`, into `to`, returning the copy and a
    token that completes when the copy has landed. The copy may proceed
    asynchronously; ops that need it to be complete follow a `het.wait` on the
    token.

    ```mlir
    %w_gpu, %done = het.transfer %w : tensor<4096x4096x!llm.quant<q4_0>> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "gpu0">
    het.wait %done
    ```

    Verifier rules:
    - C1: `from` and `to` differ.
    - C2: the result has the type of the source.
    - C3: when the source's memory space is known, it is `from`.
  }];
  let arguments = (ins AnyType:$source, Het_MemorySpaceAttr:$from,
                       Het_MemorySpaceAttr:$to);
  let results = (outs AnyType:$result, Het_TokenType:$done);
  let assemblyFormat = [{
    $source `:` type($source) `from` qualified($from) `to` qualified($to) attr-dict
  }];
  let hasVerifier = 1;
}

def Het_WaitOp : Het_Op<"wait"> {
  let summary = "Waits until transfers have completed";
  let description = [{
    Blocks until every transfer whose token is given has completed.

    ```mlir
    het.wait %done0, %done1
    ```

    Verifier rules:
    - C1: at least one token is given.
    - C2: no token is given twice.
  }];
  let arguments = (ins Variadic<Het_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict";
  let hasVerifier = 1;
}

def Het_KVTiersOp : Het_Op<"kv_tiers", [Symbol]> {
  let summary = "Declares how a KV cache is split across memory tiers";
  let description = [{
    A KV cache of type `cache_type` is stored in blocks of `block_tokens`
    positions; each tier holds `blocks` blocks in one memory space. Tiers are
    listed fastest first: the runtime fills them in order, evicts from the first
    to later ones and prefetches back ahead of use.

    ```mlir
    het.kv_tiers @kv0 for !llm.kv_cache<capacity = 32768, kvHeads = 8, headDim = 128, elementType = f16>
        block_tokens = 16
        tiers [#het.kv_tier<hbm, "gpu0", blocks = 1024>, #het.kv_tier<dram, "cpu0", blocks = 1024>]
    ```

    Verifier rules:
    - C1: at least one tier is given.
    - C2: `block_tokens` is positive.
    - C3: every tier holds a positive number of blocks.
    - C4: no two tiers are in the same memory space.
    - C5: the tiers together hold the cache's capacity:
      `Σ blocks · block_tokens >= capacity`.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<LLM_KVCacheType>:$cache_type,
                       I64Attr:$block_tokens,
                       TypedArrayAttrBase<Het_KVTierAttr, "KV tiers">:$tiers);
  let assemblyFormat = [{
    $sym_name `for` $cache_type `block_tokens` `=` $block_tokens
    `tiers` $tiers attr-dict
  }];
  let hasVerifier = 1;
}

#endif // HETC_HET_OPS_TD
