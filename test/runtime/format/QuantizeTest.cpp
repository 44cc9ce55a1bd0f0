// Tests of the ggml-compatible quantizers and dequantizers: hand-packed blocks
// of every format decoded against the format's formula, half/bfloat16 bit
// patterns, round-trip error bounds and fixed points on pseudo-random data, and
// golden bytes traced by hand through ggml's reference algorithms.
#include "runtime/format/Quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace hetrt::format;

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

std::vector<uint8_t> quantize(BlockFormat format, const std::vector<float> &x) {
  std::vector<uint8_t> bytes(static_cast<size_t>(
      *storageBytes(format, static_cast<int64_t>(x.size()))));
  EXPECT_TRUE(quantizeRow(format, x.data(), static_cast<int64_t>(x.size()),
                          bytes.data()));
  return bytes;
}

std::vector<float> dequantize(BlockFormat format,
                              const std::vector<uint8_t> &bytes,
                              int64_t count) {
  EXPECT_EQ(*storageBytes(format, count), static_cast<int64_t>(bytes.size()));
  std::vector<float> values(static_cast<size_t>(count));
  EXPECT_TRUE(dequantizeRow(format, bytes.data(), count, values.data()));
  return values;
}

/// A deterministic generator whose output does not depend on the standard
/// library (std::normal_distribution differs between libstdc++ and libc++).
class Random {
public:
  explicit Random(uint64_t seed) : state_(seed) {}

  /// Uniform in [0, 1), from splitmix64.
  double uniform() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1p-53;
  }

  /// Standard normal, by Box-Muller.
  float normal() {
    const double u = 1.0 - uniform(); // (0, 1]: log stays finite
    const double v = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u)) *
                              std::cos(6.283185307179586 * v));
  }

private:
  uint64_t state_;
};

std::vector<float> normalData(uint64_t seed, size_t count, float scale = 1.0f) {
  Random random(seed);
  std::vector<float> x(count);
  for (float &value : x)
    value = scale * random.normal();
  return x;
}

std::vector<float> uniformData(uint64_t seed, size_t count) {
  Random random(seed);
  std::vector<float> x(count);
  for (float &value : x)
    value = static_cast<float>(2.0 * random.uniform() - 1.0);
  return x;
}

//===----------------------------------------------------------------------===//
// 1. Hand-packed blocks decode to the format's formula
//===----------------------------------------------------------------------===//

TEST(DequantizeTest, F32F16BF16) {
  const float f32[] = {1.5f, -0.0f, 3e38f};
  std::vector<uint8_t> f32Bytes(sizeof f32);
  std::memcpy(f32Bytes.data(), f32, sizeof f32);
  std::vector<float> decoded = dequantize(BlockFormat::F32, f32Bytes, 3);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(bitsOf(decoded[i]), bitsOf(f32[i]));

  // Little-endian halves: 1.0, -2.0, 2^-24 (smallest subnormal), 65504 (max).
  decoded = dequantize(BlockFormat::F16,
                       {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0xFF, 0x7B}, 4);
  EXPECT_EQ(decoded, (std::vector<float>{1.0f, -2.0f, 0x1p-24f, 65504.0f}));

  // bfloat16: 1.0, -3.0, infinity.
  decoded =
      dequantize(BlockFormat::BF16, {0x80, 0x3F, 0x40, 0xC0, 0x80, 0x7F}, 3);
  EXPECT_EQ(decoded, (std::vector<float>{
                         1.0f, -3.0f, std::numeric_limits<float>::infinity()}));
}

TEST(DequantizeTest, Q8_0) {
  // d = 0.25 (f16 0x3400); qs[j] = 8j - 128, covering -128..120.
  std::vector<uint8_t> block = {0x00, 0x34};
  for (int j = 0; j < 32; ++j)
    block.push_back(static_cast<uint8_t>(8 * j - 128));
  std::vector<float> y = dequantize(BlockFormat::Q8_0, block, 32);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(y[j], (8 * j - 128) * 0.25f) << j;
  EXPECT_EQ(y[0], -32.0f);
  EXPECT_EQ(y[31], 30.0f);
}

TEST(DequantizeTest, Q4_0) {
  // d = 0.5 (f16 0x3800). qs[j] = j | (15 - j) << 4: element j is the low
  // nibble of qs[j], element j + 16 its high nibble, both offset by 8.
  std::vector<uint8_t> block = {0x00, 0x38};
  for (int j = 0; j < 16; ++j)
    block.push_back(static_cast<uint8_t>(j | ((15 - j) << 4)));
  std::vector<float> y = dequantize(BlockFormat::Q4_0, block, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[j + 16], (15 - j - 8) * 0.5f) << j;
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[16], 3.5f);
}

