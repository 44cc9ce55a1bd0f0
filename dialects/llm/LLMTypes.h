// Types and enums of the llm dialect.
#ifndef HETC_DIALECTS_LLM_LLMTYPES_H
#define HETC_DIALECTS_LLM_LLMTYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"

#include "abi/BlockFormats.h"

#include <optional>

#include "dialects/llm/LLMEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/llm/LLMTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/llm/LLMAttrs.h.inc"

namespace hetc::llm {
/// The module attribute holding the model's #llm.model.
inline constexpr llvm::StringLiteral kModelAttrName = "llm.model";
/// On a linalg op that computes `x · wᵀ` (convert-llm-to-linalg writes it):
/// the weight's storage type, so a target can replace the portable form with
/// its own blocking for that format.
inline constexpr llvm::StringLiteral kMatmulWeightAttrName =
    "llm.matmul_weight";
/// On the two products of a tiled attention's step (convert-llm-to-linalg
/// writes them): the scores `q · kᵀ` of a query tile and a key block, and the
/// weighted sum `p · v` added into the tile's accumulator, so a target can
/// replace the portable generics with register-blocked ones.
inline constexpr llvm::StringLiteral kAttentionScoresAttrName =
    "llm.attention_scores";
inline constexpr llvm::StringLiteral kAttentionValuesAttrName =
    "llm.attention_values";
/// The function attribute of an entry point whose tokens belong to different
/// sequences, one token each (a batch of decode steps): its KV caches can
/// only be paged, with a block table per token.
inline constexpr llvm::StringLiteral kSequencePerTokenAttrName =
    "llm.sequence_per_token";

/// The storage format of a weight tensor's element type (f32, f16, bf16 or a
/// block-quantized !llm.quant), or nullopt for any other type.
std::optional<hetrt::format::BlockFormat> weightStorageFormat(mlir::Type element);
} // namespace hetc::llm

#endif // HETC_DIALECTS_LLM_LLMTYPES_H
