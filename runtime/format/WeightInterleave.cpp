#include "runtime/format/WeightInterleave.h"

#include <cstring>
#include <vector>

namespace hetrt::format {

namespace {

/// Quant bytes each 32-bit lane takes per run.
constexpr int64_t kLaneBytes = 4;

/// Where byte `byte` of a block of row `row` (within its group) lies among
/// the interleaved bytes of that block of the group (WeightLayout.h).
int64_t q4_0Offset(int64_t row, int64_t byte) {
  if (byte < 2)
    return 2 * row + byte;
  int64_t quant = byte - 2;
  return 2 * kInterleavedRows + (quant / kLaneBytes) * 64 +
         row * kLaneBytes + quant % kLaneBytes;
}

int64_t q4_kOffset(int64_t row, int64_t byte) {
  if (byte < 4) // d, then dmin: 16 of each
    return (byte / 2) * 32 + 2 * row + byte % 2;
  if (byte < 16) // scale byte j of every row together
    return 64 + (byte - 4) * kInterleavedRows + row;
  int64_t quant = byte - 16;
  int64_t pair = quant / 32, run = (quant % 32) / kLaneBytes;
  return 256 + pair * 512 + run * 64 + row * kLaneBytes + quant % kLaneBytes;
}

struct Layout {
  int64_t blockBytes;
  int64_t (*offset)(int64_t row, int64_t byte);
};

Layout layoutOf(BlockFormat format) {
  return format == BlockFormat::Q4_K ? Layout{144, q4_kOffset}
                                     : Layout{18, q4_0Offset};
}

/// Moves every byte of each group of rows between the file's layout and the
/// interleaved one, through a copy of the group.
template <bool Interleave>
void permuteGroups(BlockFormat format, uint8_t *bytes, int64_t rows,
                   int64_t rowBytes) {
  Layout layout = layoutOf(format);
  int64_t groupBytes = kInterleavedRows * rowBytes;
  int64_t blocks = rowBytes / layout.blockBytes;
  int64_t groupBlockBytes = kInterleavedRows * layout.blockBytes;
  // The permutation of one block of a group, computed once.
  std::vector<int64_t> target(static_cast<size_t>(groupBlockBytes));
  for (int64_t row = 0; row < kInterleavedRows; ++row)
    for (int64_t byte = 0; byte < layout.blockBytes; ++byte)
      target[static_cast<size_t>(row * layout.blockBytes + byte)] =
          layout.offset(row, byte);
  std::vector<uint8_t> group(static_cast<size_t>(groupBytes));
  for (int64_t first = 0; first < rows; first += kInterleavedRows) {
    uint8_t *data = bytes + first * rowBytes;
    std::memcpy(group.data(), data, static_cast<size_t>(groupBytes));
    for (int64_t row = 0; row < kInterleavedRows; ++row)
      for (int64_t block = 0; block < blocks; ++block)
        for (int64_t byte = 0; byte < layout.blockBytes; ++byte) {
          int64_t plain = row * rowBytes + block * layout.blockBytes + byte;
          int64_t mixed =
              block * groupBlockBytes +
              target[static_cast<size_t>(row * layout.blockBytes + byte)];
          if (Interleave)
            data[mixed] = group[static_cast<size_t>(plain)];
          else
            data[plain] = group[static_cast<size_t>(mixed)];
        }
  }
}

} // namespace

bool checkInterleavable(WeightLayoutKind kind, BlockFormat format,
                        int64_t rows, int64_t rowBytes, std::string &error) {
  if (kind != WeightLayoutKind::InterleavedRows16) {
    error = "layout kind " + std::to_string(static_cast<int64_t>(kind)) +
            " is unknown to this runtime";
    return false;
  }
  if (format != BlockFormat::Q4_0 && format != BlockFormat::Q4_K) {
    error = "the interleaved layout holds Q4_0 and Q4_K rows, not format " +
            std::to_string(static_cast<uint32_t>(format));
    return false;
  }
  int64_t blockBytes = layoutOf(format).blockBytes;
  if (rows <= 0 || rows % kInterleavedRows != 0 || rowBytes <= 0 ||
      rowBytes % blockBytes != 0) {
    error = "interleaved rows come in groups of " +
            std::to_string(kInterleavedRows) + " whole rows of " +
            std::to_string(blockBytes) + "-byte blocks, not " +
            std::to_string(rows) + " rows of " + std::to_string(rowBytes) +
            " bytes";
    return false;
  }
  return true;
}

void interleaveRows(WeightLayoutKind, BlockFormat format, uint8_t *bytes,
                    int64_t rows, int64_t rowBytes) {
  permuteGroups<true>(format, bytes, rows, rowBytes);
}

void deinterleaveRows(WeightLayoutKind, BlockFormat format, uint8_t *bytes,
                      int64_t rows, int64_t rowBytes) {
  permuteGroups<false>(format, bytes, rows, rowBytes);
}

} // namespace hetrt::format
