// Q2_K, Q3_K and Q5_K against ggml itself: the bytes quantizeRow writes and
// the floats dequantizeRow reads back hash to what ggml's
// ggml_quantize_chunk and its dequantizers give for the same row (llama.cpp
// commit 3f545bec, the comparison build), a hand-packed block of each format
// decodes to its formula, and random rows round-trip within the error a
// 2-, 3- or 5-bit grid allows.
#include "runtime/format/Quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace hetrt::format;

namespace {

/// 512 values from a 32-bit LCG through exact float operations, so every
/// compiler and C library gives the same row; steps of scale per 16 values
/// and an outlier every 61 exercise the sub-block scales and mins.
std::vector<float> goldenRow() {
  std::vector<float> x(512);
  uint32_t state = 12345u;
  for (int i = 0; i < 512; ++i) {
    state = state * 1664525u + 1013904223u;
    float unit = static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    x[i] = unit * static_cast<float>(1 + (i / 16) % 7) +
           ((i % 61) == 0 ? 3.0f : 0.0f);
  }
  return x;
}

uint64_t fnv1a(const uint8_t *bytes, size_t size) {
  uint64_t hash = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

struct Golden {
  BlockFormat format;
  size_t bytes;
  uint64_t quantizedHash;
  uint64_t dequantizedHash;
};

std::vector<uint8_t> quantize(BlockFormat format, const std::vector<float> &x) {
  std::vector<uint8_t> bytes(static_cast<size_t>(
      *storageBytes(format, static_cast<int64_t>(x.size()))));
  EXPECT_TRUE(quantizeRow(format, x.data(), static_cast<int64_t>(x.size()),
                          bytes.data()));
  return bytes;
}

std::vector<float> dequantize(BlockFormat format,
                              const std::vector<uint8_t> &bytes, size_t count) {
  std::vector<float> values(count);
  EXPECT_TRUE(dequantizeRow(format, bytes.data(), static_cast<int64_t>(count),
                            values.data()));
  return values;
}

TEST(LowBitKQuants, BytesAndValuesEqualGgmls) {
  // Hashes printed by a program calling ggml_quantize_chunk(type, row, out,
  // 0, 1, 512, NULL) (no importance matrix: quantize_row_*_ref) and the
  // type's to_float on the result.
  const Golden goldens[] = {
      {BlockFormat::Q2_K, 168, 0x4e19d25ab06ac568ull, 0x4a73e42a395bdb84ull},
      {BlockFormat::Q3_K, 220, 0xe1d9fc8a3fcbef30ull, 0xeed049951611a778ull},
      {BlockFormat::Q5_K, 352, 0xca844c34db73e5c2ull, 0x26936bd195b17a41ull},
  };
  const std::vector<float> x = goldenRow();
  for (const Golden &golden : goldens) {
    SCOPED_TRACE(std::string(blockLayout(golden.format).name));
    std::vector<uint8_t> bytes = quantize(golden.format, x);
    ASSERT_EQ(bytes.size(), golden.bytes);
    EXPECT_EQ(fnv1a(bytes.data(), bytes.size()), golden.quantizedHash);
    std::vector<float> y = dequantize(golden.format, bytes, x.size());
    std::vector<uint8_t> raw(y.size() * 4);
    std::memcpy(raw.data(), y.data(), raw.size());
    EXPECT_EQ(fnv1a(raw.data(), raw.size()), golden.dequantizedHash);
  }
}

void storeHalf(uint8_t *at, float value) {
  uint16_t bits = fp32ToFp16(value);
  at[0] = static_cast<uint8_t>(bits);
  at[1] = static_cast<uint8_t>(bits >> 8);
}

TEST(LowBitKQuants, Q2_KBlockDecodesToItsFormula) {
  // d = 0.5, dmin = 0.25; pair j = scale j % 16 in the low nibble, min
  // (15 - j) in the high one; byte l of half n holds the levels of elements
  // 128n + l + 32t in bits 2t..2t+1, here (l + t + n) % 4.
  std::vector<uint8_t> block(84, 0);
  for (int j = 0; j < 16; ++j)
    block[j] = static_cast<uint8_t>((j % 16) | ((15 - j) << 4));
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      int byte = 0;
      for (int t = 0; t < 4; ++t)
        byte |= ((l + t + n) % 4) << (2 * t);
      block[16 + 32 * n + l] = static_cast<uint8_t>(byte);
    }
  storeHalf(&block[80], 0.5f);
  storeHalf(&block[82], 0.25f);
  std::vector<float> y = dequantize(BlockFormat::Q2_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    int n = e / 128, t = (e % 128) / 32, l = e % 32;
    int j = 8 * n + 2 * t + l / 16;
    float expected = 0.5f * static_cast<float>(j % 16) * ((l + t + n) % 4) -
                     0.25f * static_cast<float>(15 - j);
    ASSERT_EQ(y[e], expected) << e;
  }
}

TEST(LowBitKQuants, Q3_KBlockDecodesToItsFormula) {
  // d = 0.25; six-bit scale j = 2j + 1 (its low nibble in byte j % 8, high
  // two bits in byte 8 + j % 4); level = low 2 bits + 4 * third bit - 4 with
  // low bits (l + t) % 4 and the third bit set where (l + n + t) is odd.
  std::vector<uint8_t> block(110, 0);
  for (int j = 0; j < 16; ++j) {
    int scale = 2 * j + 1;
    if (j < 8)
      block[96 + j] = static_cast<uint8_t>(block[96 + j] | (scale & 0xF));
    else
      block[96 + j - 8] =
          static_cast<uint8_t>(block[96 + j - 8] | ((scale & 0xF) << 4));
    block[96 + 8 + j % 4] = static_cast<uint8_t>(
        block[96 + 8 + j % 4] | ((scale >> 4) << (2 * (j / 4))));
  }
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l)
      for (int t = 0; t < 4; ++t) {
        block[32 + 32 * n + l] = static_cast<uint8_t>(
            block[32 + 32 * n + l] | (((l + t) % 4) << (2 * t)));
        if ((l + n + t) % 2)
          block[l] = static_cast<uint8_t>(block[l] | (1 << (4 * n + t)));
      }
  storeHalf(&block[108], 0.25f);
  std::vector<float> y = dequantize(BlockFormat::Q3_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    int n = e / 128, t = (e % 128) / 32, l = e % 32;
    int j = 8 * n + 2 * t + l / 16;
    int level = (l + t) % 4 + 4 * ((l + n + t) % 2) - 4;
    float expected = (0.25f * static_cast<float>(2 * j + 1 - 32)) * level;
    ASSERT_EQ(y[e], expected) << e;
  }
}

