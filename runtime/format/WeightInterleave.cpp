#include "runtime/format/WeightInterleave.h"

#include <cstring>
#include <vector>

namespace hetrt::format {

namespace {

/// Quant bytes each 32-bit lane takes per run.
constexpr int64_t kLaneBytes = 4;

/// Where byte `byte` of a block of row `row` (within its group) lies among
/// the interleaved bytes of that block of the group (WeightLayout.h).
/// Q4_0 and Q8_0: an f16 scale, then quant bytes 4 per lane and run.
int64_t scaleThenQuantsOffset(int64_t row, int64_t byte) {
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

/// Q6_K is not a byte permutation: each 32-element quarter of a group gets
/// its codes' low nibbles and high bits of its own (WeightLayout.h), so a
/// kernel's quarters share no bytes.
constexpr int64_t kQ6kBytes = 210, kQ6kGroupQuarter = 416;

/// The 6-bit code of element `e` of a Q6_K block in ggml's layout.
int q6kCode(const uint8_t *block, int64_t e) {
  int64_t half = e / 128, t = (e % 128) / 32, l = e % 32;
  uint8_t low = block[64 * half + 32 * (t % 2) + l];
  low = t < 2 ? (low & 15) : (low >> 4);
  int high = (block[128 + 32 * half + l] >> (2 * t)) & 3;
  return low | (high << 4);
}

void setQ6kCode(uint8_t *block, int64_t e, int code) {
  int64_t half = e / 128, t = (e % 128) / 32, l = e % 32;
  uint8_t &low = block[64 * half + 32 * (t % 2) + l];
  low = t < 2 ? static_cast<uint8_t>((low & 0xF0) | (code & 15))
              : static_cast<uint8_t>((low & 0x0F) | ((code & 15) << 4));
  uint8_t &high = block[128 + 32 * half + l];
  high = static_cast<uint8_t>((high & ~(3 << (2 * t))) |
                              (((code >> 4) & 3) << (2 * t)));
}

/// Converts the super-blocks of a group of 16 Q6_K rows (`plain`, the file's
/// layout, rowBytes apart) to or from the interleaved layout (`mixed`).
template <bool Interleave>
void convertQ6kGroup(uint8_t *plain, uint8_t *mixed, int64_t rowBytes) {
  int64_t blocks = rowBytes / kQ6kBytes;
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t *out = mixed + b * kInterleavedRows * kQ6kBytes;
    for (int64_t r = 0; r < kInterleavedRows; ++r) {
      uint8_t *block = plain + r * rowBytes + b * kQ6kBytes;
      auto move = [&](uint8_t &interleaved, uint8_t &original) {
        if (Interleave)
          interleaved = original;
        else
          original = interleaved;
      };
      move(out[2 * r], block[208]);
      move(out[2 * r + 1], block[209]);
      for (int64_t g = 0; g < 8; ++g) {
        uint8_t *quarter = out + 32 + g * kQ6kGroupQuarter;
        for (int64_t part = 0; part < 2; ++part)
          move(quarter[16 * part + r], block[192 + 2 * g + part]);
        for (int64_t k = 0; k < 32; ++k) {
          int64_t e = 32 * g + k;
          // Element k: nibble of run (k mod 16) / 4, low for k < 16; its
          // high bits in vector k / 16 at bits 2((k mod 16) / 4).
          int64_t run = (k % 16) / 4, lane = 4 * r + k % 4;
          uint8_t &nibbles = quarter[32 + 64 * run + lane];
          uint8_t &highs = quarter[288 + 64 * (k / 16) + lane];
          int shift = static_cast<int>(2 * run);
          if (Interleave) {
            int code = q6kCode(block, e);
            nibbles = k < 16 ? static_cast<uint8_t>((nibbles & 0xF0) |
                                                    (code & 15))
                             : static_cast<uint8_t>((nibbles & 0x0F) |
                                                    ((code & 15) << 4));
            highs = static_cast<uint8_t>((highs & ~(3 << shift)) |
                                         ((code >> 4) << shift));
          } else {
            int low = k < 16 ? nibbles & 15 : nibbles >> 4;
            setQ6kCode(block, e, low | (((highs >> shift) & 3) << 4));
          }
        }
      }
    }
  }
}

struct Layout {
  int64_t blockBytes;
  int64_t (*offset)(int64_t row, int64_t byte);
};

Layout layoutOf(BlockFormat format) {
  switch (format) {
  case BlockFormat::Q4_K:
    return {144, q4_kOffset};
  case BlockFormat::Q8_0:
    return {34, scaleThenQuantsOffset};
  default:
    return {18, scaleThenQuantsOffset};
  }
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
  if (format != BlockFormat::Q4_0 && format != BlockFormat::Q8_0 &&
      format != BlockFormat::Q4_K && format != BlockFormat::Q6_K) {
    error = "the interleaved layout holds Q4_0, Q8_0, Q4_K and Q6_K rows, "
            "not format " +
            std::to_string(static_cast<uint32_t>(format));
    return false;
  }
  int64_t blockBytes =
      format == BlockFormat::Q6_K ? kQ6kBytes : layoutOf(format).blockBytes;
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

namespace {

template <bool Interleave>
void convertRows(BlockFormat format, uint8_t *bytes, int64_t rows,
                 int64_t rowBytes) {
  if (format != BlockFormat::Q6_K) {
    permuteGroups<Interleave>(format, bytes, rows, rowBytes);
    return;
  }
  int64_t groupBytes = kInterleavedRows * rowBytes;
  std::vector<uint8_t> copy(static_cast<size_t>(groupBytes));
  for (int64_t first = 0; first < rows; first += kInterleavedRows) {
    uint8_t *data = bytes + first * rowBytes;
    std::memcpy(copy.data(), data, static_cast<size_t>(groupBytes));
    if (Interleave) {
      std::memset(data, 0, static_cast<size_t>(groupBytes));
      convertQ6kGroup<true>(copy.data(), data, rowBytes);
    } else {
      std::memset(data, 0, static_cast<size_t>(groupBytes));
      convertQ6kGroup<false>(data, copy.data(), rowBytes);
    }
  }
}

} // namespace

void interleaveRows(WeightLayoutKind, BlockFormat format, uint8_t *bytes,
                    int64_t rows, int64_t rowBytes) {
  convertRows<true>(format, bytes, rows, rowBytes);
}

void deinterleaveRows(WeightLayoutKind, BlockFormat format, uint8_t *bytes,
                      int64_t rows, int64_t rowBytes) {
  convertRows<false>(format, bytes, rows, rowBytes);
}

} // namespace hetrt::format
