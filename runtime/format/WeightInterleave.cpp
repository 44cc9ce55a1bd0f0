#include "runtime/format/WeightInterleave.h"

#include <cstring>
#include <vector>

namespace hetrt::format {

namespace {

constexpr int64_t kQ4_0Bytes = 18;
constexpr int64_t kQ4_0ScaleBytes = 2;
/// Quant bytes of a Q4_0 block each 32-bit lane takes per run.
constexpr int64_t kLaneBytes = 4;

/// Where byte `byte` of block `block` of row `row` (within its group) lies in
/// the group's interleaved bytes.
int64_t interleavedOffset(int64_t block, int64_t row, int64_t byte) {
  int64_t groupBlock = block * kInterleavedRows * kQ4_0Bytes;
  if (byte < kQ4_0ScaleBytes)
    return groupBlock + row * kQ4_0ScaleBytes + byte;
  int64_t quant = byte - kQ4_0ScaleBytes;
  int64_t run = quant / kLaneBytes;
  return groupBlock + kInterleavedRows * kQ4_0ScaleBytes +
         run * kInterleavedRows * kLaneBytes + row * kLaneBytes +
         quant % kLaneBytes;
}

/// Moves every byte of each group of rows between the file's layout and the
/// interleaved one, through a copy of the group.
template <bool Interleave>
void permuteGroups(uint8_t *bytes, int64_t rows, int64_t rowBytes) {
  int64_t groupBytes = kInterleavedRows * rowBytes;
  int64_t blocks = rowBytes / kQ4_0Bytes;
  std::vector<uint8_t> group(static_cast<size_t>(groupBytes));
  for (int64_t first = 0; first < rows; first += kInterleavedRows) {
    uint8_t *data = bytes + first * rowBytes;
    std::memcpy(group.data(), data, static_cast<size_t>(groupBytes));
    for (int64_t row = 0; row < kInterleavedRows; ++row)
      for (int64_t block = 0; block < blocks; ++block)
        for (int64_t byte = 0; byte < kQ4_0Bytes; ++byte) {
          int64_t plain = row * rowBytes + block * kQ4_0Bytes + byte;
          int64_t mixed = interleavedOffset(block, row, byte);
          if (Interleave)
            data[mixed] = group[plain];
          else
            data[plain] = group[mixed];
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
  if (format != BlockFormat::Q4_0) {
    error = "the interleaved layout holds Q4_0 rows, not format " +
            std::to_string(static_cast<uint32_t>(format));
    return false;
  }
  if (rows <= 0 || rows % kInterleavedRows != 0 || rowBytes <= 0 ||
      rowBytes % kQ4_0Bytes != 0) {
    error = "interleaved Q4_0 rows come in groups of " +
            std::to_string(kInterleavedRows) + " whole rows of 18-byte "
            "blocks, not " + std::to_string(rows) + " rows of " +
            std::to_string(rowBytes) + " bytes";
    return false;
  }
  return true;
}

void interleaveRows(WeightLayoutKind, uint8_t *bytes, int64_t rows,
                    int64_t rowBytes) {
  permuteGroups<true>(bytes, rows, rowBytes);
}

void deinterleaveRows(WeightLayoutKind, uint8_t *bytes, int64_t rows,
                      int64_t rowBytes) {
  permuteGroups<false>(bytes, rows, rowBytes);
}

} // namespace hetrt::format
