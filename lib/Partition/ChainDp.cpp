// The exact dynamic program over chain problems: per unit and device, a
// Pareto frontier of (memory use, cost) states, pruned by dominance, by
// whether any completion can still fit, and by a lower bound on the cost of
// any completion against a plan already known.
#include "hetc/Partition/Partition.h"

#include "Internal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

namespace hetc::partition {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// What a DP pass minimizes. Objective: option values plus transfers, with
/// hard capacities. Overflow: the total bytes beyond the capacities, which is
/// additive once a state stores its use clamped at the capacity (every byte
/// added to a full memory overflows), so the same frontier computes the
/// Shortfall exactly.
enum class Mode { Objective, Overflow };

struct ScaledOption {
  /// Index into the unit's Problem options.
  int index = 0;
  int device = 0;
  double value = 0;
};

/// The problem as one pass sees it: bytes in units of a granularity, only the
/// memories that can overflow, and per unit the options no other option of
/// the same unit beats.
struct Scaled {
  size_t numDevices = 0;
  /// Indices of the Problem memories tracked in states.
  std::vector<size_t> memories;
  /// Per tracked memory, its capacity in granules (rounded down).
  std::vector<uint64_t> capacity;
  std::vector<std::vector<ScaledOption>> options;
  /// Per unit, [option * tracked memories + memory] in granules (rounded up).
  std::vector<std::vector<uint64_t>> bytes;
  /// Per unit u > 0, the summed numDevices² transfer table of the edges
  /// u-1 -> u; empty when they are free.
  std::vector<std::vector<double>> transfer;
  /// Per unit u, per tracked memory, the least bytes units after u can hold.
  std::vector<std::vector<uint64_t>> minAfter;

