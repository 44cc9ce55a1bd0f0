// The memory manager over the CPU device: what each space holds follows
// the buffers' lives, a budget bounds what may be allocated, and copies
// between spaces are counted on both sides.
#include "runtime/core/MemorySpaces.h"

#include <gtest/gtest.h>

namespace {

using hetrt::core::MemoryManager;
using hetrt::core::MemoryRole;
using hetrt::core::MemorySpaceStats;

hetrt::hal::Device &cpu() { return *hetrt::hal::enumerateDevices().front(); }

TEST(MemoryManager, BuffersAreChargedToTheirSpaceUntilTheLastOwnerDrops) {
  MemoryManager memory;
  hetrt::hal::Error error;
  std::shared_ptr<hetrt::hal::Buffer> weights =
      memory.allocate(cpu(), 0, 4096, MemoryRole::Weights, "w", error);
  ASSERT_TRUE(weights) << error.message;
  std::shared_ptr<hetrt::hal::Buffer> work =
      memory.allocate(cpu(), 0, 1024, MemoryRole::Work, "a", error);
  ASSERT_TRUE(work) << error.message;
  EXPECT_EQ(weights->size(), 4096u);
  std::vector<MemorySpaceStats> spaces = memory.stats();
  ASSERT_EQ(spaces.size(), 1u);
  EXPECT_EQ(spaces[0].name, cpu().info().name + ".host");
  EXPECT_EQ(spaces[0].device, cpu().info().name);
  EXPECT_EQ(spaces[0].held(MemoryRole::Weights), 4096u);
  EXPECT_EQ(spaces[0].held(MemoryRole::Work), 1024u);
  // A second owner keeps the bytes held.
  std::shared_ptr<hetrt::hal::Buffer> alias = work;
  work.reset();
  EXPECT_EQ(memory.stats()[0].held(MemoryRole::Work), 1024u);
  alias.reset();
  EXPECT_EQ(memory.stats()[0].held(MemoryRole::Work), 0u);
  EXPECT_EQ(memory.stats()[0].held(), 4096u);
  EXPECT_EQ(memory.stats()[0].peakBytes, 5120u);
}

TEST(MemoryManager, ABudgetRefusesWhatWouldPassItAndNamesIt) {
  MemoryManager memory;
  hetrt::hal::Error error;
  size_t space = memory.spaceOf(cpu(), 0);
  ASSERT_TRUE(memory.setBudget(space, 8192, "the plan for test", error));
  auto kv = memory.allocate(cpu(), 0, 6000, MemoryRole::KvCache, "cache",
                            error);
  ASSERT_TRUE(kv) << error.message;
  auto more = memory.allocate(cpu(), 0, 2200, MemoryRole::Work,
                              "buffer \"act.0\"", error);
  EXPECT_FALSE(more);
  EXPECT_EQ(error.kind, hetrt::core::Failure::OutOfMemory);
  EXPECT_NE(error.message.find("buffer \"act.0\" (2200 bytes) would take " +
                               cpu().info().name +
                               ".host to 8200 bytes, past the budget of 8192 "
                               "bytes the plan for test sets"),
            std::string::npos)
      << error.message;
  // The refused bytes were never charged; what fits still does.
  EXPECT_EQ(memory.stats()[0].held(), 6000u);
  EXPECT_TRUE(memory.allocate(cpu(), 0, 2192, MemoryRole::Work, "b", error));
  // A budget below what is held is refused.
  EXPECT_FALSE(memory.setBudget(space, 4000, "a smaller plan", error));
  EXPECT_NE(error.message.find("already holds 6000 bytes"), std::string::npos)
      << error.message;
}

TEST(MemoryManager, CopiesCountOnBothSides) {
  MemoryManager memory;
  size_t host = memory.spaceOf(cpu(), 0);
  size_t disk = memory.namedSpace("disk");
  EXPECT_EQ(memory.namedSpace("disk"), disk);
  memory.recordMigration(host, disk, 3, 3000, 0);
  memory.recordMigration(disk, host, 1, 1000, 250);
  std::vector<MemorySpaceStats> spaces = memory.stats();
  EXPECT_EQ(spaces[host].migrationsOut, 3u);
  EXPECT_EQ(spaces[host].bytesOut, 3000u);
  EXPECT_EQ(spaces[host].migrationsIn, 1u);
  EXPECT_EQ(spaces[host].waitNanoseconds, 250u);
  EXPECT_EQ(spaces[disk].migrationsIn, 3u);
  EXPECT_EQ(spaces[disk].bytesOut, 1000u);
  EXPECT_EQ(spaces[disk].device, "");
}

} // namespace