TEST(LowBitKQuants, Q5_KBlockDecodesToItsFormula) {
  // d = 0.125, dmin = 0.5; sub-block s has scale s + 1 and min 2s (6-bit
  // packing of Q4_K); level of element 64c + 32h + l = (l % 16) + 16 * ((l +
  // c + h) % 2), its fifth bit at bit 2c + h of qh[l].
  std::vector<uint8_t> block(176, 0);
  for (int s = 0; s < 8; ++s) {
    int scale = s + 1, min = 2 * s;
    if (s < 4) {
      block[4 + s] = static_cast<uint8_t>(scale);
      block[4 + s + 4] = static_cast<uint8_t>(min);
    } else {
      block[4 + s + 4] = static_cast<uint8_t>((scale & 0xF) | ((min & 0xF) << 4));
      block[4 + s - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
      block[4 + s] |= static_cast<uint8_t>((min >> 4) << 6);
    }
  }
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      block[48 + 32 * c + l] = static_cast<uint8_t>((l % 16) | ((l % 16) << 4));
      for (int h = 0; h < 2; ++h)
        if ((l + c + h) % 2)
          block[16 + l] = static_cast<uint8_t>(block[16 + l] | (1 << (2 * c + h)));
    }
  storeHalf(&block[0], 0.125f);
  storeHalf(&block[2], 0.5f);
  std::vector<float> y = dequantize(BlockFormat::Q5_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    int c = e / 64, h = (e % 64) / 32, l = e % 32, s = 2 * c + h;
    int level = l % 16 + 16 * ((l + c + h) % 2);
    float expected = (0.125f * static_cast<float>(s + 1)) * level -
                     0.5f * static_cast<float>(2 * s);
    ASSERT_EQ(y[e], expected) << e;
  }
}

double relativeRms(const std::vector<float> &x, const std::vector<float> &y) {
  double error = 0, energy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    error += (x[i] - y[i]) * static_cast<double>(x[i] - y[i]);
    energy += x[i] * static_cast<double>(x[i]);
  }
  return std::sqrt(error / energy);
}

TEST(LowBitKQuants, RandomRowsRoundTripWithinTheirGrid) {
  // Uniform rows in [-1, 1): ggml's fits leave a relative RMS error of 0.235
  // (Q2_K), 0.126 (Q3_K) and 0.028 (Q5_K) on this row; the bounds are a
  // quarter above, far below what a wrong level or scale would give.
  struct Bound {
    BlockFormat format;
    double maxRelativeRms;
  };
  for (Bound bound : {Bound{BlockFormat::Q2_K, 0.29}, Bound{BlockFormat::Q3_K, 0.16},
                      Bound{BlockFormat::Q5_K, 0.035}}) {
    SCOPED_TRACE(std::string(blockLayout(bound.format).name));
    std::vector<float> x(256 * 32);
    uint32_t state = 7u;
    for (float &value : x) {
      state = state * 1664525u + 1013904223u;
      value = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
    }
    std::vector<float> y =
        dequantize(bound.format, quantize(bound.format, x), x.size());
    double rms = relativeRms(x, y);
    EXPECT_LT(rms, bound.maxRelativeRms) << "rms " << rms;
    EXPECT_GT(rms, 0.0);
  }
}

} // namespace
