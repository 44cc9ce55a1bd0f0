// Enumerations of the llm dialect.
#ifndef HETC_LLM_ENUMS_TD
#define HETC_LLM_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def LLM_QuantFormat : I32EnumAttr<"QuantFormat", "block-quantized weight format", [
    I32EnumAttrCase<"q8_0", 8>,
    I32EnumAttrCase<"q4_0", 2>,
    I32EnumAttrCase<"q2_k", 10>,
    I32EnumAttrCase<"q3_k", 11>,
    I32EnumAttrCase<"q4_k", 12>,
    I32EnumAttrCase<"q5_k", 13>,
    I32EnumAttrCase<"q6_k", 14>,
  ]> {
  let cppNamespace = "::hetc::llm";
  let genSpecializedAttr = 0;
}

def LLM_RopeModeAttr : I32EnumAttr<"RopeMode", "pairing of rotated dimensions", [
    // Adjacent pairs (x[2i], x[2i+1]), as in the original Llama.
    I32EnumAttrCase<"normal", 0>,
    // Split halves (x[i], x[i + d/2]), as in GPT-NeoX, Qwen2, Phi-3, Gemma.
    I32EnumAttrCase<"neox", 1>,
  ]> {
  let cppNamespace = "::hetc::llm";
}

def LLM_RopeScalingAttr : I32EnumAttr<"RopeScaling", "RoPE context-extension scheme", [
    I32EnumAttrCase<"linear", 1>,
    I32EnumAttrCase<"yarn", 2>,
  ]> {
  let cppNamespace = "::hetc::llm";
}

def LLM_GeluApproximationAttr : I32EnumAttr<"GeluApproximation", "GELU formula", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"tanh", 1>,
  ]> {
  let cppNamespace = "::hetc::llm";
}

def LLM_GatedActivationAttr : I32EnumAttr<"GatedActivation",
    "activation applied to the gate of a GLU", [
    // SwiGLU: Llama, Mistral, Qwen2, Phi-3, Mixtral experts.
    I32EnumAttrCase<"silu", 0>,
    // GeGLU with exact GELU.
    I32EnumAttrCase<"gelu", 1>,
    // GeGLU with the tanh approximation: Gemma.
    I32EnumAttrCase<"gelu_tanh", 2>,
  ]> {
  let cppNamespace = "::hetc::llm";
}

#endif // HETC_LLM_ENUMS_TD
