#include "runtime/format/WeightInterleave.h"

#include <algorithm>
#include <cstring>
#include <thread>
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

/// Sets the 6-bit code of element `e` of a Q6_K block in ggml's layout.
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
      uint8_t codes[256];
      if (Interleave)
        // ggml's dequantize_row_q6_K order, a form the compiler vectorizes.
        for (int64_t half = 0; half < 2; ++half)
          for (int64_t l = 0; l < 32; ++l) {
            int low = block[64 * half + l], next = block[64 * half + 32 + l];
            int high = block[128 + 32 * half + l];
            uint8_t *c = codes + 128 * half + l;
            c[0] = static_cast<uint8_t>((low & 15) | ((high & 3) << 4));
            c[32] = static_cast<uint8_t>((next & 15) | (((high >> 2) & 3) << 4));
            c[64] = static_cast<uint8_t>((low >> 4) | (((high >> 4) & 3) << 4));
            c[96] = static_cast<uint8_t>((next >> 4) | (((high >> 6) & 3) << 4));
          }
      for (int64_t g = 0; g < 8; ++g) {
        uint8_t *quarter = out + 32 + g * kQ6kGroupQuarter;
        for (int64_t part = 0; part < 2; ++part)
          move(quarter[16 * part + r], block[192 + 2 * g + part]);
        if (Interleave) {
          const uint8_t *c = codes + 32 * g;
          for (int64_t i = 0; i < 4; ++i) {
            int64_t lane = 4 * r + i;
            uint8_t highs[2] = {0, 0};
            for (int64_t v = 0; v < 4; ++v) {
              quarter[32 + 64 * v + lane] = static_cast<uint8_t>(
                  (c[4 * v + i] & 15) | ((c[16 + 4 * v + i] & 15) << 4));
              for (int64_t h = 0; h < 2; ++h)
                highs[h] = static_cast<uint8_t>(
                    highs[h] | ((c[16 * h + 4 * v + i] >> 4) << (2 * v)));
            }
            quarter[288 + lane] = highs[0];
            quarter[352 + lane] = highs[1];
          }
          continue;
        }
        for (int64_t k = 0; k < 32; ++k) {
          // Element k: nibble of run (k mod 16) / 4, low for k < 16; its
          // high bits in vector k / 16 at bits 2((k mod 16) / 4).
          int64_t run = (k % 16) / 4, lane = 4 * r + k % 4;
          int nibbles = quarter[32 + 64 * run + lane];
          int highs = quarter[288 + 64 * (k / 16) + lane];
          int low = k < 16 ? nibbles & 15 : nibbles >> 4;
          setQ6kCode(block, 32 * g + k,
                     low | (((highs >> (2 * run)) & 3) << 4));
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

/// A run of bytes of a block row that stays contiguous in the layout.
struct Segment {
  int64_t source, target, length;
};

/// Moves each group of rows in [firstGroup, endGroup) between the file's
/// layout and the interleaved one, segment by segment through a copy of
/// the group.
template <bool Interleave>
void permuteGroups(BlockFormat format, uint8_t *bytes, int64_t firstGroup,
                   int64_t endGroup, int64_t rowBytes) {
  Layout layout = layoutOf(format);
  int64_t groupBytes = kInterleavedRows * rowBytes;
  int64_t blocks = rowBytes / layout.blockBytes;
  int64_t groupBlockBytes = kInterleavedRows * layout.blockBytes;
  // The permutation of one block of a group as runs of consecutive bytes
  // (a lane's 4 quant bytes, a scale), computed once.
  std::vector<Segment> segments;
  for (int64_t row = 0; row < kInterleavedRows; ++row)
    for (int64_t byte = 0; byte < layout.blockBytes; ++byte) {
      int64_t source = row * rowBytes + byte;
      int64_t target = layout.offset(row, byte);
      if (!segments.empty() &&
          segments.back().source + segments.back().length == source &&
          segments.back().target + segments.back().length == target)
        ++segments.back().length;
      else
        segments.push_back({source, target, 1});
    }
  std::vector<uint8_t> group(static_cast<size_t>(groupBytes));
  for (int64_t g = firstGroup; g < endGroup; ++g) {
    uint8_t *data = bytes + g * groupBytes;
    std::memcpy(group.data(), data, static_cast<size_t>(groupBytes));
    for (int64_t block = 0; block < blocks; ++block) {
      int64_t plainBlock = block * layout.blockBytes;
      int64_t mixedBlock = block * groupBlockBytes;
      for (const Segment &segment : segments) {
        size_t length = static_cast<size_t>(segment.length);
        if (Interleave)
          std::memcpy(data + mixedBlock + segment.target,
                      group.data() + plainBlock + segment.source, length);
        else
          std::memcpy(data + plainBlock + segment.source,
                      group.data() + mixedBlock + segment.target, length);
      }
    }
  }
}

} // namespace

bool checkInterleavable(WeightLayoutKind kind, BlockFormat format,
                        int64_t rows, int64_t rowBytes, std::string &error) {
  if (kind != WeightLayoutKind::InterleavedRows16 &&
      kind != WeightLayoutKind::InterleavedRows16Copy) {
    error = "layout kind " + std::to_string(static_cast<int64_t>(kind)) +
            " is unknown to this runtime";
    return false;
  }
  if (format != BlockFormat::Q4_0 && format != BlockFormat::Q8_0 &&
      format != BlockFormat::Q4_K && format != BlockFormat::Q6_K &&
      format != BlockFormat::F32 && format != BlockFormat::F16 &&
      format != BlockFormat::BF16) {
    error = "the interleaved layout holds F32, F16, BF16, Q4_0, Q8_0, Q4_K "
            "and Q6_K rows, not format " +
            std::to_string(static_cast<uint32_t>(format));
    return false;
  }
  int64_t blockBytes = format == BlockFormat::Q6_K   ? kQ6kBytes
                       : format == BlockFormat::F32 ? 4
                       : format == BlockFormat::F16 ||
                               format == BlockFormat::BF16
                           ? 2
                                                    : layoutOf(format).blockBytes;
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

/// F32, F16 and BF16 groups element-major: element k of the group's 16 rows
/// together (a 16 × K transpose of `Element`s).
template <bool Interleave, typename Element>
void transposeGroups(uint8_t *bytes, int64_t firstGroup, int64_t endGroup,
                     int64_t rowBytes) {
  int64_t columns = rowBytes / static_cast<int64_t>(sizeof(Element));
  int64_t groupElements = kInterleavedRows * columns;
  std::vector<Element> copy(static_cast<size_t>(groupElements));
  for (int64_t g = firstGroup; g < endGroup; ++g) {
    auto *data = reinterpret_cast<Element *>(bytes) + g * groupElements;
    std::memcpy(copy.data(), data, static_cast<size_t>(groupElements) *
                                       sizeof(Element));
    for (int64_t k = 0; k < columns; ++k)
      for (int64_t r = 0; r < kInterleavedRows; ++r) {
        if (Interleave)
          data[k * kInterleavedRows + r] = copy[r * columns + k];
        else
          data[r * columns + k] = copy[k * kInterleavedRows + r];
      }
  }
}

template <bool Interleave>
void convertGroups(BlockFormat format, uint8_t *bytes, int64_t firstGroup,
                   int64_t endGroup, int64_t rowBytes) {
  if (format == BlockFormat::F32) {
    transposeGroups<Interleave, uint32_t>(bytes, firstGroup, endGroup,
                                          rowBytes);
    return;
  }
  if (format == BlockFormat::F16 || format == BlockFormat::BF16) {
    transposeGroups<Interleave, uint16_t>(bytes, firstGroup, endGroup,
                                          rowBytes);
    return;
  }
  if (format != BlockFormat::Q6_K) {
    permuteGroups<Interleave>(format, bytes, firstGroup, endGroup, rowBytes);
    return;
  }
  int64_t groupBytes = kInterleavedRows * rowBytes;
  std::vector<uint8_t> copy(static_cast<size_t>(groupBytes));
  for (int64_t g = firstGroup; g < endGroup; ++g) {
    uint8_t *data = bytes + g * groupBytes;
    std::memcpy(copy.data(), data, static_cast<size_t>(groupBytes));
    std::memset(data, 0, static_cast<size_t>(groupBytes));
    if (Interleave)
      convertQ6kGroup<true>(copy.data(), data, rowBytes);
    else
      convertQ6kGroup<false>(data, copy.data(), rowBytes);
  }
}

/// The groups split among the machine's cores: a model's weights are
/// rewritten when it loads, and that time is the user's.
template <bool Interleave>
void convertRows(BlockFormat format, uint8_t *bytes, int64_t rows,
                 int64_t rowBytes) {
  int64_t groups = rows / kInterleavedRows;
  int64_t workers = std::min<int64_t>(
      std::max(1u, std::thread::hardware_concurrency()), groups);
  // Small tensors are not worth a thread.
  if (groups * rowBytes < (int64_t(1) << 20))
    workers = 1;
  std::vector<std::thread> threads;
  for (int64_t w = 1; w < workers; ++w)
    threads.emplace_back(convertGroups<Interleave>, format, bytes,
                         groups * w / workers, groups * (w + 1) / workers,
                         rowBytes);
  convertGroups<Interleave>(format, bytes, 0, groups / workers, rowBytes);
  for (std::thread &thread : threads)
    thread.join();
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