TEST(DequantizeTest, Q4_0TwoBlocksInOrder) {
  // Block 0: d = 1, all nibbles 9 (value 1); block 1: d = -2, all nibbles 0
  // (value 16).
  std::vector<uint8_t> bytes = {0x00, 0x3C};
  bytes.insert(bytes.end(), 16, 0x99);
  bytes.push_back(0x00);
  bytes.push_back(0xC0);
  bytes.insert(bytes.end(), 16, 0x00);
  std::vector<float> y = dequantize(BlockFormat::Q4_0, bytes, 64);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(y[i], i < 32 ? 1.0f : 16.0f) << i;
}

TEST(DequantizeTest, Q4_K) {
  // Chosen 6-bit scales and mins of the eight sub-blocks of 32.
  const int scale[8] = {1, 2, 3, 63, 17, 33, 48, 60};
  const int min[8] = {0, 5, 63, 7, 16, 34, 1, 50};
  // Packed by hand. Bytes 0-3: scale[0..3] | top two bits of scale[4..7] << 6
  // (17 >> 4 = 1, 33 >> 4 = 2, 48 >> 4 = 3, 60 >> 4 = 3). Bytes 4-7: min[0..3]
  // | top two bits of min[4..7] << 6 (1, 2, 0, 3). Bytes 8-11: low nibble of
  // scale[4..7] | low nibble of min[4..7] << 4 (scales 1, 1, 0, 12; mins 0, 2,
  // 1, 2).
  const uint8_t packedScales[12] = {0x41, 0x82, 0xC3, 0xFF, 0x40, 0x85,
                                    0x3F, 0xC7, 0x01, 0x21, 0x10, 0x2C};
  // d = 0.5 (0x3800), dmin = 0.25 (0x3400).
  std::vector<uint8_t> block = {0x00, 0x38, 0x00, 0x34};
  block.insert(block.end(), packedScales, packedScales + 12);
  // qs[32c + l]: low nibble is element l of sub-block 2c, high nibble element l
  // of sub-block 2c + 1. Low nibbles count up, high nibbles down.
  for (int chunk = 0; chunk < 4; ++chunk)
    for (int l = 0; l < 32; ++l)
      block.push_back(static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4)));
  ASSERT_EQ(block.size(), 144u);

  std::vector<float> y = dequantize(BlockFormat::Q4_K, block, 256);
  for (int sub = 0; sub < 8; ++sub) {
    for (int l = 0; l < 32; ++l) {
      const int q = sub % 2 == 0 ? l % 16 : 15 - l % 16;
      // x = (d * scale) * q - dmin * min
      EXPECT_EQ(y[32 * sub + l], 0.5f * scale[sub] * q - 0.25f * min[sub])
          << "sub-block " << sub << " element " << l;
    }
  }
  // Spot values worked out on paper: sub-block 5 (scale 33, min 34), element 3
  // has q = 15 - 3 = 12: 0.5 * 33 * 12 - 0.25 * 34 = 189.5. Sub-block 7 (scale
  // 60, min 50), element 17: q = 14, 0.5 * 60 * 14 - 12.5 = 407.5. Sub-block 2
  // (scale 3, min 63), element 0: q = 0, -15.75.
  EXPECT_EQ(y[32 * 5 + 3], 189.5f);
  EXPECT_EQ(y[32 * 7 + 17], 407.5f);
  EXPECT_EQ(y[32 * 2 + 0], -15.75f);
}

TEST(DequantizeTest, Q6_K) {
  // Signed 8-bit sub-block scales, negative ones included; d = 0.5 (0x3800).
  const int8_t scales[16] = {-1, 2,  -3,  4,  -5,  6,  -7,   8,
                             -9, 10, -11, 12, -13, 14, -128, 127};
  std::vector<uint8_t> block(210, 0);
  // ql[l] of half 0: element l (low nibble) and l + 64 (high nibble); qh[l]:
  // top two bits of elements l, l + 32, l + 64, l + 96 at bits 0, 2, 4, 6.
  block[0] = 0xA5;       // ql[0]
  block[128 + 0] = 0xE4; // qh[0] = 0b11'10'01'00
  // Half 1 (elements 128..255) uses ql[64..127] and qh[32..63].
  block[65] = 0x7C;       // ql[64 + 1]
  block[128 + 33] = 0x1B; // qh[32 + 1] = 0b00'01'10'11
  for (int j = 0; j < 16; ++j)
    block[192 + j] = static_cast<uint8_t>(scales[j]);
  block[208] = 0x00;
  block[209] = 0x38;

  std::vector<float> y = dequantize(BlockFormat::Q6_K, block, 256);
  // Element e is in sub-block e / 16; x = (d * scale) * (q - 32).
  // e = 0:   q = 0x5 | 0b00 << 4 = 5   -> 0.5 * -1 * (5 - 32) = 13.5
  // e = 32:  q = 0x0 | 0b01 << 4 = 16  -> 0.5 * -3 * -16 = 24
  // e = 64:  q = 0xA | 0b10 << 4 = 42  -> 0.5 * -5 * 10 = -25
  // e = 96:  q = 0x0 | 0b11 << 4 = 48  -> 0.5 * -7 * 16 = -56
  // e = 129: q = 0xC | 0b11 << 4 = 60  -> 0.5 * -9 * 28 = -126
  // e = 161: q = 0x0 | 0b10 << 4 = 32  -> 0
  // e = 193: q = 0x7 | 0b01 << 4 = 23  -> 0.5 * -13 * -9 = 58.5
  // e = 225: q = 0x0 | 0b00 << 4 = 0   -> 0.5 * -128 * -32 = 2048
  // every other element has q = 0, i.e. -32 times its sub-block's d * scale.
  EXPECT_EQ(y[0], 13.5f);
  EXPECT_EQ(y[32], 24.0f);
  EXPECT_EQ(y[64], -25.0f);
  EXPECT_EQ(y[96], -56.0f);
  EXPECT_EQ(y[129], -126.0f);
  EXPECT_EQ(y[161], 0.0f);
  EXPECT_EQ(y[193], 58.5f);
  EXPECT_EQ(y[225], 2048.0f);
  for (int e : {1, 31, 33, 100, 128, 130, 240, 255})
    EXPECT_EQ(y[e], 0.5f * scales[e / 16] * -32) << e;
}

