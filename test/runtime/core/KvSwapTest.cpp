// The KV cache's tiers on their own: blocks stored in host memory up to its
// budget, then in the disk file, come back as they went (exact) or within
// half a step of their row's scale (int8), and a full tier is an error that
// says so.
#include "runtime/core/KvSwap.h"
#include "runtime/format/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

using hetrt::core::KvBlockRows;
using hetrt::core::KvSwapSpace;
using hetrt::core::KvTierFormat;

/// A block of `rows` rows of 16 f32 values of varied magnitude.
std::vector<std::byte> randomBlock(std::mt19937 &random, size_t rows) {
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> values(rows * 16);
  for (float &value : values)
    value = normal(random);
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(KvSwapSpace, ExactBlocksComeBackThroughHostAndDisk) {
  constexpr size_t kRows = 8;
  std::mt19937 random(7);
  KvSwapSpace tiers(kRows * 16 * 4, /*hostBlocks=*/2, /*diskBlocks=*/3,
                    testing::TempDir());
  std::vector<std::vector<std::byte>> blocks;
  std::vector<KvSwapSpace::Handle> handles;
  std::string error;
  for (int i = 0; i < 5; ++i) {
    blocks.push_back(randomBlock(random, kRows));
    std::optional<KvSwapSpace::Handle> handle =
        tiers.store(blocks.back().data(), error);
    ASSERT_TRUE(handle) << error;
    EXPECT_EQ(handle->onDisk, i >= 2);
    handles.push_back(*handle);
  }
  EXPECT_EQ(tiers.room(), 0);
  EXPECT_EQ(tiers.stats().hostBytes, 2 * int64_t(kRows) * 16 * 4);
  EXPECT_EQ(tiers.stats().diskBytes, 3 * int64_t(kRows) * 16 * 4);
  EXPECT_FALSE(tiers.store(blocks[0].data(), error));
  EXPECT_NE(error.find("the KV cache's tiers are full"), std::string::npos)
      << error;
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<std::byte> back(blocks[i].size());
    ASSERT_TRUE(tiers.load(handles[i], back.data(), error)) << error;
    EXPECT_EQ(back, blocks[i]) << i;
  }
  EXPECT_EQ(tiers.room(), 5);
  EXPECT_EQ(tiers.stats().hostBytes, 0);
  EXPECT_EQ(tiers.stats().diskBytes, 0);
  EXPECT_EQ(tiers.stats().fromDisk, 3);
}

TEST(KvSwapSpace, Int8BlocksComeBackWithinHalfAStepOfTheirRowScale) {
  constexpr size_t kRows = 8;
  std::mt19937 random(11);
  for (KvBlockRows rows : {KvBlockRows{16, 4}, KvBlockRows{16, 2},
                           KvBlockRows{16, 2, /*bfloat=*/true}}) {
    size_t elementBytes = rows.elementBytes;
    SCOPED_TRACE(elementBytes == 4 ? "f32" : rows.bfloat ? "bf16" : "f16");
    // A 16-bit element as the cache keeps it, and back.
    auto narrow = [&](float value) {
      return rows.bfloat ? hetrt::format::fp32ToBf16(value)
                         : hetrt::format::fp32ToFp16(value);
    };
    auto widen = [&](uint16_t bits) {
      return rows.bfloat ? hetrt::format::bf16ToFp32(bits)
                         : hetrt::format::fp16ToFp32(bits);
    };
    size_t blockBytes = kRows * 16 * elementBytes;
    KvSwapSpace tiers(blockBytes, /*hostBlocks=*/1, /*diskBlocks=*/1,
                      testing::TempDir(), KvTierFormat::Int8, rows);
    std::string error;
    for (int i = 0; i < 2; ++i) {
      std::vector<std::byte> f32 = randomBlock(random, kRows);
      std::vector<float> values(kRows * 16);
      std::memcpy(values.data(), f32.data(), f32.size());
      std::vector<std::byte> block(blockBytes);
      for (size_t e = 0; e < values.size(); ++e) {
        if (elementBytes == 2) {
          uint16_t half = narrow(values[e]);
          values[e] = widen(half);
          std::memcpy(block.data() + 2 * e, &half, 2);
        } else {
          std::memcpy(block.data() + 4 * e, &values[e], 4);
        }
      }
      std::optional<KvSwapSpace::Handle> handle =
          tiers.store(block.data(), error);
      ASSERT_TRUE(handle) << error;
      // int8 and a scale per row: 4 + 16 bytes a row, not 16 elements.
      EXPECT_EQ(handle->onDisk ? tiers.stats().diskBytes
                               : tiers.stats().hostBytes,
                int64_t(kRows) * 20);
      std::vector<std::byte> back(blockBytes);
      ASSERT_TRUE(tiers.load(*handle, back.data(), error)) << error;
      for (size_t r = 0; r < kRows; ++r) {
        float largest = 0;
        for (size_t e = 0; e < 16; ++e)
          largest = std::max(largest, std::fabs(values[r * 16 + e]));
        float step = largest / 127;
        for (size_t e = 0; e < 16; ++e) {
          float original = values[r * 16 + e], restored;
          if (elementBytes == 2) {
            uint16_t half;
            std::memcpy(&half, back.data() + 2 * (r * 16 + e), 2);
            restored = widen(half);
          } else {
            std::memcpy(&restored, back.data() + 4 * (r * 16 + e), 4);
          }
          // Half a step of rounding, and the 16-bit type's own rounding of
          // the result (8 bits of mantissa in bf16, 11 in f16).
          float bound =
              step / 2 + (elementBytes == 4 ? 1e-6f
                          : rows.bfloat
                              ? std::fabs(original) / 128 + step / 128 + 1e-6f
                              : std::fabs(original) / 1024 + 1e-3f);
          EXPECT_LE(std::fabs(restored - original), bound)
              << "row " << r << " element " << e;
        }
      }
      // Keep the first in host memory so the second goes to disk.
      if (i == 0)
        ASSERT_TRUE(tiers.store(block.data(), error)) << error;
    }
  }
}

} // namespace
