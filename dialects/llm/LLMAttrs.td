// Attributes of the llm dialect: the model's own facts.
#ifndef HETC_LLM_ATTRS_TD
#define HETC_LLM_ATTRS_TD

include "dialects/llm/LLMDialect.td"

def LLM_ModelAttr : LLM_Attr<"Model", "model"> {
  let summary = "The hyper-parameters of the model a module holds";
  let description = [{
    What the importer read from the model file and every pass that reasons
    about the whole model (`het-partition`, `hetc plan`, `hetc compile`)
    reads back: the architecture, the decoder's shapes, the vocabulary, the
    KV cache's capacity in tokens, and for mixtures of experts the experts
    per layer and per token. It sits on the module as `llm.model`.

    Verified:
    - M1: every size is positive (`experts` and `experts_used` may be 0);
    - M2: `heads` is a multiple of `kv_heads`;
    - M3: `experts_used` is positive exactly when `experts` is, and at most
      `experts`;
    - M4: the architecture is one hetc imports (llama, mistral, mixtral,
      qwen2).

    ```mlir
    module attributes {llm.model = #llm.model<architecture = "llama",
        layers = 5, dim = 64, heads = 8, kv_heads = 4, head_dim = 8,
        ffn_dim = 172, vocab = 512, context_length = 512>} { ... }
    ```
  }];
  let parameters = (ins StringRefParameter<"architecture">:$architecture,
                        "int64_t":$layers,
                        "int64_t":$dim,
                        "int64_t":$heads,
                        "int64_t":$kv_heads,
                        "int64_t":$head_dim,
                        "int64_t":$ffn_dim,
                        "int64_t":$vocab,
                        "int64_t":$context_length,
                        DefaultValuedParameter<"int64_t", "0">:$experts,
                        DefaultValuedParameter<"int64_t", "0">:$experts_used);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // HETC_LLM_ATTRS_TD
