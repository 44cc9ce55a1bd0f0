// An 80-layer decoder as a 162-unit chain (embedding, attention and FFN per
// layer, output) on a GPU-and-host system: the DP must stay fast and agree
// with the MIP.
#include "RandomProblems.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

namespace {

using namespace hetc::partition;

struct SystemShape {
  int numGpus = 1;
  bool cxl = false;
  /// Per-layer byte figures vary by up to this fraction (0: identical
  /// layers).
  double jitter = 0;
  int numLayers = 80;
  /// ChainDpOptions::byteGranularity for the DP.
  uint64_t granularity = 0;
};

/// Seconds to read `bytes` at `gbPerS`.
double readSeconds(uint64_t bytes, double gbPerS) {
  return static_cast<double>(bytes) / (gbPerS * 1e9);
}

/// A 70B-class Q4 model (about 61 GB of weights and KV cache) on one or two
/// 24 GB GPUs, a 48 GB host and optionally a CXL expander. Attention can run
/// on a GPU with its weights and KV cache each in that GPU's memory or
/// streamed from host memory over PCIe, or on the host from DRAM or CXL; an
/// FFN likewise without the KV cache. Costs are decode-step seconds.
Problem decoderChain(const SystemShape &shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Problem problem;
  std::vector<int> gpuMemory;
  for (int g = 0; g < shape.numGpus; ++g) {
    problem.devices.push_back("gpu" + std::to_string(g));
    gpuMemory.push_back(static_cast<int>(problem.memories.size()));
    problem.memories.push_back(
        {"gpu" + std::to_string(g) + ".hbm", 24'000'000'000});
  }
  int cpu = shape.numGpus;
  problem.devices.push_back("cpu");
  int dram = static_cast<int>(problem.memories.size());
  problem.memories.push_back({"cpu.dram", 48'000'000'000});
  int cxl = -1;
  if (shape.cxl) {
    cxl = static_cast<int>(problem.memories.size());
    problem.memories.push_back({"cxl0", 16'000'000'000});
  }
  size_t numDevices = problem.devices.size(),
         numMemories = problem.memories.size();
  auto vary = [&](uint64_t bytes) {
    double factor =
        1 + shape.jitter * std::uniform_real_distribution<double>(-1, 1)(rng);
    return static_cast<uint64_t>(static_cast<double>(bytes) * factor);
  };
  auto holding = [&](std::initializer_list<std::pair<int, uint64_t>> held) {
    std::vector<uint64_t> bytes(numMemories, 0);
    for (auto [memory, amount] : held)
      bytes[memory] += amount;
    return bytes;
  };
  // Weights and KV read where they live: HBM at 3 TB/s, host memory over
  // PCIe at 25 GB/s, DRAM by the host at 80 GB/s, CXL at 30 GB/s.
  auto addUnit = [&](const std::string &name, uint64_t weights, uint64_t kv) {
    Unit unit;
    unit.name = name;
    for (int g = 0; g < shape.numGpus; ++g) {
      int hbm = gpuMemory[g];
      for (bool weightsHome : {true, false})
        for (bool kvHome : {true, false}) {
          if (kv == 0 && !kvHome)
            continue;
          double seconds = 5e-6 +
                           readSeconds(weights, weightsHome ? 3000 : 25) +
                           readSeconds(kv, kvHome ? 3000 : 25);
          unit.options.push_back({g, seconds,
                                  holding({{weightsHome ? hbm : dram, weights},
                                           {kvHome ? hbm : dram, kv}})});
        }
    }
    unit.options.push_back(
        {cpu, readSeconds(weights + kv, 80), holding({{dram, weights + kv}})});
    if (cxl >= 0)
      unit.options.push_back({cpu,
                              readSeconds(weights, 30) + readSeconds(kv, 80),
                              holding({{cxl, weights}, {dram, kv}})});
    problem.units.push_back(unit);
    int index = static_cast<int>(problem.units.size()) - 1;
    if (index == 0)
      return;
    // 16 KB of activations: PCIe between GPU and host, NVLink between GPUs.
    std::vector<double> transfer(numDevices * numDevices, 0);
    for (size_t a = 0; a < numDevices; ++a)
      for (size_t b = 0; b < numDevices; ++b)
        if (a != b)
          transfer[a * numDevices + b] =
              static_cast<int>(a) == cpu || static_cast<int>(b) == cpu
                  ? 10e-6 + readSeconds(16384, 25)
                  : 3e-6 + readSeconds(16384, 400);
    problem.edges.push_back({index - 1, index, transfer});
  };
  addUnit("token_embd", 600'000'000, 0);
  for (int layer = 0; layer < shape.numLayers; ++layer) {
    addUnit("blk." + std::to_string(layer) + ".attn", vary(90'000'000),
            vary(33'554'432));
    addUnit("blk." + std::to_string(layer) + ".ffn", vary(500'000'000), 0);
  }
  addUnit("output", 600'000'000, 0);
  return problem;
}

class LargeChain : public ::testing::TestWithParam<SystemShape> {};

/// 80 layers: the DP must stay fast and its plan fit; layers that differ
/// (jitter) need a byte granularity to stay fast. GLPK cannot prove
/// optimality on chains this long within a test's time (identical layers
/// make its branch and bound symmetric), so its best plan within the limit
/// must simply be no better than the DP's.
TEST_P(LargeChain, DpIsFeasibleAndNoWorseThanTheMip) {
  const SystemShape &shape = GetParam();
  Problem problem = decoderChain(shape, 42);
  ASSERT_EQ(problem.units.size(), 162u);
  ASSERT_TRUE(isChain(problem));
  ChainDpOptions dpOptions;
  dpOptions.byteGranularity = shape.granularity;
  auto start = std::chrono::steady_clock::now();
  Result dp = solveChainDp(problem, dpOptions);
  double dpSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(dp) << dp.error;
  for (size_t m = 0; m < problem.memories.size(); ++m)
    EXPECT_LE(dp.plan->bytesUsed[m], problem.memories[m].capacityBytes);
  // The GPU is the fast place: a good plan fills it.
  EXPECT_GT(dp.plan->bytesUsed[0],
            problem.memories[0].capacityBytes * 99 / 100);

  MipOptions mipOptions;
  mipOptions.timeLimitSeconds = 5;
  Result mip = solveMip(problem, mipOptions);
  ASSERT_TRUE(mip) << mip.error;
  EXPECT_TRUE(mip.plan->fits(problem));
  // The exact DP is optimal, so no plan the MIP finds in its time can beat
  // it. A rounded DP is compared only in the printout: the MIP's best within
  // a time limit depends on the machine, and a test must not.
  if (shape.granularity <= 1)
    EXPECT_LE(dp.plan->objective, mip.plan->objective * (1 + 1e-9));
  if (mip.optimal && shape.granularity <= 1)
    EXPECT_NEAR(dp.plan->objective, mip.plan->objective,
                1e-7 * dp.plan->objective);
  std::printf("%zu devices, %zu memories, granularity %llu: DP %.9g s in "
              "%.3f s; MIP %s %.9g s\n",
              problem.devices.size(), problem.memories.size(),
              static_cast<unsigned long long>(shape.granularity),
              dp.plan->objective, dpSeconds,
              mip.optimal ? "optimal" : "best within 5 s", mip.plan->objective);
}

INSTANTIATE_TEST_SUITE_P(Systems, LargeChain,
                         ::testing::Values(SystemShape{1, false, 0},
                                           SystemShape{1, false, 0.05, 80,
                                                       1 << 24}));

class MidChain : public ::testing::TestWithParam<SystemShape> {};

/// The same systems with few enough layers for GLPK to prove its plan
/// optimal: the exact DP must reach the same objective.
TEST_P(MidChain, DpEqualsTheProvenMip) {
  const SystemShape &shape = GetParam();
  Problem problem = decoderChain(shape, 7);
  // A smaller model on the same memories would fit the GPU alone.
  for (Memory &memory : problem.memories)
    memory.capacityBytes = memory.capacityBytes * shape.numLayers / 80;
  auto start = std::chrono::steady_clock::now();
  Result dp = solveChainDp(problem);
  auto middle = std::chrono::steady_clock::now();
  ASSERT_TRUE(dp) << dp.error;
  EXPECT_TRUE(dp.plan->fits(problem));
  Result mip = solveMip(problem);
  std::printf(
      "%zu units, %zu memories: DP %.3f s, MIP %.3f s\n", problem.units.size(),
      problem.memories.size(),
      std::chrono::duration<double>(middle - start).count(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - middle)
          .count());
  ASSERT_TRUE(mip) << mip.error;
  ASSERT_TRUE(mip.optimal);
  EXPECT_NEAR(dp.plan->objective, mip.plan->objective,
              1e-7 * dp.plan->objective);
}

INSTANTIATE_TEST_SUITE_P(Systems, MidChain,
                         ::testing::Values(SystemShape{1, false, 0, 6},
                                           SystemShape{1, false, 0.05, 6},
                                           SystemShape{1, true, 0, 6}));

} // namespace
