// Attributes of the llm dialect: the enum attributes used in op syntax.
#ifndef HETC_LLM_ATTRS_TD
#define HETC_LLM_ATTRS_TD

include "dialects/llm/LLMDialect.td"
include "dialects/llm/LLMEnums.td"

def LLM_RopeModeAttr : EnumAttr<LLM_Dialect, LLM_RopeMode, "rope_mode">;
def LLM_RopeScalingAttr : EnumAttr<LLM_Dialect, LLM_RopeScaling, "rope_scaling">;
def LLM_GeluApproximationAttr
    : EnumAttr<LLM_Dialect, LLM_GeluApproximation, "gelu_approximation">;
def LLM_GatedActivationAttr
    : EnumAttr<LLM_Dialect, LLM_GatedActivation, "gated_activation">;

#endif // HETC_LLM_ATTRS_TD
