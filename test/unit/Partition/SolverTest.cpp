// The chain DP, exhaustive search and the GLPK MIP against each other on
// seeded random problems, and their errors on infeasible and malformed ones.
#include "RandomProblems.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace hetc::partition;
using namespace hetc::partition::testing;

bool near(double a, double b) {
  return std::abs(a - b) <= 1e-7 * std::max({1.0, std::abs(a), std::abs(b)});
}

/// A returned plan is what evaluate() says of its options, and fits.
void expectValidPlan(const Problem &problem, const Plan &plan) {
  ASSERT_EQ(plan.option.size(), problem.units.size());
  Plan again = evaluate(problem, plan.option);
  EXPECT_TRUE(near(plan.objective, again.objective));
  EXPECT_EQ(plan.bytesUsed, again.bytesUsed);
  for (size_t m = 0; m < problem.memories.size(); ++m)
    EXPECT_LE(plan.bytesUsed[m], problem.memories[m].capacityBytes)
        << problem.memories[m].name;
}

/// The shortfall is consistent with its closest choice and named in words.
void expectValidShortfall(const Problem &problem, const Result &result) {
  ASSERT_TRUE(result.shortfall) << result.error;
  const Shortfall &shortfall = *result.shortfall;
  Plan closest = evaluate(problem, shortfall.closest.option);
  uint64_t total = 0, most = 0;
  for (size_t m = 0; m < problem.memories.size(); ++m) {
    total += closest.overflowBytes(problem, m);
    most = std::max(most, closest.overflowBytes(problem, m));
  }
  EXPECT_GT(total, 0u);
  EXPECT_EQ(shortfall.totalBytes, total);
  ASSERT_GE(shortfall.memory, 0);
  EXPECT_EQ(shortfall.memoryName, problem.memories[shortfall.memory].name);
  EXPECT_EQ(shortfall.memoryBytes, most);
  EXPECT_EQ(closest.overflowBytes(problem, shortfall.memory), most);
  EXPECT_NE(result.error.find(shortfall.memoryName), std::string::npos)
      << result.error;
  EXPECT_NE(result.error.find(std::to_string(most) + " bytes"),
            std::string::npos)
      << result.error;
}

/// Both results agree: same objective, or both infeasible with the same
/// minimal total overflow.
void expectSameAnswer(const Problem &problem, const Result &expected,
                      const Result &actual) {
  ASSERT_EQ(static_cast<bool>(expected), static_cast<bool>(actual))
      << "expected: " << expected.error << "\nactual: " << actual.error;
  if (expected) {
    expectValidPlan(problem, *actual.plan);
    EXPECT_TRUE(near(expected.plan->objective, actual.plan->objective))
        << expected.plan->objective << " vs " << actual.plan->objective;
    return;
  }
  expectValidShortfall(problem, actual);
  ASSERT_TRUE(expected.shortfall) << expected.error;
  EXPECT_EQ(expected.shortfall->totalBytes, actual.shortfall->totalBytes);
}

TEST(ChainDp, EqualsExhaustiveSearchOnRandomChains) {
  std::mt19937_64 rng(20240601);
  int feasible = 0, infeasible = 0;
  for (int instance = 0; instance < 600; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 7, 4);
    Result reference = solveExhaustive(problem);
    ASSERT_TRUE(reference || reference.shortfall) << reference.error;
    if (reference)
      expectValidPlan(problem, *reference.plan);
    else
      expectValidShortfall(problem, reference);
    expectSameAnswer(problem, reference, solveChainDp(problem));
    (reference ? feasible : infeasible)++;
  }
  // Both outcomes must be exercised for the comparison to mean anything.
  EXPECT_GE(feasible, 150);
  EXPECT_GE(infeasible, 150);
  std::printf("chain DP vs exhaustive: %d feasible, %d infeasible\n", feasible,
              infeasible);
}

