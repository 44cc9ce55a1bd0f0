// ggml's reference quantizers (quantize_row_{q8_0,q4_0,q4_K,q6_K}_ref; Q2_K,
// Q3_K and Q5_K are in KQuantsLowBit.cpp) and
// dequantizers, reproduced float operation for float operation so that the
// bytes and values equal those of ggml-quants.c, and the half/bfloat16
// conversions of ggml-impl.h.
#include "runtime/format/Quantize.h"
#include "runtime/format/QuantizeBlocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

// ggml builds its reference quantizers for the baseline target, where a*b+c is
// two roundings. Fusing it into one FMA (allowed by -ffp-contract once a target
// with FMA is chosen) would shift error sums and thereby the scales picked.
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

namespace hetrt::format {

using namespace blocks;

namespace {

constexpr int kQK8_0 = 32;
constexpr int kQK4_0 = 32;
float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// A C cast of a float to int8_t as compiled by GCC and Clang for x86-64
/// (convert to int32 truncating, keep the low byte). In range this is the
/// language's truncation; outside it, where C leaves the cast undefined, it
/// gives x86's defined answer instead of undefined behaviour.
int8_t castToInt8(float value) {
  if (!(value >= -2147483648.f && value < 2147483648.f))
    return 0; // cvttss2si's "integer indefinite" 0x80000000, low byte 0
  return static_cast<int8_t>(
      static_cast<uint8_t>(static_cast<uint32_t>(static_cast<int32_t>(value))));
}

// ggml's MAX macro: a NaN second operand wins, where std::max keeps the first.
float maxLikeGgml(float a, float b) { return a > b ? a : b; }

//===----------------------------------------------------------------------===//
// Q8_0: f16 d, int8 qs[32]; x = qs * d
//===----------------------------------------------------------------------===//

void quantizeQ8_0(const float *x, uint8_t *block) {
  float amax = 0.0f;
  for (int j = 0; j < kQK8_0; ++j)
    amax = maxLikeGgml(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  storeU16(block, fp32ToFp16(d));
  for (int j = 0; j < kQK8_0; ++j)
    block[2 + j] = static_cast<uint8_t>(castToInt8(std::round(x[j] * inverse)));
}

void dequantizeQ8_0(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block));
  for (int j = 0; j < kQK8_0; ++j)
    y[j] = static_cast<float>(static_cast<int8_t>(block[2 + j])) * d;
}

//===----------------------------------------------------------------------===//
// Q4_0: f16 d, qs[16]; element j is the low nibble of qs[j], element j+16 the
// high nibble; x = (nibble - 8) * d
//===----------------------------------------------------------------------===//

void quantizeQ4_0(const float *x, uint8_t *block) {
  // The signed value of largest magnitude (the first one on ties) maps to -8,
  // so the asymmetric range [-8, 7] is used fully on that value's side.
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQK4_0; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
  storeU16(block, fp32ToFp16(d));
  for (int j = 0; j < kQK4_0 / 2; ++j) {
    // +8.5 then truncation rounds half up, unlike Q8_0's roundf.
    const auto low = static_cast<uint8_t>(
        std::min(15, static_cast<int>(castToInt8(x[j] * inverse + 8.5f))));
    const auto high = static_cast<uint8_t>(std::min(
        15, static_cast<int>(castToInt8(x[j + kQK4_0 / 2] * inverse + 8.5f))));
    block[2 + j] = static_cast<uint8_t>(low | (high << 4));
  }
}

void dequantizeQ4_0(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block));
  for (int j = 0; j < kQK4_0 / 2; ++j) {
    const int low = (block[2 + j] & 0x0F) - 8;
    const int high = (block[2 + j] >> 4) - 8;
    y[j] = static_cast<float>(low) * d;
    y[j + kQK4_0 / 2] = static_cast<float>(high) * d;
  }
}

//===----------------------------------------------------------------------===//
// Q4_K: f16 d, f16 dmin, scales[12], qs[128]. Eight sub-blocks of 32 with 6-bit
// scale and min each; x = (d * scale) * q - (dmin * min).
//===----------------------------------------------------------------------===//

constexpr int kQ4KScalesOffset = 4;
constexpr int kQ4KQuantsOffset = 16;

} // namespace

