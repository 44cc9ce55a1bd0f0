// The llm op interfaces and the values they exchange with the cost model.
#ifndef HETC_DIALECTS_LLM_LLMINTERFACES_H
#define HETC_DIALECTS_LLM_LLMINTERFACES_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace hetc::llm {

/// The situation an op's work is measured in.
struct WorkContext {
  /// The size given to every dynamic dimension (the tokens processed at once:
  /// the prompt length in prefill, the batch in decode).
  int64_t numTokens = 1;
  /// Positions in the KV cache after this step's tokens are appended (the
  /// position of the last token plus one).
  int64_t contextLength = 1;
};

/// What an op costs: operations and bytes moved at its element types.
struct OpWork {
  /// Floating-point (or integer multiply-accumulate) operations; an FMA is 2.
  int64_t flops = 0;
  /// All bytes read, weights and KV cache included.
  int64_t bytesRead = 0;
  /// The part of `bytesRead` that is model weights (stored bytes).
  int64_t weightBytesRead = 0;
  /// Bytes written (results and KV-cache entries).
  int64_t bytesWritten = 0;

  bool operator==(const OpWork &other) const {
    return flops == other.flops && bytesRead == other.bytesRead &&
           weightBytesRead == other.weightBytesRead &&
           bytesWritten == other.bytesWritten;
  }
};

} // namespace hetc::llm

#include "dialects/llm/LLMInterfaces.h.inc"

#endif // HETC_DIALECTS_LLM_LLMINTERFACES_H