TEST(DequantizeTest, Q6_KEveryElementFromTheLayout) {
  // Patterned bytes in every field, decoded element by element from the layout
  // as ggml's block_q6_K comment states it.
  std::vector<uint8_t> block(210);
  for (int i = 0; i < 192; ++i)
    block[i] = static_cast<uint8_t>(i * 37 + 11);
  for (int j = 0; j < 16; ++j)
    block[192 + j] = static_cast<uint8_t>(j * 29 - 100); // mixed signs
  block[208] = 0x00;                                     // d = 2^-4 (0x2C00)
  block[209] = 0x2C;
  std::vector<float> y = dequantize(BlockFormat::Q6_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, quarter = e % 128 / 32, l = e % 32;
    const uint8_t ql = block[64 * half + l + (quarter % 2) * 32];
    const uint8_t qh = block[128 + 32 * half + l];
    const int low = quarter < 2 ? ql & 0xF : ql >> 4;
    const int q = low | (((qh >> (2 * quarter)) & 3) << 4);
    const auto scale = static_cast<int8_t>(block[192 + e / 16]);
    EXPECT_EQ(y[e], 0.0625f * scale * (q - 32)) << e;
  }
}

TEST(DequantizeTest, RejectsPartialBlocksAndUnknownFormats) {
  std::vector<uint8_t> bytes(210);
  std::vector<float> out(256, 7.0f);
  EXPECT_FALSE(dequantizeRow(BlockFormat::Q6_K, bytes.data(), 255, out.data()));
  EXPECT_FALSE(dequantizeRow(BlockFormat::Q4_0, bytes.data(), 31, out.data()));
  EXPECT_FALSE(dequantizeRow(BlockFormat::F16, bytes.data(), -1, out.data()));
  EXPECT_FALSE(
      dequantizeRow(static_cast<BlockFormat>(3), bytes.data(), 32, out.data()));
  EXPECT_EQ(out[0], 7.0f); // nothing written
  EXPECT_TRUE(dequantizeRow(BlockFormat::Q4_K, nullptr, 0, nullptr));
}

//===----------------------------------------------------------------------===//
// 2. Half and bfloat16 conversions
//===----------------------------------------------------------------------===//

TEST(ConversionTest, Fp32ToFp16KnownPatterns) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(fp32ToFp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32ToFp16(-2.0f), 0xC000);
  EXPECT_EQ(fp32ToFp16(0.0f), 0x0000);
  EXPECT_EQ(fp32ToFp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32ToFp16(0.5f), 0x3800);
  EXPECT_EQ(fp32ToFp16(65504.0f), 0x7BFF);   // largest finite half
  EXPECT_EQ(fp32ToFp16(65519.996f), 0x7BFF); // just below the tie
  EXPECT_EQ(fp32ToFp16(65520.0f), 0x7C00);   // tie with 65536: even side is inf
  EXPECT_EQ(fp32ToFp16(1e10f), 0x7C00);
  EXPECT_EQ(fp32ToFp16(0x1p-14f), 0x0400); // smallest normal
  EXPECT_EQ(fp32ToFp16(0x1p-24f), 0x0001); // smallest subnormal
  EXPECT_EQ(fp32ToFp16(-0x1p-24f), 0x8001);
  EXPECT_EQ(fp32ToFp16(0x1p-25f), 0x0000);        // tie with 0: even is 0
  EXPECT_EQ(fp32ToFp16(0x1.000002p-25f), 0x0001); // just above the tie
  EXPECT_EQ(fp32ToFp16(0x3p-25f), 0x0002);        // 1.5 units: even is 2
  EXPECT_EQ(fp32ToFp16(0x1.ffcp-15f), 0x0400);    // 1023.5 units: up to normal
  EXPECT_EQ(fp32ToFp16(1e-10f), 0x0000);
  EXPECT_EQ(fp32ToFp16(1.0f + 0x1p-11f), 0x3C00); // tie: 0x3C00 is even
  EXPECT_EQ(fp32ToFp16(1.0f + 0x3p-11f), 0x3C02); // tie: 0x3C02 is even
  EXPECT_EQ(fp32ToFp16(1.0f + 0x1p-11f + 0x1p-23f), 0x3C01); // above tie
  EXPECT_EQ(fp32ToFp16(inf), 0x7C00);
  EXPECT_EQ(fp32ToFp16(-inf), 0xFC00);
  // ggml makes every NaN the canonical quiet NaN, keeping only the sign.
  EXPECT_EQ(fp32ToFp16(floatOf(0x7FC00000)), 0x7E00);
  EXPECT_EQ(fp32ToFp16(floatOf(0x7F800001)), 0x7E00);
  EXPECT_EQ(fp32ToFp16(floatOf(0xFFFFFFFF)), 0xFE00);
}