  size_t numMemories() const { return memories.size(); }
  double transferCost(size_t unit, int from, int to) const {
    const std::vector<double> &table = transfer[unit];
    return table.empty() ? 0 : table[from * numDevices + to];
  }
};

uint64_t roundUp(uint64_t bytes, uint64_t granularity) {
  return bytes / granularity + (bytes % granularity != 0);
}

/// `roundDown` rounds option bytes down instead of up: a relaxation, since
/// floor sums never exceed the floor of the capacity a fitting choice fills.
Scaled scale(const Problem &problem, uint64_t granularity, Mode mode,
             bool roundDown = false) {
  Scaled scaled;
  scaled.numDevices = problem.devices.size();
  size_t numUnits = problem.units.size();
  // A memory that holds every unit's largest option at once never limits
  // anything, and leaving it out of the states shrinks the frontier.
  for (size_t m = 0; m < problem.memories.size(); ++m) {
    if (canRunOut(problem, m)) {
      scaled.memories.push_back(m);
      scaled.capacity.push_back(problem.memories[m].capacityBytes /
                                granularity);
    }
  }
  size_t numMemories = scaled.memories.size();
  scaled.options.resize(numUnits);
  scaled.bytes.resize(numUnits);
  for (size_t u = 0; u < numUnits; ++u) {
    const std::vector<Option> &options = problem.units[u].options;
    std::vector<uint64_t> rounded(options.size() * numMemories);
    for (size_t o = 0; o < options.size(); ++o)
      for (size_t m = 0; m < numMemories; ++m)
        rounded[o * numMemories + m] =
            roundDown ? options[o].bytesIn(scaled.memories[m]) / granularity
                      : roundUp(options[o].bytesIn(scaled.memories[m]),
                                granularity);
    // An option is dropped when another, earlier on a tie, runs on the same
    // device (overflow mode: any device, transfers do not count) for no more
    // and holds no more bytes anywhere: it cannot be in a unique optimum.
    auto beats = [&](size_t q, size_t p) {
      if (mode == Mode::Objective && (options[q].device != options[p].device ||
                                      options[q].value > options[p].value))
        return false;
      for (size_t m = 0; m < numMemories; ++m)
        if (rounded[q * numMemories + m] > rounded[p * numMemories + m])
          return false;
      bool equal =
          mode == Mode::Overflow || options[q].value == options[p].value;
      for (size_t m = 0; m < numMemories && equal; ++m)
        equal = rounded[q * numMemories + m] == rounded[p * numMemories + m];
      return !equal || q < p;
    };
    for (size_t p = 0; p < options.size(); ++p) {
      bool beaten = false;
      for (size_t q = 0; q < options.size() && !beaten; ++q)
        beaten = q != p && beats(q, p);
      if (beaten)
        continue;
      scaled.options[u].push_back(
          {static_cast<int>(p), options[p].device,
           mode == Mode::Objective ? options[p].value : 0});
      scaled.bytes[u].insert(scaled.bytes[u].end(),
                             rounded.begin() + p * numMemories,
                             rounded.begin() + (p + 1) * numMemories);
    }
  }
  scaled.transfer.resize(numUnits);
  if (mode == Mode::Objective)
    for (const Edge &edge : problem.edges) {
      if (edge.transfer.empty())
        continue;
      std::vector<double> &table = scaled.transfer[edge.to];
      table.resize(edge.transfer.size(), 0);
      for (size_t i = 0; i < table.size(); ++i)
        table[i] += edge.transfer[i];
    }
  scaled.minAfter.assign(numUnits, std::vector<uint64_t>(numMemories, 0));
  for (size_t u = numUnits; u-- > 1;)
    for (size_t m = 0; m < numMemories; ++m) {
      uint64_t least = std::numeric_limits<uint64_t>::max();
      for (size_t o = 0; o < scaled.options[u].size(); ++o)
        least = std::min(least, scaled.bytes[u][o * numMemories + m]);
      scaled.minAfter[u - 1][m] = scaled.minAfter[u][m] + least;
    }
  return scaled;
}

/// Per unit and device of that unit, the least cost of the units after it
/// when each byte held in tracked memory m also costs lambda[m] and
/// capacities are ignored. With lambda = 0 this bounds any completion; with
/// lambda >= 0 a completion that fits the `remaining` capacities costs at
/// least table - lambda . remaining (Lagrangian relaxation).
std::vector<std::vector<double>> costAfter(const Scaled &scaled,
                                           const std::vector<double> &lambda) {
  size_t numUnits = scaled.options.size(), numMemories = scaled.numMemories();
  std::vector<std::vector<double>> table(
      numUnits, std::vector<double>(scaled.numDevices, 0));
  for (size_t u = numUnits; u-- > 1;)
    for (size_t from = 0; from < scaled.numDevices; ++from) {
      double best = kInfinity;
      for (size_t o = 0; o < scaled.options[u].size(); ++o) {
        const ScaledOption &option = scaled.options[u][o];
        double cost =
            option.value +
            scaled.transferCost(u, static_cast<int>(from), option.device) +
            table[u][option.device];
        for (size_t m = 0; m < numMemories; ++m)
          cost += lambda[m] *
                  static_cast<double>(scaled.bytes[u][o * numMemories + m]);
        best = std::min(best, cost);
      }
      table[u - 1][from] = best;
    }
  return table;
}

/// The Lagrangian dual value at `lambda` and the memory use of the choice
/// reaching it: min over choices of cost + lambda . (use - capacity).
double lagrangian(const Scaled &scaled, const std::vector<double> &lambda,
                  std::vector<double> &use) {
  size_t numUnits = scaled.options.size(), numMemories = scaled.numMemories();
  std::vector<std::vector<double>> after = costAfter(scaled, lambda);
  // Walk the choice forward from the best first option to get its use.
  use.assign(numMemories, 0);
  double total = 0;
  int device = -1;
  for (size_t u = 0; u < numUnits; ++u) {
    double best = kInfinity;
    size_t chosen = 0;
    for (size_t o = 0; o < scaled.options[u].size(); ++o) {
      const ScaledOption &option = scaled.options[u][o];
      double cost =
          option.value + after[u][option.device] +
          (device < 0 ? 0 : scaled.transferCost(u, device, option.device));
      for (size_t m = 0; m < numMemories; ++m)
        cost += lambda[m] *
                static_cast<double>(scaled.bytes[u][o * numMemories + m]);
      if (cost < best) {
        best = cost;
        chosen = o;
      }
    }
    if (u == 0)
      total = best;
    device = scaled.options[u][chosen].device;
    for (size_t m = 0; m < numMemories; ++m)
      use[m] += static_cast<double>(scaled.bytes[u][chosen * numMemories + m]);
  }
  for (size_t m = 0; m < numMemories; ++m)
    total -= lambda[m] * static_cast<double>(scaled.capacity[m]);
  return total;
}

/// Multipliers for the Lagrangian bound, by projected subgradient ascent with
/// Polyak steps towards `upper` (a known plan's cost). Any lambda >= 0 gives
/// a valid bound, so the iteration only has to be good, not converged.
std::vector<double> multipliers(const Scaled &scaled, double upper) {
  size_t numMemories = scaled.numMemories();
  std::vector<double> lambda(numMemories, 0), best = lambda, use;
  double bestValue = -kInfinity, theta = 1;
  int stale = 0;
  for (int iteration = 0; iteration < 100; ++iteration) {
    double value = lagrangian(scaled, lambda, use);
    if (value > bestValue) {
      bestValue = value;
      best = lambda;
      stale = 0;
    } else if (++stale >= 5) {
      theta /= 2;
      stale = 0;
    }
    double norm = 0;
    std::vector<double> gradient(numMemories);
    for (size_t m = 0; m < numMemories; ++m) {
      gradient[m] = use[m] - static_cast<double>(scaled.capacity[m]);
      // Projection: a slack memory with a zero multiplier stays at zero.
      if (lambda[m] == 0 && gradient[m] < 0)
        gradient[m] = 0;
      norm += gradient[m] * gradient[m];
    }
    if (norm == 0 || upper - bestValue <= 1e-12 * std::abs(upper) ||
        theta < 1e-6)
      break;
    double step = theta * (upper - value) / norm;
    for (size_t m = 0; m < numMemories; ++m)
      lambda[m] = std::max(0.0, lambda[m] + step * gradient[m]);
  }
  return best;
}

/// Pruning against a known plan of cost `upper`.
struct Bounds {
  double upper = kInfinity;
  std::vector<std::vector<double>> plain;
  std::vector<double> lambda;
  std::vector<std::vector<double>> relaxed;
};

/// Bounds for pruning `pass` against a known plan of cost `upper`.
Bounds boundsFor(const Scaled &pass, double upper) {
  Bounds bounds;
  bounds.upper = upper;
  bounds.plain = costAfter(pass, std::vector<double>(pass.numMemories()));
  bounds.lambda = multipliers(pass, upper);
  bounds.relaxed = costAfter(pass, bounds.lambda);
  return bounds;
}

/// One stage's states, structure of arrays; `use` holds numMemories entries
/// per state.
struct Frontier {
  std::vector<uint64_t> use;
  std::vector<double> cost;
  std::vector<int> device;
  std::vector<int> parent;
  std::vector<int> option;
  size_t size() const { return cost.size(); }
};

/// Keeps the states of `candidates` that no other state of the same device
/// dominates (no more cost, no more use anywhere).
Frontier prune(const Frontier &candidates, size_t numMemories,
               size_t numDevices) {
  size_t count = candidates.size();
  std::vector<uint64_t> sum(count, 0);
  for (size_t s = 0; s < count; ++s)
    for (size_t m = 0; m < numMemories; ++m)
      sum[s] += candidates.use[s * numMemories + m];
  // Cheapest first, and on equal cost the smallest total use first: a state
  // can then only be dominated by one already kept.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (candidates.device[a] != candidates.device[b])
      return candidates.device[a] < candidates.device[b];
    if (candidates.cost[a] != candidates.cost[b])
      return candidates.cost[a] < candidates.cost[b];
    if (sum[a] != sum[b])
      return sum[a] < sum[b];
    return a < b;
  });
  Frontier kept;
  size_t groupStart = 0;
  // With one memory the frontier is a staircase: the least use so far.
  uint64_t leastUse = std::numeric_limits<uint64_t>::max();
  std::map<uint64_t, uint64_t> staircase;
  for (size_t i = 0; i < count; ++i) {
    size_t s = order[i];
    if (kept.size() > 0 && kept.device.back() != candidates.device[s]) {
      groupStart = kept.size();
      leastUse = std::numeric_limits<uint64_t>::max();
      staircase.clear();
    }
    const uint64_t *use = candidates.use.data() + s * numMemories;
    bool dominated = false;
    if (numMemories == 0) {
      dominated = kept.size() > groupStart;
    } else if (numMemories == 1) {
      dominated = use[0] >= leastUse;
      leastUse = std::min(leastUse, use[0]);
    } else if (numMemories == 2) {
      // A staircase of the kept states: first use ascending, second use
      // strictly descending; the entry at or below use[0] has the least
      // second use of all kept states with no more first use.
      auto at = staircase.upper_bound(use[0]);
      dominated = at != staircase.begin() && std::prev(at)->second <= use[1];
      if (!dominated) {
        auto from = staircase.lower_bound(use[0]);
        auto to = from;
        while (to != staircase.end() && to->second >= use[1])
          ++to;
        staircase.erase(from, to);
        staircase.emplace(use[0], use[1]);
      }
    } else {
      for (size_t k = groupStart; k < kept.size() && !dominated; ++k) {
        const uint64_t *other = kept.use.data() + k * numMemories;
        size_t m = 0;
        while (m < numMemories && other[m] <= use[m])
          ++m;
        dominated = m == numMemories;
      }
    }
    if (dominated)
      continue;
    kept.use.insert(kept.use.end(), use, use + numMemories);
    kept.cost.push_back(candidates.cost[s]);
    kept.device.push_back(candidates.device[s]);
    kept.parent.push_back(candidates.parent[s]);
    kept.option.push_back(candidates.option[s]);
  }
  (void)numDevices;
  return kept;
}

