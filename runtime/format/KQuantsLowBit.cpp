// ggml's Q2_K, Q3_K and Q5_K (quantize_row_q{2,3,5}_K_ref and
// dequantize_row_q{2,3,5}_K), reproduced float operation for float operation
// like the formats of Quantize.cpp: the k-quants that Q2_K, Q3_K_* and Q5_K_*
// files mix with Q4_K and Q6_K.
#include "runtime/format/Quantize.h"
#include "runtime/format/QuantizeBlocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// Two roundings for a*b+c, as ggml's baseline build (see Quantize.cpp).
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

namespace hetrt::format::blocks {

namespace {

/// Packs four 2-bit levels per byte as ggml's Q2_K and Q3_K do: in each half
/// of 128 levels, byte l holds levels l, l + 32, l + 64 and l + 96.
void packTwoBitLevels(const uint8_t *levels, uint8_t *quants) {
  for (int j = 0; j < kQKK; j += 128)
    for (int l = 0; l < 32; ++l)
      quants[j / 4 + l] = static_cast<uint8_t>(
          levels[j + l] | (levels[j + l + 32] << 2) |
          (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
}

} // namespace

//===----------------------------------------------------------------------===//
// Q2_K: scales[16] (low nibble scale, high nibble min per 16 values), qs[64]
// (2-bit levels), f16 d, f16 dmin; x = (d * scale) * q - (dmin * min).
//===----------------------------------------------------------------------===//

constexpr int kQ2KQuantsOffset = 16;
constexpr int kQ2KScaleOffset = 80;
constexpr int kQ2KMinOffset = 82;

void quantizeQ2_K(const float *x, uint8_t *block) {
  uint8_t levels[kQKK];
  uint8_t trialLevels[16];
  float weights[16];
  float mins[kQKK / 16];
  float scales[kQKK / 16];
  const float q4Scale = 15.f;

  float maxScale = 0; // the min is subtracted, so scales are never negative
  float maxMin = 0;
  for (int j = 0; j < kQKK / 16; ++j) {
    for (int l = 0; l < 16; ++l)
      weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = makeQkx2Quants(16, 3, x + 16 * j, weights, levels + 16 * j,
                               &mins[j], trialLevels, -0.5f, 0.1f, 15, true);
    if (scales[j] > maxScale)
      maxScale = scales[j];
    if (mins[j] > maxMin)
      maxMin = mins[j];
  }

  uint8_t *packedScales = block;
  if (maxScale > 0) {
    const float inverseScale = q4Scale / maxScale;
    for (int j = 0; j < kQKK / 16; ++j)
      packedScales[j] =
          static_cast<uint8_t>(nearestInt(inverseScale * scales[j]));
    storeU16(block + kQ2KScaleOffset, fp32ToFp16(maxScale / q4Scale));
  } else {
    std::memset(packedScales, 0, kQKK / 16);
    storeU16(block + kQ2KScaleOffset, fp32ToFp16(0.f));
  }
  if (maxMin > 0) {
    const float inverseMin = q4Scale / maxMin;
    for (int j = 0; j < kQKK / 16; ++j)
      packedScales[j] = static_cast<uint8_t>(
          packedScales[j] | (nearestInt(inverseMin * mins[j]) << 4));
    storeU16(block + kQ2KMinOffset, fp32ToFp16(maxMin / q4Scale));
  } else {
    storeU16(block + kQ2KMinOffset, fp32ToFp16(0.f));
  }

  // Requantize against the scales as stored; a sub-block whose stored scale
  // is zero keeps the levels of its own fit.
  const float superScale = fp16ToFp32(loadU16(block + kQ2KScaleOffset));
  const float superMin = fp16ToFp32(loadU16(block + kQ2KMinOffset));
  for (int j = 0; j < kQKK / 16; ++j) {
    const float d = superScale * (packedScales[j] & 0xF);
    if (d == 0.0f)
      continue;
    const float dm = superMin * (packedScales[j] >> 4);
    for (int i = 0; i < 16; ++i)
      levels[16 * j + i] = static_cast<uint8_t>(
          std::clamp(nearestInt((x[16 * j + i] + dm) / d), 0, 3));
  }
  packTwoBitLevels(levels, block + kQ2KQuantsOffset);
}

void dequantizeQ2_K(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block + kQ2KScaleOffset));
  const float min = fp16ToFp32(loadU16(block + kQ2KMinOffset));
  const uint8_t *packedScales = block;
  const uint8_t *quants = block + kQ2KQuantsOffset;
  int subBlock = 0;
  for (int n = 0; n < kQKK; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t packed = packedScales[subBlock++];
        const float scale = d * (packed & 0xF);
        const float offset = min * (packed >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = scale * ((quants[16 * half + l] >> shift) & 3) - offset;
      }
    }
    quants += 32;
  }
}

