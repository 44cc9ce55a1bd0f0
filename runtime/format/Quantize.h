// Quantizers and dequantizers of the ggml weight formats (F32, F16, BF16, Q8_0,
// Q4_0, Q4_K, Q6_K), byte-identical to ggml's reference C code, plus the scalar
// half and bfloat16 conversions they use.
#ifndef HETRT_FORMAT_QUANTIZE_H
#define HETRT_FORMAT_QUANTIZE_H

#include "abi/BlockFormats.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace hetrt::format {

/// The float an IEEE binary16 bit pattern stands for. Exact for every finite
/// value and infinity (subnormals included); a NaN keeps its sign and payload
/// and comes back quiet, as ggml's GGML_FP16_TO_FP32 and F16C give it.
float fp16ToFp32(uint16_t bits);

/// `value` rounded to the nearest binary16, ties to even, as ggml's
/// GGML_FP32_TO_FP16: results below the smallest subnormal round to (signed)
/// zero, magnitudes from 65520 up become infinity, and every NaN becomes the
/// quiet NaN 0x7E00 with the sign of `value` (payloads are dropped, unlike
/// F16C).
uint16_t fp32ToFp16(float value);

/// The float a bfloat16 bit pattern stands for (its upper 16 bits); exact.
float bf16ToFp32(uint16_t bits);

/// `value` rounded to the nearest bfloat16, ties to even, as ggml's
/// ggml_compute_fp32_to_bf16: subnormals are kept, overflow gives infinity, and
/// a NaN is truncated to its upper half with the quiet bit forced on.
uint16_t fp32ToBf16(float value);

/// Encodes `count` floats from `source` as `format` into `destination`, which
/// must hold storageBytes(format, count) bytes and not overlap `source`. Each
/// block is computed exactly as ggml's quantize_row_*_ref does (F16 and BF16 by
/// the conversions above, F32 copied), so the bytes equal llama.cpp's for the
/// same floats. For NaN or infinite inputs ggml's code casts out-of-range
/// floats to int8 (undefined in C); here those casts give what x86-64 computes,
/// which matches ggml built for x86-64 but not necessarily elsewhere. Returns
/// false, writing nothing, when `count` is negative or not a whole number of
/// blocks, or `format` is not a BlockFormat. Reentrant; no allocation.
bool quantizeRow(BlockFormat format, const float *source, int64_t count,
                 uint8_t *destination);

/// Decodes `count` values of `format` from `source`, which holds
/// storageBytes(format, count) bytes, into `destination` as floats, rounding
/// each intermediate product to float in the order ggml's dequantize_row_*
/// does, so the values are bit-identical to ggml's. Returns false, writing
/// nothing, when `count` is negative or not a whole number of blocks, or
/// `format` is not a BlockFormat. Reentrant; no allocation.
bool dequantizeRow(BlockFormat format, const uint8_t *source, int64_t count,
                   float *destination);

/// A row-major [rows x columns] float matrix encoded row by row as `format`:
/// row r occupies bytes [r * rowBytes, (r + 1) * rowBytes) with rowBytes =
/// storageBytes(format, columns), which is how GGUF stores a 2-D tensor whose
/// innermost dimension is `columns`. nullopt when `rows` is negative or
/// `columns` is not a whole number of blocks (or the format is unknown).
std::optional<std::vector<uint8_t>> quantizeMatrix(BlockFormat format,
                                                   const float *source,
                                                   int64_t rows,
                                                   int64_t columns);

} // namespace hetrt::format

#endif // HETRT_FORMAT_QUANTIZE_H