/// A pass's answer: Problem option indices per unit and their cost.
struct Answer {
  std::vector<int> choice;
  double cost = 0;
};

/// The pass's optimum; nothing when no choice fits, or when a stage would
/// keep more than `stateLimit` states (then `exceeded` is set).
std::optional<Answer> run(const Scaled &scaled, Mode mode,
                          const Bounds *bounds,
                          size_t stateLimit = std::numeric_limits<size_t>::max(),
                          bool *exceeded = nullptr) {
  size_t numUnits = scaled.options.size(), numMemories = scaled.numMemories();
  // Stage -1: one empty state on no device.
  Frontier current;
  current.use.assign(numMemories, 0);
  current.cost.push_back(0);
  current.device.push_back(-1);
  current.parent.push_back(-1);
  current.option.push_back(-1);
  std::vector<std::vector<int>> parents(numUnits), options(numUnits);
  std::vector<uint64_t> next(numMemories);
  double slack = bounds ? 1e-9 * std::abs(bounds->upper) + 1e-300 : 0;
  for (size_t u = 0; u < numUnits; ++u) {
    Frontier candidates;
    const std::vector<ScaledOption> &unitOptions = scaled.options[u];
    for (size_t s = 0; s < current.size(); ++s) {
      const uint64_t *use = current.use.data() + s * numMemories;
      for (size_t o = 0; o < unitOptions.size(); ++o) {
        const ScaledOption &option = unitOptions[o];
        const uint64_t *bytes = scaled.bytes[u].data() + o * numMemories;
        double cost = current.cost[s] + option.value;
        bool fits = true;
        for (size_t m = 0; m < numMemories; ++m) {
          uint64_t total = use[m] + bytes[m];
          if (mode == Mode::Overflow) {
            // Clamped: what exceeds the capacity is paid for now.
            uint64_t capacity = scaled.capacity[m];
            cost +=
                static_cast<double>(total > capacity ? total - capacity : 0);
            next[m] = std::min(total, capacity);
          } else {
            next[m] = total;
            // No completion fits when even the least the later units hold
            // does not.
            fits = fits && total <= scaled.capacity[m] &&
                   scaled.minAfter[u][m] <= scaled.capacity[m] - total;
          }
        }
        if (!fits)
          continue;
        if (current.device[s] >= 0)
          cost += scaled.transferCost(u, current.device[s], option.device);
        if (bounds) {
          double lower = bounds->plain[u][option.device];
          double relaxed = bounds->relaxed[u][option.device];
          for (size_t m = 0; m < numMemories; ++m)
            relaxed -= bounds->lambda[m] *
                       static_cast<double>(scaled.capacity[m] - next[m]);
          if (cost + std::max(lower, relaxed) > bounds->upper + slack)
            continue;
        }
        candidates.use.insert(candidates.use.end(), next.begin(), next.end());
        candidates.cost.push_back(cost);
        candidates.device.push_back(mode == Mode::Overflow ? 0 : option.device);
        candidates.parent.push_back(static_cast<int>(s));
        candidates.option.push_back(static_cast<int>(o));
      }
    }
    current = prune(candidates, numMemories, scaled.numDevices);
    if (current.size() > stateLimit) {
      if (exceeded)
        *exceeded = true;
      return std::nullopt;
    }
    if (current.size() == 0)
      return std::nullopt;
    parents[u] = current.parent;
    options[u] = current.option;
  }
  size_t best = 0;
  for (size_t s = 1; s < current.size(); ++s)
    if (current.cost[s] < current.cost[best])
      best = s;
  Answer answer;
  answer.cost = numUnits ? current.cost[best] : 0;
  answer.choice.resize(numUnits);
  for (size_t u = numUnits; u-- > 0;) {
    answer.choice[u] = scaled.options[u][options[u][best]].index;
    best = static_cast<size_t>(parents[u][best]);
  }
  return answer;
}