//===----------------------------------------------------------------------===//
// Q3_K: hmask[32] (third bit of each level), qs[64] (low 2 bits), 12 bytes of
// packed 6-bit scales (offset 32) for 16 sub-blocks of 16, f16 d;
// x = (d * (scale - 32)) * (q - 4).
//===----------------------------------------------------------------------===//

constexpr int kQ3KQuantsOffset = 32;
constexpr int kQ3KScalesOffset = 96;
constexpr int kQ3KScaleOffset = 108;

namespace {

/// ggml's make_q3_quants with do_rmse: symmetric levels in [-nmax, nmax - 1],
/// the value of largest magnitude mapped to -nmax, then up to five passes
/// moving single levels while the least-squares fit (weights x^2) improves.
/// Levels are stored + nmax; returns the scale.
float makeQ3Quants(int n, int nmax, const float *x, int8_t *levels) {
  const float max = largestMagnitudeValue(n, x);
  if (max == 0.0f) {
    for (int i = 0; i < n; ++i)
      levels[i] = 0;
    return 0.f;
  }
  const float inverseScale = -nmax / max;
  float sumLX = 0;
  float sumL2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearestInt(inverseScale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumLX += w * x[i] * l;
    sumL2 += w * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumLX - w * x[i] * levels[i];
      if (slx > 0) {
        float sl2 = sumL2 - w * levels[i] * levels[i];
        const int newLevel =
            std::clamp(nearestInt(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (newLevel != levels[i]) {
          slx += w * x[i] * newLevel;
          sl2 += w * newLevel * newLevel;
          if (sl2 > 0 && slx * slx * sumL2 > sumLX * sumLX * sl2) {
            levels[i] = static_cast<int8_t>(newLevel);
            sumLX = slx;
            sumL2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (!changed)
      break;
  }
  for (int i = 0; i < n; ++i)
    levels[i] = static_cast<int8_t>(levels[i] + nmax);
  return sumL2 > 0.0f ? sumLX / sumL2 : 0.0f;
}

/// Sub-block `j`'s 6-bit scale from Q3_K's 12 bytes: its low 4 bits in a
/// nibble of bytes 0-7, its top 2 bits in bytes 8-11.
int q3KScale(int j, const uint8_t *scales) {
  const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
  return low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

} // namespace

void quantizeQ3_K(const float *x, uint8_t *block) {
  int8_t levels[kQKK];
  float scales[kQKK / 16];

  float maxScale = 0;
  float amax = 0;
  for (int j = 0; j < kQKK / 16; ++j) {
    scales[j] = makeQ3Quants(16, 4, x + 16 * j, levels + 16 * j);
    const float scale = std::fabs(scales[j]);
    if (scale > amax) {
      amax = scale;
      maxScale = scales[j];
    }
  }

  uint8_t *packedScales = block + kQ3KScalesOffset;
  std::memset(packedScales, 0, 12);
  if (maxScale != 0.0f) {
    const float inverseScale = -32.f / maxScale;
    for (int j = 0; j < kQKK / 16; ++j) {
      // ggml stores nearest_int into an int8_t before clamping.
      int l = static_cast<int8_t>(nearestInt(inverseScale * scales[j]));
      l = std::clamp(l, -32, 31) + 32;
      if (j < 8)
        packedScales[j] = static_cast<uint8_t>(l & 0xF);
      else
        packedScales[j - 8] =
            static_cast<uint8_t>(packedScales[j - 8] | ((l & 0xF) << 4));
      l >>= 4;
      packedScales[j % 4 + 8] = static_cast<uint8_t>(
          packedScales[j % 4 + 8] | (l << (2 * (j / 4))));
    }
    storeU16(block + kQ3KScaleOffset, fp32ToFp16(1 / inverseScale));
  } else {
    storeU16(block + kQ3KScaleOffset, fp32ToFp16(0.f));
  }

  const float superScale = fp16ToFp32(loadU16(block + kQ3KScaleOffset));
  for (int j = 0; j < kQKK / 16; ++j) {
    const int scale = q3KScale(j, packedScales) - 32;
    const float d = superScale * scale;
    if (d == 0.0f)
      continue;
    for (int i = 0; i < 16; ++i)
      levels[16 * j + i] = static_cast<int8_t>(
          std::clamp(nearestInt(x[16 * j + i] / d), -4, 3) + 4);
  }

  // The third bit of levels 0-31 goes to bit 0 of hmask[0..31], of levels
  // 32-63 to bit 1, and so on.
  uint8_t *highBits = block;
  std::memset(highBits, 0, kQKK / 8);
  uint8_t lowLevels[kQKK];
  for (int j = 0; j < kQKK; ++j) {
    int level = levels[j];
    if (level > 3) {
      highBits[j % 32] = static_cast<uint8_t>(highBits[j % 32] | (1 << (j / 32)));
      level -= 4;
    }
    lowLevels[j] = static_cast<uint8_t>(level);
  }
  packTwoBitLevels(lowLevels, block + kQ3KQuantsOffset);
}

void dequantizeQ3_K(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block + kQ3KScaleOffset));
  const uint8_t *highBits = block;
  const uint8_t *quants = block + kQ3KQuantsOffset;
  const uint8_t *packedScales = block + kQ3KScalesOffset;
  int subBlock = 0;
  int mask = 1;
  for (int n = 0; n < kQKK; n += 128) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int half = 0; half < 2; ++half) {
        const float scale = d * (q3KScale(subBlock++, packedScales) - 32);
        for (int l = 0; l < 16; ++l) {
          const int low = (quants[16 * half + l] >> shift) & 3;
          const int high = (highBits[16 * half + l] & mask) ? 0 : 4;
          *y++ = scale * (low - high);
        }
      }
      mask <<= 1;
    }
    quants += 32;
  }
}

//===----------------------------------------------------------------------===//
// Q5_K: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (as Q4_K), qh[32]
// (fifth bit of each level), qs[128] (low nibbles); eight sub-blocks of 32;
// x = (d * scale) * q - (dmin * min).
//===----------------------------------------------------------------------===//

constexpr int kQ5KScalesOffset = 4; // the header of quantizeScaledMinBlock
constexpr int kQ5KHighOffset = 16;
constexpr int kQ5KQuantsOffset = 48;

void quantizeQ5_K(const float *x, uint8_t *block) {
  uint8_t levels[kQKK];
  quantizeScaledMinBlock(x, 31, -0.5f, 15, block, levels);

  uint8_t *highBits = block + kQ5KHighOffset;
  uint8_t *quants = block + kQ5KQuantsOffset;
  std::memset(highBits, 0, kQKK / 8);
  int lowMask = 1, highMask = 2;
  for (int n = 0; n < kQKK; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int low = levels[n + j];
      if (low > 15) {
        low -= 16;
        highBits[j] = static_cast<uint8_t>(highBits[j] | lowMask);
      }
      int high = levels[n + j + 32];
      if (high > 15) {
        high -= 16;
        highBits[j] = static_cast<uint8_t>(highBits[j] | highMask);
      }
      quants[j] = static_cast<uint8_t>(low | (high << 4));
    }
    lowMask <<= 2;
    highMask <<= 2;
    quants += 32;
  }
}

void dequantizeQ5_K(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block));
  const float dmin = fp16ToFp32(loadU16(block + 2));
  const uint8_t *packedScales = block + kQ5KScalesOffset;
  const uint8_t *highBits = block + kQ5KHighOffset;
  const uint8_t *quants = block + kQ5KQuantsOffset;
  int lowMask = 1, highMask = 2;
  for (int subBlock = 0; subBlock < kQKK / 32; subBlock += 2) {
    uint8_t scale, min;
    q4KScaleAndMin(subBlock, packedScales, &scale, &min);
    const float lowScale = d * scale;
    const float lowMin = dmin * min;
    q4KScaleAndMin(subBlock + 1, packedScales, &scale, &min);
    const float highScale = d * scale;
    const float highMin = dmin * min;
    for (int l = 0; l < 32; ++l)
      *y++ = lowScale * ((quants[l] & 0xF) + (highBits[l] & lowMask ? 16 : 0)) -
             lowMin;
    for (int l = 0; l < 32; ++l)
      *y++ = highScale * ((quants[l] >> 4) + (highBits[l] & highMask ? 16 : 0)) -
             highMin;
    quants += 32;
    lowMask <<= 2;
    highMask <<= 2;
  }
}

} // namespace hetrt::format::blocks