TEST(ConversionTest, Fp16ToFp32IsExactAndRoundTrips) {
  EXPECT_EQ(fp16ToFp32(0x3C00), 1.0f);
  EXPECT_EQ(fp16ToFp32(0x7BFF), 65504.0f);
  EXPECT_EQ(fp16ToFp32(0x0001), 0x1p-24f);
  EXPECT_EQ(fp16ToFp32(0x03FF), 0x3FFp-24f);
  EXPECT_EQ(bitsOf(fp16ToFp32(0x8000)), 0x80000000u);
  EXPECT_EQ(fp16ToFp32(0xFC00), -std::numeric_limits<float>::infinity());
  // NaNs keep sign and payload and come back quiet.
  EXPECT_EQ(bitsOf(fp16ToFp32(0x7C01)), 0x7FC02000u);
  EXPECT_EQ(bitsOf(fp16ToFp32(0xFE00)), 0xFFC00000u);
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto half = static_cast<uint16_t>(bits);
    const bool isNan = (half & 0x7C00) == 0x7C00 && (half & 0x3FF) != 0;
    if (!isNan)
      ASSERT_EQ(fp32ToFp16(fp16ToFp32(half)), half) << std::hex << bits;
  }
}

#ifdef __FLT16_MAX__
TEST(ConversionTest, Fp32ToFp16MatchesTheCompilersHalfType) {
  // _Float16 conversion rounds to nearest even as IEEE requires; an independent
  // check of every finite and infinite value on a sweep of bit patterns.
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 0x3F1) {
    const float value = floatOf(static_cast<uint32_t>(bits));
    if (std::isnan(value))
      continue;
    const _Float16 half = static_cast<_Float16>(value);
    uint16_t expected;
    std::memcpy(&expected, &half, sizeof expected);
    ASSERT_EQ(fp32ToFp16(value), expected) << std::hex << bits;
  }
}
#endif