/// Improves a plan that fits by moving one unit at a time to another option
/// while the plan still fits exactly and gets cheaper. A plan from a coarse
/// pass wastes up to a granule per unit; this recovers much of it, so the
/// next pass prunes against a bound close to the optimum.
void improveLocally(const Problem &problem, Answer &answer) {
  Plan plan = evaluate(problem, answer.choice);
  if (!plan.fits(problem))
    return;
  std::vector<int> trial = answer.choice;
  bool improved = true;
  for (int sweep = 0; improved && sweep < 32; ++sweep) {
    improved = false;
    for (size_t u = 0; u < problem.units.size(); ++u) {
      int current = trial[u];
      for (size_t o = 0; o < problem.units[u].options.size(); ++o) {
        if (static_cast<int>(o) == current)
          continue;
        trial[u] = static_cast<int>(o);
        Plan moved = evaluate(problem, trial);
        if (moved.fits(problem) &&
            moved.objective < plan.objective * (1 - 1e-12)) {
          plan = std::move(moved);
          current = static_cast<int>(o);
          improved = true;
        }
      }
      trial[u] = current;
    }
  }
  answer.choice = std::move(trial);
  answer.cost = plan.objective;
}

/// States one stage of the certifying pass may keep: enough for the
/// catalog's systems at every granularity hetc plan uses, and a bound on the
/// time a plan can take (about a second).
constexpr size_t kCertifyStateLimit = 20000;

