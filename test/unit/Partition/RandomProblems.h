// Seeded random placement problems for the solver tests: small chains and
// DAGs with capacities drawn so that some instances fit and some do not.
#ifndef HETC_TEST_UNIT_PARTITION_RANDOMPROBLEMS_H
#define HETC_TEST_UNIT_PARTITION_RANDOMPROBLEMS_H

#include "hetc/Partition/Partition.h"

#include <random>

namespace hetc::partition::testing {

inline int uniform(std::mt19937_64 &rng, int low, int high) {
  return std::uniform_int_distribution<int>(low, high)(rng);
}

/// A transfer table with random off-diagonal costs in [0, high].
inline std::vector<double> randomTransfer(std::mt19937_64 &rng,
                                          size_t numDevices, int high) {
  std::vector<double> table(numDevices * numDevices, 0);
  for (size_t a = 0; a < numDevices; ++a)
    for (size_t b = 0; b < numDevices; ++b)
      if (a != b)
        table[a * numDevices + b] = uniform(rng, 0, high) * 0.5;
  return table;
}

/// Units with 1..maxOptions options on random devices, values that are
/// sometimes equal (ties), bytes that are often 0, and per memory a capacity
/// between nothing and everything the units could hold.
inline Problem randomUnits(std::mt19937_64 &rng, int numUnits, int maxOptions) {
  Problem problem;
  int numDevices = uniform(rng, 1, 3), numMemories = uniform(rng, 1, 3);
  for (int d = 0; d < numDevices; ++d)
    problem.devices.push_back("dev" + std::to_string(d));
  for (int m = 0; m < numMemories; ++m)
    problem.memories.push_back({"mem" + std::to_string(m), 0});
  std::vector<uint64_t> worst(numMemories, 0);
  for (int u = 0; u < numUnits; ++u) {
    Unit unit;
    unit.name = "u" + std::to_string(u);
    int numOptions = uniform(rng, 1, maxOptions);
    std::vector<uint64_t> most(numMemories, 0);
    for (int o = 0; o < numOptions; ++o) {
      Option option;
      option.device = uniform(rng, 0, numDevices - 1);
      option.value = uniform(rng, 0, 20) * 0.25;
      for (int m = 0; m < numMemories; ++m) {
        uint64_t bytes = uniform(rng, 0, 2) == 0 ? 0 : uniform(rng, 1, 100);
        option.bytes.push_back(bytes);
        most[m] = std::max(most[m], bytes);
      }
      unit.options.push_back(option);
    }
    for (int m = 0; m < numMemories; ++m)
      worst[m] += most[m];
    problem.units.push_back(unit);
  }
  for (int m = 0; m < numMemories; ++m)
    problem.memories[m].capacityBytes =
        std::uniform_int_distribution<uint64_t>(0, worst[m])(rng) * 3 / 4;
  return problem;
}

/// A chain: edges u -> u+1, a few of them free (no table) or doubled.
inline Problem randomChain(std::mt19937_64 &rng, int maxUnits, int maxOptions) {
  Problem problem = randomUnits(rng, uniform(rng, 1, maxUnits), maxOptions);
  size_t numDevices = problem.devices.size();
  for (int u = 0; u + 1 < static_cast<int>(problem.units.size()); ++u) {
    int kind = uniform(rng, 0, 9);
    if (kind == 0)
      continue;
    problem.edges.push_back({u, u + 1, randomTransfer(rng, numDevices, 8)});
    if (kind == 1)
      problem.edges.push_back({u, u + 1, randomTransfer(rng, numDevices, 4)});
  }
  return problem;
}

/// A DAG with random forward edges.
inline Problem randomDag(std::mt19937_64 &rng, int maxUnits, int maxOptions) {
  Problem problem = randomUnits(rng, uniform(rng, 2, maxUnits), maxOptions);
  int numUnits = static_cast<int>(problem.units.size());
  for (int from = 0; from < numUnits; ++from)
    for (int to = from + 1; to < numUnits; ++to)
      if (uniform(rng, 0, 2) == 0)
        problem.edges.push_back(
            {from, to, randomTransfer(rng, problem.devices.size(), 8)});
  return problem;
}

/// A mixture-of-experts layer: attention -> router -> experts -> join ->
/// next layer's attention, every edge with a random transfer table.
inline Problem randomFanOut(std::mt19937_64 &rng, int numExperts,
                            int maxOptions) {
  int numUnits = numExperts + 4;
  Problem problem = randomUnits(rng, numUnits, maxOptions);
  size_t numDevices = problem.devices.size();
  int router = 1, join = numExperts + 2;
  problem.edges.push_back({0, router, randomTransfer(rng, numDevices, 8)});
  for (int e = 0; e < numExperts; ++e) {
    problem.edges.push_back(
        {router, router + 1 + e, randomTransfer(rng, numDevices, 8)});
    problem.edges.push_back(
        {router + 1 + e, join, randomTransfer(rng, numDevices, 8)});
  }
  // The residual stream skips the experts.
  problem.edges.push_back({router, join, randomTransfer(rng, numDevices, 8)});
  problem.edges.push_back({join, join + 1, randomTransfer(rng, numDevices, 8)});
  return problem;
}

} // namespace hetc::partition::testing

#endif // HETC_TEST_UNIT_PARTITION_RANDOMPROBLEMS_H
