// The llm dialect's operations (generated from LLMOps.td) and what they need.
#ifndef HETC_DIALECTS_LLM_LLMOPS_H
#define HETC_DIALECTS_LLM_LLMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llm/LLMDialect.h"
#include "dialects/llm/LLMInterfaces.h"
#include "dialects/llm/LLMTypes.h"

#define GET_OP_CLASSES
#include "dialects/llm/LLMOps.h.inc"

#endif // HETC_DIALECTS_LLM_LLMOPS_H