TEST(ChainDp, GranularityKeepsPlansWithinTheExactCapacities) {
  std::mt19937_64 rng(7);
  int compared = 0;
  for (int instance = 0; instance < 300; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 7, 4);
    Result exact = solveChainDp(problem);
    ChainDpOptions coarse;
    coarse.byteGranularity = static_cast<uint64_t>(uniform(rng, 2, 40));
    Result rounded = solveChainDp(problem, coarse);
    if (!exact) {
      EXPECT_FALSE(rounded);
      continue;
    }
    if (!rounded)
      continue;
    expectValidPlan(problem, *rounded.plan);
    // Rounding only removes plans, never adds cheaper ones.
    EXPECT_GE(rounded.plan->objective, exact.plan->objective - 1e-9);
    ++compared;
  }
  EXPECT_GE(compared, 50);
}

// A plan from rounded bytes says whether it is optimal: when it claims so it
// equals exhaustive search, and when not its lower bound holds.
TEST(ChainDp, RoundedPlansCertifyOptimalityOrBoundTheGap) {
  std::mt19937_64 rng(13);
  int proven = 0, unproven = 0;
  for (int instance = 0; instance < 400; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 7, 4);
    Result exact = solveExhaustive(problem);
    ChainDpOptions coarse;
    coarse.byteGranularity = static_cast<uint64_t>(uniform(rng, 2, 40));
    Result rounded = solveChainDp(problem, coarse);
    if (!rounded || !exact)
      continue;
    expectValidPlan(problem, *rounded.plan);
    double optimum = exact.plan->objective;
    if (rounded.optimal) {
      EXPECT_NEAR(rounded.plan->objective, optimum, 1e-9 * (1 + optimum));
      ++proven;
    } else {
      ASSERT_TRUE(rounded.lowerBound.has_value());
      EXPECT_LE(*rounded.lowerBound, optimum + 1e-9 * (1 + optimum));
      EXPECT_GT(rounded.plan->objective, optimum - 1e-9 * (1 + optimum));
      ++unproven;
    }
  }
  std::printf("rounded chain DP: %d proven optimal, %d with a bound\n", proven,
              unproven);
  EXPECT_GE(proven, 50);
  EXPECT_GE(unproven, 10);
}

// A state limit and a starting plan keep plans valid and never make them
// worse than the start.
TEST(ChainDp, StateLimitAndStartingPlanKeepPlansValid) {
  std::mt19937_64 rng(17);
  int compared = 0;
  for (int instance = 0; instance < 300; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 7, 4);
    Result exact = solveExhaustive(problem);
    if (!exact)
      continue;
    ChainDpOptions limited;
    limited.stateLimit = 2;
    limited.startFrom = exact.plan->option;
    Result result = solveChainDp(problem, limited);
    ASSERT_TRUE(result);
    expectValidPlan(problem, *result.plan);
    EXPECT_LE(result.plan->objective,
              exact.plan->objective + 1e-9 * (1 + exact.plan->objective));
    if (!result.optimal) {
      ASSERT_TRUE(result.lowerBound.has_value());
      EXPECT_LE(*result.lowerBound,
                exact.plan->objective + 1e-9 * (1 + exact.plan->objective));
    }
    ++compared;
  }
  EXPECT_GE(compared, 100);
}

TEST(ChainDp, GranularityDividingEveryByteFigureIsExact) {
  std::mt19937_64 rng(11);
  for (int instance = 0; instance < 200; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 7, 4);
    for (Unit &unit : problem.units)
      for (Option &option : unit.options)
        for (uint64_t &bytes : option.bytes)
          bytes *= 64;
    for (Memory &memory : problem.memories)
      memory.capacityBytes *= 64;
    ChainDpOptions options;
    options.byteGranularity = 64;
    expectSameAnswer(problem, solveExhaustive(problem),
                     solveChainDp(problem, options));
  }
}

