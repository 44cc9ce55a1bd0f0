// Storage facts of the weight formats hetc reads (GGUF/ggml block quantization),
// shared by the runtime and the compiler so both agree on every byte count.
#ifndef HETC_ABI_BLOCKFORMATS_H
#define HETC_ABI_BLOCKFORMATS_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace hetrt::format {

/// A weight storage format. Values are the ggml type ids used in GGUF files, so a
/// tensor-info type field converts directly.
enum class BlockFormat : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  BF16 = 30,
};

/// How a format lays out elements: `blockSize` consecutive elements of a row are
/// stored together in `bytesPerBlock` bytes (1 element per block for plain floats).
struct BlockLayout {
  std::string_view name;
  int64_t blockSize;
  int64_t bytesPerBlock;
};

/// The layout of `format`. The block sizes are ggml's: Q8_0 = f16 scale + 32 int8;
/// Q4_0 = f16 scale + 32 nibbles; per 256 (k-quants): Q2_K = 16 scale/min bytes + 64
/// bytes of 2-bit levels + 2 f16; Q3_K = 32 high-bit bytes + 64 bytes of 2-bit levels +
/// 12 scale bytes + f16; Q4_K = 2 f16 + 12 scale bytes + 128 nibble bytes; Q5_K = 2 f16
/// + 12 scale bytes + 32 high-bit bytes + 128 nibble bytes; Q6_K = 128 low-nibble bytes
/// + 64 high-bit bytes + 16 int8 scales + f16.
constexpr BlockLayout blockLayout(BlockFormat format) {
  switch (format) {
  case BlockFormat::F32:
    return {"f32", 1, 4};
  case BlockFormat::F16:
    return {"f16", 1, 2};
  case BlockFormat::BF16:
    return {"bf16", 1, 2};
  case BlockFormat::Q8_0:
    return {"q8_0", 32, 34};
  case BlockFormat::Q4_0:
    return {"q4_0", 32, 18};
  case BlockFormat::Q2_K:
    return {"q2_k", 256, 84};
  case BlockFormat::Q3_K:
    return {"q3_k", 256, 110};
  case BlockFormat::Q4_K:
    return {"q4_k", 256, 144};
  case BlockFormat::Q5_K:
    return {"q5_k", 256, 176};
  case BlockFormat::Q6_K:
    return {"q6_k", 256, 210};
  }
  return {"invalid", 0, 0};
}

/// The format with ggml type id `typeId`, or nullopt for ids hetc does not support.
constexpr std::optional<BlockFormat> blockFormatFromTypeId(uint32_t typeId) {
  switch (typeId) {
  case 0:
  case 1:
  case 2:
  case 8:
  case 10:
  case 11:
  case 12:
  case 13:
  case 14:
  case 30:
    return static_cast<BlockFormat>(typeId);
  default:
    return std::nullopt;
  }
}

/// Bytes that `numElements` elements of `format` occupy, or nullopt when the count
/// is not a whole number of blocks (such a row cannot be stored in the format).
constexpr std::optional<int64_t> storageBytes(BlockFormat format,
                                              int64_t numElements) {
  BlockLayout layout = blockLayout(format);
  if (layout.blockSize <= 0 || numElements < 0 ||
      numElements % layout.blockSize != 0)
    return std::nullopt;
  return numElements / layout.blockSize * layout.bytesPerBlock;
}

} // namespace hetrt::format

#endif // HETC_ABI_BLOCKFORMATS_H
