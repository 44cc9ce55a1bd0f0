// Types and enums of the llm dialect.
#ifndef HETC_DIALECTS_LLM_LLMTYPES_H
#define HETC_DIALECTS_LLM_LLMTYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#include "dialects/llm/LLMEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/llm/LLMTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/llm/LLMAttrs.h.inc"

namespace hetc::llm {
/// The module attribute holding the model's #llm.model.
inline constexpr llvm::StringLiteral kModelAttrName = "llm.model";
} // namespace hetc::llm

#endif // HETC_DIALECTS_LLM_LLMTYPES_H
