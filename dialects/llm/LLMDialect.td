// The llm dialect definition and the base classes every llm op, type and attribute
// derives from.
#ifndef HETC_LLM_DIALECT_TD
#define HETC_LLM_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/llm/LLMInterfaces.td"

def LLM_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::hetc::llm";
  let summary = "Model-level operations of decoder-only language models";
  let description = [{
    The `llm` dialect describes a language model the way its authors think of it:
    embeddings, norms, matmuls against (possibly block-quantized) weights, rotary
    position embeddings, attention over a KV cache, activations, mixture-of-experts
    routing and sampling. Activations are ranked tensors `[tokens, features]` (the
    token dimension is usually dynamic, `?`); per-head values are `[tokens, heads,
    head_dim]`.

    Weights are never copied into the IR. A module declares each weight once with
    `llm.weight`, naming the tensor in the model file, and functions refer to it
    with `llm.get_weight`. Block-quantized formats are element types
    (`!llm.quant<q4_0>`), so any pass can compute the exact bytes an op moves.

    Every op implements `WorkOpInterface` (FLOPs and bytes for given token count
    and context length), which the cost model reads.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerAttributes();
  }];
}

// Every llm op reports its work to the cost model: the interface is appended here
// once, so no op can be defined without answering it.
class LLM_Op<string mnemonic, list<Trait> traits = []>
    : Op<LLM_Dialect, mnemonic,
         !listconcat(traits, [DeclareOpInterfaceMethods<LLM_WorkOpInterface>])>;

// Value-semantic llm ops: no side effects, freely CSE'd and erased when unused.
class LLM_PureOp<string mnemonic, list<Trait> traits = []>
    : LLM_Op<mnemonic, !listconcat(traits, [Pure])>;

class LLM_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<LLM_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

class LLM_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<LLM_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

#endif // HETC_LLM_DIALECT_TD