TEST(ConversionTest, Bf16KnownPatterns) {
  EXPECT_EQ(fp32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(fp32ToBf16(-3.0f), 0xC040);
  EXPECT_EQ(fp32ToBf16(1.0f + 0x1p-8f), 0x3F80); // tie: 0x3F80 is even
  EXPECT_EQ(fp32ToBf16(1.0f + 0x3p-8f), 0x3F82); // tie: 0x3F82 is even
  EXPECT_EQ(fp32ToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(fp32ToBf16(std::numeric_limits<float>::max()), 0x7F80); // to inf
  EXPECT_EQ(fp32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(fp32ToBf16(floatOf(0x00010000)), 0x0001); // subnormals are kept
  // NaN: upper half with the quiet bit forced, as ggml_compute_fp32_to_bf16.
  EXPECT_EQ(fp32ToBf16(floatOf(0x7FA00001)), 0x7FE0);
  EXPECT_EQ(fp32ToBf16(floatOf(0xFF800001)), 0xFFC0);
  EXPECT_EQ(bf16ToFp32(0x3F80), 1.0f);
  EXPECT_EQ(bitsOf(bf16ToFp32(0xFFC0)), 0xFFC00000u);
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const auto bf16 = static_cast<uint16_t>(bits);
    if (!std::isnan(bf16ToFp32(bf16)))
      ASSERT_EQ(fp32ToBf16(bf16ToFp32(bf16)), bf16) << std::hex << bits;
  }
}

TEST(ConversionTest, RowsStoreLittleEndianHalves) {
  const std::vector<float> x = {1.0f, -2.0f};
  EXPECT_EQ(quantize(BlockFormat::F16, x),
            (std::vector<uint8_t>{0x00, 0x3C, 0x00, 0xC0}));
  EXPECT_EQ(quantize(BlockFormat::BF16, x),
            (std::vector<uint8_t>{0x80, 0x3F, 0x00, 0xC0}));
  std::vector<uint8_t> f32 = quantize(BlockFormat::F32, x);
  EXPECT_EQ(std::memcmp(f32.data(), x.data(), 8), 0);
}

//===----------------------------------------------------------------------===//
// 3. Round-trip error bounds and fixed points
//===----------------------------------------------------------------------===//

/// Largest |value| of each block of `blockSize`.
std::vector<float> blockAmax(const std::vector<float> &x, size_t blockSize) {
  std::vector<float> amax(x.size() / blockSize, 0.0f);
  for (size_t i = 0; i < x.size(); ++i)
    amax[i / blockSize] = std::max(amax[i / blockSize], std::fabs(x[i]));
  return amax;
}

TEST(RoundTripTest, Q8_0WithinHalfAStep) {
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<float> x = normalData(seed, 32 * 512, 0.02f);
    const std::vector<float> y =
        dequantize(BlockFormat::Q8_0, quantize(BlockFormat::Q8_0, x), 32 * 512);
    const std::vector<float> amax = blockAmax(x, 32);
    for (size_t i = 0; i < x.size(); ++i) {
      // Half a step d = amax / 127, plus |q| <= 127 times the f16 rounding of d
      // (relative 2^-11): 0.5 d + 127 * 2^-11 d < 0.5625 d.
      const float step = amax[i / 32] / 127;
      ASSERT_LE(std::fabs(x[i] - y[i]), 0.5625f * step) << i;
    }
  }
}

TEST(RoundTripTest, Q4_0WithinOneStep) {
  for (uint64_t seed : {4, 5, 6}) {
    const std::vector<float> x = normalData(seed, 32 * 512);
    const std::vector<float> y =
        dequantize(BlockFormat::Q4_0, quantize(BlockFormat::Q4_0, x), 32 * 512);
    const std::vector<float> amax = blockAmax(x, 32);
    for (size_t i = 0; i < x.size(); ++i) {
      // d = amax / 8. The extreme maps to -8; the other side can only reach +7,
      // so a value near -extreme is off by up to one step, others by half. The
      // f16 rounding of d adds at most 8 * 2^-11 d.
      const float step = amax[i / 32] / 8;
      ASSERT_LE(std::fabs(x[i] - y[i]), 1.01f * step) << i;
    }
  }
}

/// max(x, 0) - min(x, 0) of each super-block of 256: the span the k-quants'
/// 15- or 63-step grids must cover.
std::vector<float> superBlockRange(const std::vector<float> &x) {
  std::vector<float> range(x.size() / 256);
  for (size_t b = 0; b < range.size(); ++b) {
    const auto [lo, hi] =
        std::minmax_element(x.begin() + 256 * b, x.begin() + 256 * (b + 1));
    range[b] = std::max(*hi, 0.0f) - std::min(*lo, 0.0f);
  }
  return range;
}

double relativeRms(const std::vector<float> &x, const std::vector<float> &y) {
  double error = 0, energy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    error += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    energy += double(x[i]) * x[i];
  }
  return std::sqrt(error / energy);
}

TEST(RoundTripTest, Q4_KWithinTheWidestSubBlockStep) {
  // Each sub-block is fitted on its own 16-level grid (at most range/15 apart)
  // whose scale and min are then rounded to 6 bits of the super-block maxima:
  // no element should end up further than one step of the widest possible
  // sub-block grid, and the error energy stays near 4-bit uniform noise
  // (about 7% of a Gaussian's RMS; ggml gets the same).
  for (uint64_t seed : {7, 8}) {
    for (bool gaussian : {true, false}) {
      const std::vector<float> x =
          gaussian ? normalData(seed, 256 * 64) : uniformData(seed, 256 * 64);
      const std::vector<float> y = dequantize(
          BlockFormat::Q4_K, quantize(BlockFormat::Q4_K, x), 256 * 64);
      const std::vector<float> range = superBlockRange(x);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(x[i] - y[i]), range[i / 256] / 15) << i;
      EXPECT_LT(relativeRms(x, y), gaussian ? 0.085 : 0.065);
    }
  }
}

TEST(RoundTripTest, Q6_KWithinOneStepOfTheLargestScale) {
  // Sub-block scales are near amax_sub / 32 and quantized to 8 bits of the
  // largest one: every element stays within amax / 32 of the super-block.
  for (uint64_t seed : {9, 10}) {
    for (bool gaussian : {true, false}) {
      const std::vector<float> x =
          gaussian ? normalData(seed, 256 * 64) : uniformData(seed, 256 * 64);
      const std::vector<float> y = dequantize(
          BlockFormat::Q6_K, quantize(BlockFormat::Q6_K, x), 256 * 64);
      const std::vector<float> amax = blockAmax(x, 256);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_LE(std::fabs(x[i] - y[i]), amax[i / 256] / 32) << i;
      EXPECT_LT(relativeRms(x, y), gaussian ? 0.022 : 0.016);
    }
  }
}

