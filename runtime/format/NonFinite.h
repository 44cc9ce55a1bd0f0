// Finding non-finite values (NaN, infinity) in a model's weights, in the
// order the forward pass reads them, to name the first layer that produces
// non-finite activations when a model's logits are not finite.
#ifndef HETRT_FORMAT_NONFINITE_H
#define HETRT_FORMAT_NONFINITE_H

#include "runtime/format/Gguf.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hetrt::format {

struct NonFiniteTensor {
  std::string name;
  /// The decoder layer the tensor belongs to; -1 before the first layer
  /// (the token embedding) and numLayers-or-more after the last (the output).
  int64_t layer = -1;
  /// Stored values that are not finite: elements of float tensors, scales of
  /// block-quantized ones.
  uint64_t count = 0;
};

/// Counts the non-finite stored values of `tensor`.
uint64_t countNonFinite(const GgufFile &file, const GgufTensorInfo &tensor);

/// The first tensor, in forward order (token embedding, then layer by layer,
/// then the output norm and projection), holding a non-finite value; nullopt
/// when every weight is finite.
std::optional<NonFiniteTensor> firstNonFiniteTensor(const GgufFile &file);

/// True when all `count` values are finite.
bool allFinite(const float *values, int64_t count);

} // namespace hetrt::format

#endif // HETRT_FORMAT_NONFINITE_H