/// Checks a plan found with bytes rounded up against the relaxation that
/// rounds them down: no choice that fits exactly is lost there, so nothing
/// cheaper there means `answer` is optimal. First the relaxation's
/// Lagrangian bound, then its exact optimum: a cheaper relaxed choice that
/// fits exactly replaces `answer` (and is optimal). Otherwise `answer` stays
/// unproven, with the best lower bound known.
void certify(const Problem &problem, uint64_t granularity, Answer &answer,
             Result &result) {
  Scaled relaxed = scale(problem, granularity, Mode::Objective,
                         /*roundDown=*/true);
  // Costs within floating-point noise of each other are the same plan's.
  double tolerance = 1e-9 * std::max(1.0, std::abs(answer.cost));
  Bounds bounds = boundsFor(relaxed, answer.cost);
  std::vector<double> use;
  double dual = lagrangian(relaxed, bounds.lambda, use);
  if (dual >= answer.cost - tolerance)
    return;
  bool exceeded = false;
  std::optional<Answer> lower = run(relaxed, Mode::Objective, &bounds,
                                    kCertifyStateLimit, &exceeded);
  if (exceeded) {
    result.optimal = false;
    result.lowerBound = dual;
    return;
  }
  if (!lower || lower->cost >= answer.cost - tolerance)
    return;
  if (evaluate(problem, lower->choice).fits(problem)) {
    answer = std::move(*lower);
    return;
  }
  result.optimal = false;
  result.lowerBound = lower->cost;
}

} // namespace