TEST(RoundTripTest, Q8_0AndQ4_0AreFixedPoints) {
  // Requantizing dequantized values gives the same bytes: the extreme element
  // decodes to exactly +-127 d (Q8_0) or -8 d (Q4_0) with d the stored f16, so
  // the recomputed scale is that same f16 and every level is recovered.
  for (BlockFormat format : {BlockFormat::Q8_0, BlockFormat::Q4_0}) {
    const std::vector<float> x = normalData(11, 32 * 256, 3.0f);
    const std::vector<uint8_t> once = quantize(format, x);
    const std::vector<float> y = dequantize(format, once, 32 * 256);
    EXPECT_EQ(quantize(format, y), once) << blockLayout(format).name;
  }
}

//===----------------------------------------------------------------------===//
// 4. Golden bytes, traced by hand through ggml's reference algorithms
//===----------------------------------------------------------------------===//

std::vector<float> rampOf32() {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = (i - 16) / 8.0f; // -2, -1.875, ..., 1.875
  return x;
}

TEST(GoldenTest, Q8_0Ramp) {
  // quantize_row_q8_0_ref on x = (i - 16) / 8: amax = 2, d = fl(2 / 127) =
  // 0x3C810204, whose f16 is 0x2408 (2^-6 * (1 + 8/1024)); id = fl(1 / d) is
  // exactly 63.5, so x * id = k * 7.9375 (k = i - 16) exactly, and roundf (half
  // away from zero) gives k = +-8 -> +-63.5 -> +-64.
  const std::vector<uint8_t> expected = {
      0x08, 0x24,                                      // d
      0x81, 0x89, 0x91, 0x99, 0xA1, 0xA9, 0xB1, 0xB9,  // -127 .. -71
      0xC0, 0xC8, 0xD0, 0xD8, 0xE0, 0xE8, 0xF0, 0xF8,  // -64 .. -8
      0x00, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38,  // 0 .. 56
      0x40, 0x47, 0x4F, 0x57, 0x5F, 0x67, 0x6F, 0x77}; // 64, 71 .. 119
  EXPECT_EQ(quantize(BlockFormat::Q8_0, rampOf32()), expected);
}

TEST(GoldenTest, Q8_0RoundsHalfAwayFromZero) {
  // amax = 127 makes d = 1 and id = 1 exactly, so the quants are roundf(x):
  // halves go away from zero (-7.5 -> -8, 0.5 -> 1, -0.5 -> -1, 2.5 -> 3),
  // unlike the k-quants' nearest_int (ties to even).
  std::vector<float> x(32, 0.0f);
  x[0] = -127.0f;
  x[1] = -7.5f;
  x[2] = 0.5f;
  x[3] = -0.5f;
  x[4] = 2.5f;
  x[5] = 126.4f;
  std::vector<uint8_t> expected(34, 0);
  expected[0] = 0x00; // d = 1.0 = 0x3C00
  expected[1] = 0x3C;
  expected[2] = static_cast<uint8_t>(-127);
  expected[3] = static_cast<uint8_t>(-8);
  expected[4] = 1;
  expected[5] = static_cast<uint8_t>(-1);
  expected[6] = 3;
  expected[7] = 126;
  EXPECT_EQ(quantize(BlockFormat::Q8_0, x), expected);
}

TEST(GoldenTest, Q4_0Ramp) {
  // quantize_row_q4_0_ref on x = (i - 16) / 8: the first largest magnitude is
  // x[0] = -2, so d = -2 / -8 = 0.25 (f16 0x3400) and id = 4, all exact. Level
  // = min(15, trunc(x * 4 + 8.5)): for j < 16, trunc(j / 2 + 0.5) = (j + 1) / 2
  // rounded down; element j + 16 gives 8 + (j + 1) / 2, capped at 15 (j = 15
  // reaches 16).
  std::vector<uint8_t> expected = {0x00, 0x34};
  for (int j = 0; j < 16; ++j) {
    const int low = (j + 1) / 2;
    const int high = std::min(15, 8 + (j + 1) / 2);
    expected.push_back(static_cast<uint8_t>(low | (high << 4)));
  }
  EXPECT_EQ(quantize(BlockFormat::Q4_0, rampOf32()), expected);
  // Spelled out: qs = 80 91 91 A2 A2 B3 ... F7 F7 F8
  EXPECT_EQ(expected[2], 0x80);
  EXPECT_EQ(expected[3], 0x91);
  EXPECT_EQ(expected[17], 0xF8);
}

