// Op interfaces of the llm dialect: the questions every op must answer.
#ifndef HETC_LLM_INTERFACES_TD
#define HETC_LLM_INTERFACES_TD

include "mlir/IR/OpBase.td"

def LLM_WorkOpInterface : OpInterface<"WorkOpInterface"> {
  let cppNamespace = "::hetc::llm";
  let description = [{
    The work an op does, for the cost model: floating-point (or integer
    multiply-accumulate) operations and bytes read and written, at the op's
    element types. Block-quantized tensors count their stored bytes, so a Q4_0
    weight of N×K elements reads N·K/32·18 bytes.

    Dynamic dimensions (the token dimension) take `WorkContext::numTokens`;
    attention and KV-cache ops see `WorkContext::contextLength` cached positions.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Returns the op's FLOPs and bytes moved in the given context.",
      /*retTy=*/"::hetc::llm::OpWork",
      /*methodName=*/"getWork",
      /*args=*/(ins "const ::hetc::llm::WorkContext &":$context)>,
  ];
}

#endif // HETC_LLM_INTERFACES_TD