float blocks::makeQkx2Quants(int n, int nmax, const float *x,
                             const float *weights,
                     uint8_t *levels, float *negatedMin, uint8_t *trialLevels,
                     float rmin, float rdelta, int steps, bool absoluteError) {
  float min = x[0];
  float max = x[0];
  float sumW = weights[0];
  float sumX = sumW * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min)
      min = x[i];
    if (x[i] > max)
      max = x[i];
    const float w = weights[i];
    sumW += w;
    sumX += w * x[i];
  }
  if (min > 0)
    min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i)
      levels[i] = 0;
    *negatedMin = -min;
    return 0.f;
  }
  float inverseScale = nmax / (max - min);
  float scale = 1 / inverseScale;
  float bestError = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearestInt(inverseScale * (x[i] - min));
    levels[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * levels[i] + min - x[i];
    diff = absoluteError ? std::fabs(diff) : diff * diff;
    bestError += weights[i] * diff;
  }
  if (steps < 1) {
    *negatedMin = -min;
    return scale;
  }
  for (int step = 0; step <= steps; ++step) {
    inverseScale = (rmin + rdelta * step + nmax) / (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(inverseScale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      trialLevels[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sumL += w * l;
      sumL2 += w * l * l;
      sumXL += w * l * x[i];
    }
    const float determinant = sumW * sumL2 - sumL * sumL;
    if (determinant > 0) {
      float trialScale = (sumW * sumXL - sumX * sumL) / determinant;
      float trialMin = (sumL2 * sumX - sumL * sumXL) / determinant;
      if (trialMin > 0) {
        trialMin = 0;
        trialScale = sumXL / sumL2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = trialScale * trialLevels[i] + trialMin - x[i];
        diff = absoluteError ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < bestError) {
        std::copy(trialLevels, trialLevels + n, levels);
        bestError = error;
        scale = trialScale;
        min = trialMin;
      }
    }
  }
  *negatedMin = -min;
  return scale;
}

void blocks::q4KScaleAndMin(int subBlock, const uint8_t *scales,
                           uint8_t *scale,
                    uint8_t *min) {
  if (subBlock < 4) {
    *scale = scales[subBlock] & 63;
    *min = scales[subBlock + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((scales[subBlock + 4] & 0xF) |
                                  ((scales[subBlock - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((scales[subBlock + 4] >> 4) |
                                ((scales[subBlock] >> 6) << 4));
  }
}

void blocks::quantizeScaledMinBlock(const float *x, int nmax, float rmin,
                                    int steps, uint8_t *block,
                                    uint8_t *levels) {
  uint8_t trialLevels[32];
  float weights[32];
  float mins[kQKK / 32];
  float scales[kQKK / 32];

  float maxScale = 0; // the min is subtracted, so scales are never negative
  float maxMin = 0;
  for (int j = 0; j < kQKK / 32; ++j) {
    const float *sub = x + 32 * j;
    float sumX2 = 0;
    for (int l = 0; l < 32; ++l)
      sumX2 += sub[l] * sub[l];
    const float averageMagnitude = std::sqrt(sumX2 / 32);
    for (int l = 0; l < 32; ++l)
      weights[l] = averageMagnitude + std::fabs(sub[l]);
    scales[j] = makeQkx2Quants(32, nmax, sub, weights, levels + 32 * j,
                               &mins[j], trialLevels, rmin, 0.1f, steps, false);
    if (scales[j] > maxScale)
      maxScale = scales[j];
    if (mins[j] > maxMin)
      maxMin = mins[j];
  }

  uint8_t *packedScales = block + kQ4KScalesOffset;
  const float inverseScale = maxScale > 0 ? 63.f / maxScale : 0.f;
  const float inverseMin = maxMin > 0 ? 63.f / maxMin : 0.f;
  for (int j = 0; j < kQKK / 32; ++j) {
    // A negative nearestInt wraps through uint8_t and is then capped at 63,
    // exactly as ggml's uint8_t assignment and MIN do.
    auto scale = static_cast<uint8_t>(nearestInt(inverseScale * scales[j]));
    auto min = static_cast<uint8_t>(nearestInt(inverseMin * mins[j]));
    scale = std::min<uint8_t>(63, scale);
    min = std::min<uint8_t>(63, min);
    if (j < 4) {
      packedScales[j] = scale;
      packedScales[j + 4] = min;
    } else {
      packedScales[j + 4] =
          static_cast<uint8_t>((scale & 0xF) | ((min & 0xF) << 4));
      packedScales[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
      packedScales[j] |= static_cast<uint8_t>((min >> 4) << 6);
    }
  }
  const uint16_t superScale = fp32ToFp16(maxScale / 63.f);
  const uint16_t superMin = fp32ToFp16(maxMin / 63.f);
  storeU16(block, superScale);
  storeU16(block + 2, superMin);

  // Requantize against the scales as stored (6-bit, f16-rounded). A sub-block
  // whose stored scale is zero keeps the levels of its own fit.
  for (int j = 0; j < kQKK / 32; ++j) {
    uint8_t scale, min;
    q4KScaleAndMin(j, packedScales, &scale, &min);
    const float d = fp16ToFp32(superScale) * scale;
    if (d == 0.0f)
      continue;
    const float dm = fp16ToFp32(superMin) * min;
    for (int i = 0; i < 32; ++i) {
      const int l = nearestInt((x[32 * j + i] + dm) / d);
      levels[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    }
  }
}

namespace {

void quantizeQ4_K(const float *x, uint8_t *block) {
  uint8_t levels[kQKK];
  quantizeScaledMinBlock(x, 15, -1.f, 20, block, levels);

  uint8_t *quants = block + kQ4KQuantsOffset;
  for (int j = 0; j < kQKK; j += 64) {
    for (int l = 0; l < 32; ++l)
      quants[l] =
          static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    quants += 32;
  }
}

void dequantizeQ4_K(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block));
  const float dmin = fp16ToFp32(loadU16(block + 2));
  const uint8_t *packedScales = block + kQ4KScalesOffset;
  const uint8_t *quants = block + kQ4KQuantsOffset;
  for (int subBlock = 0; subBlock < kQKK / 32; subBlock += 2) {
    uint8_t scale, min;
    q4KScaleAndMin(subBlock, packedScales, &scale, &min);
    const float lowScale = d * scale;
    const float lowMin = dmin * min;
    q4KScaleAndMin(subBlock + 1, packedScales, &scale, &min);
    const float highScale = d * scale;
    const float highMin = dmin * min;
    for (int l = 0; l < 32; ++l)
      *y++ = lowScale * (quants[l] & 0xF) - lowMin;
    for (int l = 0; l < 32; ++l)
      *y++ = highScale * (quants[l] >> 4) - highMin;
    quants += 32;
  }
}

//===----------------------------------------------------------------------===//
// Q6_K: ql[128], qh[64], int8 scales[16], f16 d. Sixteen sub-blocks of 16;
// x = (d * scale) * (q - 32) with q 6-bit.
//===----------------------------------------------------------------------===//

constexpr int kQ6KHighOffset = 128;
constexpr int kQ6KScalesOffset = 192;
constexpr int kQ6KSuperScaleOffset = 208;

/// ggml's make_qx_quants with rmse_type 1 and no importance weights: symmetric
/// levels in [-nmax, nmax - 1] (stored + nmax), the value of largest magnitude
/// mapped to -nmax, then 18 nearby inverse scales tried, keeping the one whose
/// least-squares scale (weights x^2) explains the most of sum(w x^2).
float makeQxQuants(int n, int nmax, const float *x, int8_t *levels) {
  const float max = largestMagnitudeValue(n, x);
  if (max == 0.0f) {
    for (int i = 0; i < n; ++i)
      levels[i] = 0;
    return 0.f;
  }
  float inverseScale = -nmax / max;
  float sumLX = 0;
  float sumL2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearestInt(inverseScale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    levels[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumLX += w * x[i] * l;
    sumL2 += w * l * l;
  }
  float scale = sumL2 != 0.0f ? sumLX / sumL2 : 0.0f;
  float best = scale * sumLX;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0)
      continue;
    inverseScale = -(nmax + 0.1f * step) / max;
    sumLX = sumL2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearestInt(inverseScale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumLX += w * x[i] * l;
      sumL2 += w * l * l;
    }
    if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearestInt(inverseScale * x[i]);
        levels[i] =
            static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumLX / sumL2;
      best = scale * sumLX;
    }
  }
  return scale;
}

void quantizeQ6_K(const float *x, uint8_t *block) {
  int8_t levels[kQKK];
  float scales[kQKK / 16];

  float maxScale = 0;
  float maxAbsScale = 0;
  for (int j = 0; j < kQKK / 16; ++j) {
    scales[j] = makeQxQuants(16, 32, x + 16 * j, levels + 16 * j);
    const float absScale = std::fabs(scales[j]);
    if (absScale > maxAbsScale) {
      maxAbsScale = absScale;
      maxScale = scales[j];
    }
  }

  if (maxAbsScale < kGroupMaxEps) {
    std::memset(
        block, 0,
        static_cast<size_t>(blockLayout(BlockFormat::Q6_K).bytesPerBlock));
    return;
  }

  // The signed scale of largest magnitude maps to -128, using int8's full
  // range.
  const float inverseScale = -128.f / maxScale;
  const uint16_t superScale = fp32ToFp16(1 / inverseScale);
  storeU16(block + kQ6KSuperScaleOffset, superScale);
  auto *subScales = reinterpret_cast<int8_t *>(block + kQ6KScalesOffset);
  for (int j = 0; j < kQKK / 16; ++j)
    subScales[j] = static_cast<int8_t>(
        std::min(127, nearestInt(inverseScale * scales[j])));

  // Requantize against the stored scales; a zero one keeps its own fit's
  // levels.
  for (int j = 0; j < kQKK / 16; ++j) {
    const float d = fp16ToFp32(superScale) * subScales[j];
    if (d == 0.0f)
      continue;
    for (int i = 0; i < 16; ++i) {
      int l = nearestInt(x[16 * j + i] / d);
      l = std::max(-32, std::min(31, l));
      levels[16 * j + i] = static_cast<int8_t>(l + 32);
    }
  }

  // Each 128-element half: ql[l] holds elements l (low nibble) and l+64 (high),
  // ql[l+32] elements l+32 and l+96; qh[l] holds the top 2 bits of all four.
  uint8_t *low = block;
  uint8_t *high = block + kQ6KHighOffset;
  for (int j = 0; j < kQKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = levels[j + l];
      const int q2 = levels[j + l + 32];
      const int q3 = levels[j + l + 64];
      const int q4 = levels[j + l + 96];
      low[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      low[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      high[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) |
                                     ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
    low += 64;
    high += 32;
  }
}

void dequantizeQ6_K(const uint8_t *block, float *y) {
  const float d = fp16ToFp32(loadU16(block + kQ6KSuperScaleOffset));
  const uint8_t *low = block;
  const uint8_t *high = block + kQ6KHighOffset;
  const auto *subScales =
      reinterpret_cast<const int8_t *>(block + kQ6KScalesOffset);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      const int subBlock = l / 16;
      const int q1 = ((low[l] & 0xF) | (((high[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((low[l + 32] & 0xF) | (((high[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((low[l] >> 4) | (((high[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((low[l + 32] >> 4) | (((high[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * subScales[subBlock] * q1;
      y[l + 32] = d * subScales[subBlock + 2] * q2;
      y[l + 64] = d * subScales[subBlock + 4] * q3;
      y[l + 96] = d * subScales[subBlock + 6] * q4;
    }
    y += 128;
    low += 64;
    high += 32;
    subScales += 8;
  }
}

} // namespace

float fp16ToFp32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return floatFromBits(sign | floatBits(magnitude));
  }
  if (exponent == 0x1F) {
    // Infinity, or a NaN made quiet (what ggml's float multiply and F16C do).
    const uint32_t quiet = mantissa != 0 ? 0x00400000 : 0;
    return floatFromBits(sign | 0x7F800000 | quiet | (mantissa << 13));
  }
  return floatFromBits(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t fp32ToFp16(float value) {
  const uint32_t bits = floatBits(value);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t magnitude = bits & 0x7FFFFFFF;
  if (magnitude > 0x7F800000)
    return static_cast<uint16_t>(sign | 0x7E00);
  if (magnitude >= 0x47800000) // 65536 and up, infinity included
    return static_cast<uint16_t>(sign | 0x7C00);
  if (magnitude >= 0x38800000) {
    // Normal in half: rebias the exponent, drop 13 mantissa bits rounding to
    // nearest even. A carry out of the mantissa bumps the exponent, and past
    // 65504 reaches 0x7C00, infinity, as it should.
    const uint32_t rebased = magnitude - ((127 - 15) << 23);
    uint32_t half = rebased >> 13;
    const uint32_t rest = rebased & 0x1FFF;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Subnormal in half: the value in units of 2^-24 is significand * 2^(e - 126)
  // with e the float's biased exponent, rounded to nearest even.
  const uint32_t exponent = magnitude >> 23;
  if (exponent < 102) // below 2^-25: rounds to zero (2^-25 itself ties to 0)
    return sign;
  const uint32_t significand = (magnitude & 0x7FFFFF) | 0x800000;
  const uint32_t shift = 126 - exponent; // 14..24
  uint32_t half = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

float bf16ToFp32(uint16_t bits) {
  return floatFromBits(static_cast<uint32_t>(bits) << 16);
}

uint16_t fp32ToBf16(float value) {
  const uint32_t bits = floatBits(value);
  if ((bits & 0x7FFFFFFF) > 0x7F800000)
    return static_cast<uint16_t>((bits >> 16) | 64);
  return static_cast<uint16_t>((bits + (0x7FFF + ((bits >> 16) & 1))) >> 16);
}

namespace {

/// The per-block functions of `format`, or nulls for plain-float formats.
struct BlockCodec {
  void (*quantize)(const float *, uint8_t *);
  void (*dequantize)(const uint8_t *, float *);
};

BlockCodec blockCodec(BlockFormat format) {
  switch (format) {
  case BlockFormat::Q8_0:
    return {quantizeQ8_0, dequantizeQ8_0};
  case BlockFormat::Q4_0:
    return {quantizeQ4_0, dequantizeQ4_0};
  case BlockFormat::Q4_K:
    return {quantizeQ4_K, dequantizeQ4_K};
  case BlockFormat::Q6_K:
    return {quantizeQ6_K, dequantizeQ6_K};
  case BlockFormat::Q2_K:
    return {quantizeQ2_K, dequantizeQ2_K};
  case BlockFormat::Q3_K:
    return {quantizeQ3_K, dequantizeQ3_K};
  case BlockFormat::Q5_K:
    return {quantizeQ5_K, dequantizeQ5_K};
  case BlockFormat::F32:
  case BlockFormat::F16:
  case BlockFormat::BF16:
    break;
  }
  return {nullptr, nullptr};
}

/// Whether `count` elements of `format` form whole blocks; also rejects values
/// outside the enum, whose zero block size storageBytes cannot take.
bool isWholeBlocks(BlockFormat format, int64_t count) {
  if (blockLayout(format).blockSize == 0)
    return false;
  return storageBytes(format, count).has_value();
}

} // namespace

bool quantizeRow(BlockFormat format, const float *source, int64_t count,
                 uint8_t *destination) {
  if (!isWholeBlocks(format, count))
    return false;
  if (count == 0) // memcpy wants valid pointers even for no bytes
    return true;
  switch (format) {
  case BlockFormat::F32:
    std::memcpy(destination, source,
                static_cast<size_t>(count) * sizeof(float));
    return true;
  case BlockFormat::F16:
    for (int64_t i = 0; i < count; ++i)
      storeU16(destination + 2 * i, fp32ToFp16(source[i]));
    return true;
  case BlockFormat::BF16:
    for (int64_t i = 0; i < count; ++i)
      storeU16(destination + 2 * i, fp32ToBf16(source[i]));
    return true;
  default:
    break;
  }
  const BlockLayout layout = blockLayout(format);
  const BlockCodec codec = blockCodec(format);
  for (int64_t block = 0; block < count / layout.blockSize; ++block)
    codec.quantize(source + block * layout.blockSize,
                   destination + block * layout.bytesPerBlock);
  return true;
}

bool dequantizeRow(BlockFormat format, const uint8_t *source, int64_t count,
                   float *destination) {
  if (!isWholeBlocks(format, count))
    return false;
  if (count == 0)
    return true;
  switch (format) {
  case BlockFormat::F32:
    std::memcpy(destination, source,
                static_cast<size_t>(count) * sizeof(float));
    return true;
  case BlockFormat::F16:
    for (int64_t i = 0; i < count; ++i)
      destination[i] = fp16ToFp32(loadU16(source + 2 * i));
    return true;
  case BlockFormat::BF16:
    for (int64_t i = 0; i < count; ++i)
      destination[i] = bf16ToFp32(loadU16(source + 2 * i));
    return true;
  default:
    break;
  }
  const BlockLayout layout = blockLayout(format);
  const BlockCodec codec = blockCodec(format);
  for (int64_t block = 0; block < count / layout.blockSize; ++block)
    codec.dequantize(source + block * layout.bytesPerBlock,
                     destination + block * layout.blockSize);
  return true;
}

std::optional<std::vector<uint8_t>> quantizeMatrix(BlockFormat format,
                                                   const float *source,
                                                   int64_t rows,
                                                   int64_t columns) {
  if (rows < 0 || !isWholeBlocks(format, columns))
    return std::nullopt;
  const int64_t rowBytes = *storageBytes(format, columns);
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * rowBytes));
  for (int64_t row = 0; row < rows; ++row)
    quantizeRow(format, source + row * columns, columns,
                bytes.data() + row * rowBytes);
  return bytes;
}

} // namespace hetrt::format