TEST(GoldenTest, ZeroBlocksAreAllZeroBytes) {
  // Every quantizer maps an all-zero block to zero scales and the zero level:
  // Q8_0 d = 0, q = 0; Q4_K and Q6_K zero scales with levels of zero (Q4_K's
  // fit keeps L = 0; Q6_K clears the whole block). Q4_0's d is 0 / -8 = -0 (f16
  // 0x8000) and its level trunc(0 + 8.5) = 8, so each block is 00 80 88 88 ...
  const std::vector<float> zeros(256, 0.0f);
  for (BlockFormat format : {BlockFormat::Q8_0, BlockFormat::Q4_K,
                             BlockFormat::Q6_K, BlockFormat::F16}) {
    std::vector<uint8_t> bytes = quantize(format, zeros);
    EXPECT_TRUE(std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) {
      return b == 0;
    })) << blockLayout(format).name;
  }
  std::vector<uint8_t> q4 = quantize(BlockFormat::Q4_0, zeros);
  for (size_t i = 0; i < q4.size(); ++i)
    EXPECT_EQ(q4[i], i % 18 == 0 ? 0x00 : i % 18 == 1 ? 0x80 : 0x88) << i;
}

TEST(GoldenTest, Q4_KConstantBlock) {
  // x = 1 everywhere. make_qkx2_quants per sub-block: min is clamped to 0, so
  // iscale = 15 / (1 - 0) = 15, scale = fl(1/15), every L = 15. Weights are
  // av_x + |x| = 2, so for each trial grid all L are equal and the normal
  // equations' determinant 64 * (32*2*l^2) - (32*2*l)^2 is exactly 0: no trial
  // is taken. Hence every sub-block has scale fl(1/15) and min -0.
  //   max_scale = fl(1/15), max_min = 0 -> 6-bit scale round(63) = 63, min 0.
  //   d = f16(fl(1/15) / 63) = f16(0.0010582) = 0x1456 (2^-10 * (1 + 86/1024)),
  //   dmin = f16(0) = 0.
  //   Scale bytes: 0-3 = 63 | (63 >> 4) << 6 = 0xFF; 4-7 = 0 (mins, and the top
  //   bits of min 0); 8-11 = (63 & 15) | 0 = 0x0F.
  //   Requantized L = round(1 / (f16(d) * 63)) = round(0.99998...) = 15, every
  //   qs byte 0xFF.
  std::vector<uint8_t> expected = {0x56, 0x14, 0x00, 0x00};
  expected.insert(expected.end(), {0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00,
                                   0x00, 0x0F, 0x0F, 0x0F, 0x0F});
  expected.insert(expected.end(), 128, 0xFF);
  EXPECT_EQ(quantize(BlockFormat::Q4_K, std::vector<float>(256, 1.0f)),
            expected);
}

TEST(GoldenTest, Q4_KValuesOnTheGrid) {
  // x[i] = (i mod 16) - 8: every sub-block spans [-8, 7], so iscale = 15 / 15 =
  // 1 and L = x + 8 fits exactly with scale 1, min -8 and error 0, which no
  // trial can beat (errors are >= 0 and the test is strict).
  //   max_scale = 1, max_min = 8 -> 6-bit scale round(63 * 1) = 63 and min
  //   round(fl(63/8) * 8) = 63 for all eight sub-blocks, so every one of the 12
  //   scale bytes is 0xFF (63 | 3 << 6 in bytes 0-7, 15 | 15 << 4 in 8-11).
  //   d = f16(fl(1/63)) = 0x2410 (2^-6 * (1 + 16/1024)) and dmin =
  //   f16(fl(8/63)) = 0x3010 (2^-3 * (1 + 16/1024)). Requantized: (x + 63 *
  //   dmin) / (63 * d) = (q - 0.00195) / 0.99976 lies within 0.002 of q = x +
  //   8, so L = i mod 16 again. qs[32c + l] packs L of element 64c + l (low)
  //   and 64c + l + 32 (high), both l mod 16: 0x00, 0x11, ..., 0xFF, twice per
  //   32 bytes.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i)
    x[i] = static_cast<float>(i % 16 - 8);
  std::vector<uint8_t> expected = {0x10, 0x24, 0x10, 0x30};
  expected.insert(expected.end(), 12, 0xFF);
  for (int i = 0; i < 128; ++i)
    expected.push_back(static_cast<uint8_t>((i % 16) * 0x11));
  EXPECT_EQ(quantize(BlockFormat::Q4_K, x), expected);
}

TEST(GoldenTest, Q6_KConstantBlock) {
  // x = 1 everywhere. make_qx_quants(nmax 32, weights x^2 = 1): max = 1,
  // iscale = -32, every l = -32 (stored 0); sumlx = -512, suml2 = 16384, scale
  // = -1/32, best = 16, all exact. Trials give l = -31 or -32 for all 16
  // elements alike, and then sumlx^2 == best * suml2 exactly (e.g. 496^2 =
  // 16 * 15376), which the strict > rejects. So every sub-block has scale
  // -1/32.
  //   max_scale = -1/32 -> iscale = -128 / (-1/32) = 4096, d = f16(1/4096) =
  //   0x0C00; every int8 scale = min(127, round(4096 * -1/32)) = -128 (0x80).
  //   Requantized: d * -128 = -1/32, round(1 / (-1/32)) = -32 -> L = 0, so all
  //   ql and qh bytes are 0. Decoding gives (-1/32) * (0 - 32) = 1 exactly.
  std::vector<uint8_t> expected(192, 0x00);
  expected.insert(expected.end(), 16, 0x80);
  expected.insert(expected.end(), {0x00, 0x0C});
  const std::vector<float> ones(256, 1.0f);
  const std::vector<uint8_t> bytes = quantize(BlockFormat::Q6_K, ones);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(dequantize(BlockFormat::Q6_K, bytes, 256), ones);
}