Result solveChainDp(const Problem &problem, const ChainDpOptions &options) {
  // The first pass holds 16 granules of the largest limiting memory, each
  // next one 4 times as many.
  const uint64_t kCoarsestGranules = 16, kRefinement = 4;
  if (std::string error = validate(problem); !error.empty())
    return detail::failure(std::move(error));
  if (!isChain(problem))
    return detail::failure("the chain DP needs edges from each unit to the "
                           "next only; use the MIP for other graphs");
  uint64_t granularity = std::max<uint64_t>(options.byteGranularity, 1);
  Scaled scaled = scale(problem, granularity, Mode::Objective);

  // Exact knapsack frontiers can hold a state per reachable use vector, so
  // the requested granularity is approached from coarse ones: each pass runs
  // at a multiple of the next pass's granularity (its plan then fits the
  // finer rounding too), and the best plan so far prunes the next pass
  // against lower bounds on every completion. Rounding wastes up to a granule
  // per unit, so a pass's plan is first improved by single-unit moves at the
  // exact bytes (improveLocally): the bound it gives is then close to the
  // optimum and the finer passes keep few states.
  uint64_t largest = 0;
  for (uint64_t capacity : scaled.capacity)
    largest = std::max(largest, capacity);
  std::vector<uint64_t> factors;
  for (uint64_t factor = largest / kCoarsestGranules; factor > 1; factor /= kRefinement)
    factors.push_back(factor);
  factors.push_back(1);
  size_t stateLimit = options.stateLimit > 0
                          ? options.stateLimit
                          : std::numeric_limits<size_t>::max();
  bool exceeded = false;
  std::optional<Answer> answer;
  if (options.startFrom && options.startFrom->size() == problem.units.size()) {
    Plan start = evaluate(problem, *options.startFrom);
    if (start.fits(problem))
      answer = Answer{*options.startFrom, start.objective};
  }
  for (uint64_t factor : factors) {
    if (exceeded)
      // Finer passes only hold more states.
      break;
    Scaled pass = factor == 1
                      ? std::move(scaled)
                      : scale(problem, granularity * factor, Mode::Objective);
    if (!answer) {
      // Rounding may lose every plan that fits; a finer pass tries again.
      // Until one is found the search is not limited: there is nothing to
      // fall back on.
      answer = run(pass, Mode::Objective, nullptr);
      if (answer)
        improveLocally(problem, *answer);
      continue;
    }
    Bounds bounds = boundsFor(pass, answer->cost);
    // The known plan survives the pruning unless floating-point rounding in
    // the bounds hides it; it then stays the best known.
    if (std::optional<Answer> better =
            run(pass, Mode::Objective, &bounds, stateLimit, &exceeded))
      if (better->cost <= answer->cost) {
        answer = std::move(better);
        if (factor > 1)
          improveLocally(problem, *answer);
      }
  }
  if (answer) {
    Result result;
    if (granularity > 1 || exceeded)
      certify(problem, granularity, *answer, result);
    result.plan = evaluate(problem, std::move(answer->choice));
    return result;
  }
  std::optional<Answer> closest =
      run(scale(problem, 1, Mode::Overflow), Mode::Overflow, nullptr);
  Result result = detail::infeasible(problem, std::move(closest->choice));
  if (result.shortfall->totalBytes == 0) {
    result.shortfall.reset();
    result.error = "no placement fits once bytes are rounded up to multiples "
                   "of " +
                   std::to_string(granularity) +
                   ", but one fits exactly; use a finer granularity";
  }
  return result;
}

} // namespace hetc::partition