TEST(Mip, EqualsChainDpOnRandomChains) {
  std::mt19937_64 rng(99);
  int feasible = 0;
  for (int instance = 0; instance < 300; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomChain(rng, 14, 5);
    Result dp = solveChainDp(problem);
    expectSameAnswer(problem, dp, solveMip(problem));
    feasible += static_cast<bool>(dp);
  }
  EXPECT_GE(feasible, 60);
}

TEST(Mip, EqualsExhaustiveSearchOnRandomDags) {
  std::mt19937_64 rng(1234);
  int feasible = 0;
  for (int instance = 0; instance < 300; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomDag(rng, 7, 4);
    Result reference = solveExhaustive(problem);
    expectSameAnswer(problem, reference, solveMip(problem));
    feasible += static_cast<bool>(reference);
  }
  EXPECT_GE(feasible, 60);
}

TEST(Mip, EqualsExhaustiveSearchOnExpertFanOutAndJoin) {
  std::mt19937_64 rng(555);
  int feasible = 0;
  for (int instance = 0; instance < 150; ++instance) {
    SCOPED_TRACE("instance " + std::to_string(instance));
    Problem problem = randomFanOut(rng, uniform(rng, 2, 4), 3);
    ASSERT_FALSE(isChain(problem));
    Result reference = solveExhaustive(problem);
    expectSameAnswer(problem, reference, solveMip(problem));
    feasible += static_cast<bool>(reference);
  }
  EXPECT_GE(feasible, 30);
}

/// Two devices, a GPU memory and a host memory; `units` units of `bytes`
/// each, cheap on the GPU and dear on the host.
Problem gpuAndHost(int units, uint64_t bytes, uint64_t gpuCapacity,
                   uint64_t hostCapacity) {
  Problem problem;
  problem.devices = {"gpu0", "cpu"};
  problem.memories = {{"gpu0.hbm", gpuCapacity}, {"cpu.dram", hostCapacity}};
  for (int u = 0; u < units; ++u) {
    Unit unit;
    unit.name = "layer" + std::to_string(u);
    unit.options = {{0, 1.0, {bytes, 0}}, {1, 3.0, {0, bytes}}};
    problem.units.push_back(unit);
    if (u > 0)
      problem.edges.push_back({u - 1, u, {0, 0.5, 0.5, 0}});
  }
  return problem;
}

std::vector<Result> allSolvers(const Problem &problem) {
  return {solveExhaustive(problem), solveChainDp(problem), solveMip(problem)};
}

TEST(Infeasible, AMemoryEveryChoiceOverflowsIsNamedWithItsExcess) {
  // The KV cache must sit on the GPU, and even alone it needs 300 bytes more
  // than the GPU holds; the host has room for every layer.
  Problem problem = gpuAndHost(4, 100, 1000, 1000);
  problem.units.push_back({"kv", {{0, 0.0, {1300, 0}}}});
  problem.edges.push_back({3, 4, {0, 0.5, 0.5, 0}});
  for (const Result &result : allSolvers(problem)) {
    ASSERT_FALSE(result);
    expectValidShortfall(problem, result);
    EXPECT_EQ(result.shortfall->memoryName, "gpu0.hbm");
    EXPECT_EQ(result.shortfall->memoryBytes, 300u);
    EXPECT_EQ(result.shortfall->totalBytes, 300u);
    EXPECT_EQ(result.error,
              "no placement fits the memory limits: the closest one needs 300 "
              "bytes more than gpu0.hbm holds (1300 of 1000)");
  }
}

