// The CPU-feature probe: AMX is reported usable exactly when tile
// instructions run, and otherwise with the reason.
#include "runtime/core/CpuFeatures.h"

#include <gtest/gtest.h>

#include <immintrin.h>

#include <algorithm>
#include <cpuid.h>
#include <cstdint>
#include <cstring>

namespace {

using hetrt::core::hostAmxSupport;
using hetrt::core::hostCpuFeatures;

bool listed(const char *feature) {
  const auto &features = hostCpuFeatures();
  return std::find(features.begin(), features.end(), feature) != features.end();
}

TEST(CpuFeatures, AmxFeaturesFollowTheProbe) {
  const auto &amx = hostAmxSupport();
  EXPECT_EQ(listed("amx-tile"), amx.usable);
  EXPECT_EQ(listed("amx-int8"), amx.usable && amx.int8);
  EXPECT_EQ(listed("amx-bf16"), amx.usable && amx.bf16);
  if (!amx.usable)
    EXPECT_FALSE(amx.reason.empty());
}

TEST(CpuFeatures, NoAmxReasonNamesTheMissingPiece) {
  const auto &amx = hostAmxSupport();
  if (amx.usable)
    GTEST_SKIP() << "this CPU's AMX is usable";
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) >= 7)
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if (!(edx & (1u << 24)))
    EXPECT_NE(amx.reason.find("CPUID"), std::string::npos) << amx.reason;
  else
    EXPECT_TRUE(amx.reason.find("XCR0") != std::string::npos ||
                amx.reason.find("arch_prctl") != std::string::npos)
        << amx.reason;
}

// 64-byte tile configuration (palette 1): tiles 0-2, 16 rows each.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t startRow = 0;
  uint8_t reserved[14] = {};
  uint16_t columnBytes[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile,amx-int8"))) void
int8TileProduct(const int8_t *a, const int8_t *b, int32_t *c) {
  TileConfig config;
  for (int tile = 0; tile < 3; ++tile) {
    config.columnBytes[tile] = 64;
    config.rows[tile] = 16;
  }
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbssd(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
}

// Where the probe says AMX is usable, an int8 tile product runs (without the
// permission it would fault) and equals the scalar product.
TEST(CpuFeatures, UsableAmxComputesAnInt8TileProduct) {
  const auto &amx = hostAmxSupport();
  if (!amx.usable || !amx.int8)
    GTEST_SKIP() << "no usable AMX int8 here: " << amx.reason;
  // A: 16 × 64 int8. B in AMX's VNNI layout: 16 rows of 16 columns × 4 bytes,
  // B[k/4][n*4 + k%4] holding the k-th element of column n.
  int8_t a[16 * 64], b[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) {
    a[i] = static_cast<int8_t>((i * 7) % 255 - 127);
    b[i] = static_cast<int8_t>((i * 13) % 251 - 125);
  }
  int32_t c[16 * 16];
  int8TileProduct(a, b, c);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      int32_t expected = 0;
      for (int k = 0; k < 64; ++k)
        expected += int32_t(a[m * 64 + k]) * int32_t(b[(k / 4) * 64 + n * 4 + k % 4]);
      ASSERT_EQ(c[m * 16 + n], expected) << m << "," << n;
    }
}

} // namespace
