// Pieces shared by the files that reproduce ggml's block quantizers: the
// byte order of block fields, ggml's rounding helper and its least-squares
// level fits, and the per-block codecs of the formats defined outside
// Quantize.cpp. Internal to the runtime's format library.
#ifndef HETRT_FORMAT_QUANTIZEBLOCKS_H
#define HETRT_FORMAT_QUANTIZEBLOCKS_H

#include <cstdint>
#include <cstring>

namespace hetrt::format::blocks {

constexpr int kQKK = 256; // QK_K: super-block size of the k-quants
// Below this largest |value| ggml treats a group as all zero (GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Blocks are little-endian on disk whatever the host is.
inline uint16_t loadU16(const uint8_t *bytes) {
  return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));
}

inline void storeU16(uint8_t *bytes, uint16_t value) {
  bytes[0] = static_cast<uint8_t>(value);
  bytes[1] = static_cast<uint8_t>(value >> 8);
}

/// ggml's nearest_int: adding 1.5 * 2^23 leaves round(value) (ties to even, the
/// FPU's mode) in the low mantissa bits. Only meaningful for |value| < 2^22,
/// which ggml asserts; outside it this returns the same meaningless int ggml's
/// code does.
inline int nearestInt(float value) {
  uint32_t bits = floatBits(value + 12582912.f);
  return static_cast<int>(bits & 0x007fffff) - 0x00400000;
}

/// The value of largest magnitude in x[0..n) (the first of ties), or 0 when
/// every |x| is below kGroupMaxEps: the start of ggml's symmetric fits
/// (make_qx_quants, make_q3_quants), which treat such a group as all zero.
inline float largestMagnitudeValue(int n, const float *x) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = x[i] < 0 ? -x[i] : x[i];
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return amax < kGroupMaxEps ? 0.f : max;
}

/// ggml's make_qkx2_quants: fits x ~ scale * L + min (min <= 0, L in [0, nmax])
/// by weighted least squares over `steps` + 1 trial inverse scales around
/// nmax / (max - min), keeping the fit with the smallest weighted error
/// (squared, or absolute with `absoluteError`). Writes the levels to `levels`
/// and -min to `negatedMin`; returns the scale.
float makeQkx2Quants(int n, int nmax, const float *x, const float *weights,
                     uint8_t *levels, float *negatedMin, uint8_t *trialLevels,
                     float rmin, float rdelta, int steps, bool absoluteError);

/// ggml's get_scale_min_k4: the 6-bit scale and min of sub-block `subBlock`
/// (0-7) from the 12 packed bytes Q4_K and Q5_K share.
void q4KScaleAndMin(int subBlock, const uint8_t *scales, uint8_t *scale,
                    uint8_t *min);

/// Q4_K's and Q5_K's shared part of ggml's quantize_row_q{4,5}_K_ref: fits
/// the 8 sub-blocks of 32 values of `x` to levels 0..nmax (make_qkx2_quants
/// with weights |x| + RMS, trial inverse scales from rmin in steps of 0.1),
/// packs their 6-bit scales and mins into block[4..16) and d, dmin into
/// block[0..4), and requantizes `levels` against the scales as stored.
void quantizeScaledMinBlock(const float *x, int nmax, float rmin, int steps,
                            uint8_t *block, uint8_t *levels);

/// ggml's quantize_row_q{2,3,5}_K_ref and dequantize_row_q{2,3,5}_K for one
/// super-block of 256 values (KQuantsLowBit.cpp).
void quantizeQ2_K(const float *x, uint8_t *block);
void dequantizeQ2_K(const uint8_t *block, float *y);
void quantizeQ3_K(const float *x, uint8_t *block);
void dequantizeQ3_K(const uint8_t *block, float *y);
void quantizeQ5_K(const float *x, uint8_t *block);
void dequantizeQ5_K(const uint8_t *block, float *y);

} // namespace hetrt::format::blocks

#endif // HETRT_FORMAT_QUANTIZEBLOCKS_H