TEST(Infeasible, MemoriesShortTogetherReportTheLeastTotalOverflow) {
  // Five layers of 100 bytes, 250 + 220 bytes of room: either memory alone
  // could be emptied, but together they lack 30 bytes, and whole layers make
  // the least overflow 50 (two layers in the GPU, three on the host: 80 over;
  // or 200 + 300: 0 + 80; the best is 300 / 200, 50 over the GPU).
  Problem problem = gpuAndHost(5, 100, 250, 220);
  for (const Result &result : allSolvers(problem)) {
    ASSERT_FALSE(result);
    expectValidShortfall(problem, result);
    EXPECT_EQ(result.shortfall->totalBytes, 50u);
    EXPECT_EQ(result.shortfall->memoryName, "gpu0.hbm");
    EXPECT_EQ(result.shortfall->memoryBytes, 50u);
  }
}

TEST(Infeasible, OverflowSpreadOverMemoriesIsListedWithTheTotal) {
  // Two units each needing 10 bytes in both memories at once, 15 bytes each.
  Problem problem;
  problem.devices = {"gpu0"};
  problem.memories = {{"gpu0.hbm", 15}, {"cpu.dram", 12}};
  problem.units = {{"a", {{0, 1.0, {10, 10}}}}, {"b", {{0, 1.0, {10, 10}}}}};
  problem.edges = {{0, 1, {}}};
  for (const Result &result : allSolvers(problem)) {
    ASSERT_FALSE(result);
    expectValidShortfall(problem, result);
    EXPECT_EQ(result.shortfall->totalBytes, 13u);
    EXPECT_EQ(result.shortfall->memoryName, "cpu.dram");
    EXPECT_EQ(result.error,
              "no placement fits the memory limits: the closest one needs 8 "
              "bytes more than cpu.dram holds (20 of 12) and 5 bytes more "
              "than gpu0.hbm holds (20 of 15); 13 bytes short in total");
  }
}

TEST(Solvers, FillTheFastMemoryFirst) {
  // Three of five layers fit the GPU; one device change costs 0.5.
  Problem problem = gpuAndHost(5, 100, 300, 1000);
  for (const Result &result : allSolvers(problem)) {
    ASSERT_TRUE(result) << result.error;
    EXPECT_DOUBLE_EQ(result.plan->objective, 3 * 1.0 + 2 * 3.0 + 0.5);
    EXPECT_EQ(result.plan->bytesUsed, (std::vector<uint64_t>{300, 200}));
  }
}

TEST(Solvers, RejectMalformedProblems) {
  Problem problem = gpuAndHost(3, 100, 300, 1000);
  problem.edges[0].transfer = {1, 0.5, 0.5, 0};
  for (const Result &result : allSolvers(problem)) {
    EXPECT_FALSE(result);
    EXPECT_FALSE(result.shortfall);
    EXPECT_NE(result.error.find("the diagonal must be 0"), std::string::npos)
        << result.error;
  }
  problem = gpuAndHost(3, 100, 300, 1000);
  problem.units[1].options[0].device = 2;
  EXPECT_NE(validate(problem).find("runs on device 2"), std::string::npos);
  problem = gpuAndHost(3, 100, 300, 1000);
  problem.edges.push_back({2, 1, {}});
  EXPECT_NE(validate(problem).find("does not go forward"), std::string::npos);
}

TEST(ChainDp, RefusesGraphsThatAreNotChains) {
  std::mt19937_64 rng(3);
  Problem problem = randomFanOut(rng, 2, 2);
  Result result = solveChainDp(problem);
  EXPECT_FALSE(result);
  EXPECT_NE(result.error.find("use the MIP"), std::string::npos);
}

TEST(Exhaustive, RefusesProblemsAboveItsLimit) {
  Problem problem = gpuAndHost(30, 1, 100, 100);
  Result result = solveExhaustive(problem);
  EXPECT_FALSE(result);
  EXPECT_NE(result.error.find("refuses more than"), std::string::npos);
  ExhaustiveOptions options;
  options.maxAssignments = 1 << 10;
  EXPECT_TRUE(solveExhaustive(gpuAndHost(10, 1, 100, 100), options));
  EXPECT_FALSE(solveExhaustive(gpuAndHost(11, 1, 100, 100), options));
}

} // namespace
