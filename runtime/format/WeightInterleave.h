// Rewriting a quantized weight into the interleaved layout generated CPU code
// may read it in (abi/WeightLayout.h), and back.
#ifndef HETRT_FORMAT_WEIGHTINTERLEAVE_H
#define HETRT_FORMAT_WEIGHTINTERLEAVE_H

#include "abi/BlockFormats.h"
#include "abi/WeightLayout.h"

#include <cstdint>
#include <string>

namespace hetrt::format {

/// Whether `kind` is a layout this runtime writes for `format` rows of
/// `rowBytes` bytes, `rows` of them; if not, `error` says why.
bool checkInterleavable(WeightLayoutKind kind, BlockFormat format,
                        int64_t rows, int64_t rowBytes, std::string &error);

/// Rewrites `rows` rows of `format` of `rowBytes` bytes at `bytes` in place
/// from the model file's layout into `kind` (checked by checkInterleavable).
void interleaveRows(WeightLayoutKind kind, BlockFormat format, uint8_t *bytes,
                    int64_t rows, int64_t rowBytes);

/// The inverse of interleaveRows.
void deinterleaveRows(WeightLayoutKind kind, BlockFormat format,
                      uint8_t *bytes, int64_t rows, int64_t rowBytes);

} // namespace hetrt::format

#endif // HETRT_FORMAT_WEIGHTINTERLEAVE_H
