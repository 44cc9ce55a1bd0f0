// The llm dialect class.
#ifndef HETC_DIALECTS_LLM_LLMDIALECT_H
#define HETC_DIALECTS_LLM_LLMDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/llm/LLMDialect.h.inc"

#endif // HETC_DIALECTS_LLM_LLMDIALECT_H
