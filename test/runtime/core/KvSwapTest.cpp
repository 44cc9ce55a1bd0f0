// The KV cache's tiers on their own: blocks stored in host memory up to its
// budget, then in the disk file, come back as they went (exact) or within
// half a step of their row's scale (int8), and a full tier is an error that
// says so.
#include "runtime/core/HostNodes.h"
#include "runtime/core/KvSwap.h"
#include "runtime/format/Quantize.h"

#include <gtest/gtest.h>
#include <hwloc.h>

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

TEST(HostNodes, MemoryOnANodeIsBoundToIt) {
  if (hetrt::core::hostNodes().empty())
    GTEST_SKIP() << "hwloc finds no NUMA node on this host";
  const hetrt::core::HostNode &node = hetrt::core::hostNodes().front();
  std::string error;
  std::unique_ptr<hetrt::core::NodeMemory> memory =
      hetrt::core::NodeMemory::allocate(node.index, 1 << 20, error);
  ASSERT_TRUE(memory) << error;
  std::memset(memory->data(), 1, memory->size());
  // The kernel's own record of the range's policy.
  hwloc_topology_t topology;
  ASSERT_EQ(hwloc_topology_init(&topology), 0);
  ASSERT_EQ(hwloc_topology_load(topology), 0);
  hwloc_bitmap_t nodes = hwloc_bitmap_alloc();
  hwloc_membind_policy_t policy;
  ASSERT_EQ(hwloc_get_area_membind(topology, memory->data(), memory->size(),
                                   nodes, &policy, HWLOC_MEMBIND_BYNODESET),
            0);
  EXPECT_EQ(policy, HWLOC_MEMBIND_BIND);
  EXPECT_EQ(hwloc_bitmap_weight(nodes), 1);
  EXPECT_TRUE(hwloc_bitmap_isset(nodes, node.index));
  hwloc_bitmap_free(nodes);
  hwloc_topology_destroy(topology);
  // A node the host lacks is refused, naming it.
  EXPECT_FALSE(hetrt::core::NodeMemory::allocate(4095, 4096, error));
  EXPECT_NE(error.find("numa4095"), std::string::npos) << error;
  EXPECT_FALSE(hetrt::core::hostNodeNamed("numa4095", error));
  EXPECT_NE(error.find("its nodes are numa" + std::to_string(node.index)),
            std::string::npos)
      << error;
}

TEST(KvSwapSpace, AHostTierOnANodeKeepsBlocksThereAndLeavesItHalfFree) {
  if (hetrt::core::hostNodes().empty())
    GTEST_SKIP() << "hwloc finds no NUMA node on this host";
  constexpr size_t kRows = 8, kBlockBytes = kRows * 16 * 4;
  std::mt19937 random(5);
  // Two slabs of the node's memory: 20 blocks.
  hetrt::core::HostNode node = hetrt::core::hostNodes().front();
  KvSwapSpace tiers(kBlockBytes, /*hostBlocks=*/20, /*diskBlocks=*/0,
                    testing::TempDir(), KvTierFormat::Exact, {}, node);
  std::vector<std::vector<std::byte>> blocks;
  std::vector<KvSwapSpace::Handle> handles;
  std::string error;
  for (int i = 0; i < 20; ++i) {
    blocks.push_back(randomBlock(random, kRows));
    std::optional<KvSwapSpace::Handle> handle =
        tiers.store(blocks.back().data(), error);
    ASSERT_TRUE(handle) << error;
    EXPECT_FALSE(handle->onDisk);
    handles.push_back(*handle);
  }
  EXPECT_FALSE(tiers.store(blocks[0].data(), error));
  // Out of order, so slots of both slabs are freed and taken again.
  for (size_t i : {19u, 3u, 16u, 0u}) {
    std::vector<std::byte> back(kBlockBytes);
    ASSERT_TRUE(tiers.load(handles[i], back.data(), error)) << error;
    EXPECT_EQ(back, blocks[i]) << i;
    blocks[i] = randomBlock(random, kRows);
    std::optional<KvSwapSpace::Handle> again =
        tiers.store(blocks[i].data(), error);
    ASSERT_TRUE(again) << error;
    handles[i] = *again;
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<std::byte> back(kBlockBytes);
    ASSERT_TRUE(tiers.load(handles[i], back.data(), error)) << error;
    EXPECT_EQ(back, blocks[i]) << i;
  }
  // A node of 64 blocks' bytes takes 32 of them, whatever the budget.
  node.capacityBytes = 64 * kBlockBytes;
  KvSwapSpace small(kBlockBytes, /*hostBlocks=*/1000, 0, testing::TempDir(),
                    KvTierFormat::Exact, {}, node);
  EXPECT_EQ(small.hostBlocks(), 32);
}

} // namespace