TEST(GoldenTest, Q6_KValuesOnTheGrid) {
  // x[16b + i] = 4i - 32: each sub-block holds -32, -28, ..., 28, its largest
  // magnitude is -32, so iscale = -32 / -32 = 1 and l = x exactly (within
  // [-32, 31]). Then l is proportional to x and the least-squares scale is 1;
  // by Cauchy-Schwarz a trial grid can only match that (same l) or fall short
  // (by far more than float rounding), so the scale stays 1 in every sub-block.
  //   max_scale = 1 -> iscale = -128, d = f16(-1/128) = 0xA000, every int8
  //   scale = round(-128 * 1) = -128 (0x80). Requantized: d * -128 = 1 exactly,
  //   so L = x + 32 = 4i.
  //   Packing (per half, l < 32): elements l, l+32, l+64, l+96 all have
  //   i = l mod 16, hence the same L = v: ql[l] = ql[l+32] = (v & 15) * 0x11,
  //   qh[l] = (v >> 4) * 0x55.
  std::vector<float> x(256);
  for (int e = 0; e < 256; ++e)
    x[e] = static_cast<float>(4 * (e % 16) - 32);
  std::vector<uint8_t> expected(210);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int v = 4 * (l % 16);
      expected[64 * half + l] = static_cast<uint8_t>((v & 15) * 0x11);
      expected[64 * half + l + 32] = static_cast<uint8_t>((v & 15) * 0x11);
      expected[128 + 32 * half + l] = static_cast<uint8_t>((v >> 4) * 0x55);
    }
  }
  std::fill(expected.begin() + 192, expected.begin() + 208, 0x80);
  expected[208] = 0x00;
  expected[209] = 0xA0;
  const std::vector<uint8_t> bytes = quantize(BlockFormat::Q6_K, x);
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(dequantize(BlockFormat::Q6_K, bytes, 256), x); // exact round trip
}

//===----------------------------------------------------------------------===//
// Row and matrix API
//===----------------------------------------------------------------------===//

TEST(QuantizeApiTest, RejectsPartialBlocksAndUnknownFormats) {
  const std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(256 * 4, 0xAB);
  EXPECT_FALSE(quantizeRow(BlockFormat::Q8_0, x.data(), 33, out.data()));
  EXPECT_FALSE(quantizeRow(BlockFormat::Q4_K, x.data(), 128, out.data()));
  EXPECT_FALSE(quantizeRow(BlockFormat::F32, x.data(), -4, out.data()));
  EXPECT_FALSE(
      quantizeRow(static_cast<BlockFormat>(99), x.data(), 256, out.data()));
  EXPECT_TRUE(
      std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0xAB; }));
  EXPECT_TRUE(quantizeRow(BlockFormat::Q6_K, nullptr, 0, nullptr));
}

TEST(QuantizeApiTest, MatrixIsRowsOneAfterAnother) {
  const int64_t rows = 3, columns = 512;
  const std::vector<float> x = normalData(12, rows * columns);
  for (BlockFormat format :
       {BlockFormat::F32, BlockFormat::F16, BlockFormat::BF16,
        BlockFormat::Q8_0, BlockFormat::Q4_0, BlockFormat::Q4_K,
        BlockFormat::Q6_K}) {
    std::optional<std::vector<uint8_t>> matrix =
        quantizeMatrix(format, x.data(), rows, columns);
    ASSERT_TRUE(matrix) << blockLayout(format).name;
    const int64_t rowBytes = *storageBytes(format, columns);
    ASSERT_EQ(static_cast<int64_t>(matrix->size()), rows * rowBytes);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<uint8_t> row(static_cast<size_t>(rowBytes));
      ASSERT_TRUE(
          quantizeRow(format, x.data() + r * columns, columns, row.data()));
      EXPECT_TRUE(
          std::equal(row.begin(), row.end(), matrix->begin() + r * rowBytes))
          << blockLayout(format).name << " row " << r;
    }
  }
  EXPECT_FALSE(quantizeMatrix(BlockFormat::Q4_K, x.data(), 6, 128));
  EXPECT_FALSE(quantizeMatrix(BlockFormat::Q8_0, x.data(), -1, 32));
  std::optional<std::vector<uint8_t>> empty =
      quantizeMatrix(BlockFormat::Q8_0, x.data(), 0, 32);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

} // namespace
