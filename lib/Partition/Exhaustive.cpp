// Exhaustive search over every choice of options: the reference the DP and
// the MIP are tested against.
#include "hetc/Partition/Partition.h"

#include "Internal.h"

#include <limits>

namespace hetc::partition {

namespace {

struct Search {
  explicit Search(const Problem &problem) : problem(problem) {}

  const Problem &problem;
  /// Per unit, the edges that end in it (their source is chosen earlier).
  std::vector<std::vector<const Edge *>> incoming;
  std::vector<int> choice;
  std::vector<uint64_t> used;
  double bestObjective = std::numeric_limits<double>::infinity();
  std::vector<int> best;
  uint64_t leastOverflow = std::numeric_limits<uint64_t>::max();
  std::vector<int> closest;

  void visit(size_t unit, double cost) {
    if (unit == problem.units.size()) {
      uint64_t overflow = 0;
      for (size_t m = 0; m < used.size(); ++m)
        if (used[m] > problem.memories[m].capacityBytes)
          overflow += used[m] - problem.memories[m].capacityBytes;
      if (overflow == 0 && cost < bestObjective) {
        bestObjective = cost;
        best = choice;
      }
      if (overflow < leastOverflow) {
        leastOverflow = overflow;
        closest = choice;
      }
      return;
    }
    const std::vector<Option> &options = problem.units[unit].options;
    for (size_t o = 0; o < options.size(); ++o) {
      const Option &option = options[o];
      choice[unit] = static_cast<int>(o);
      double next = cost + option.value;
      for (const Edge *edge : incoming[unit])
        next += edge->cost(
            problem.units[edge->from].options[choice[edge->from]].device,
            option.device, problem.devices.size());
      for (size_t m = 0; m < option.bytes.size(); ++m)
        used[m] += option.bytes[m];
      visit(unit + 1, next);
      for (size_t m = 0; m < option.bytes.size(); ++m)
        used[m] -= option.bytes[m];
    }
  }
};

} // namespace

Result solveExhaustive(const Problem &problem,
                       const ExhaustiveOptions &options) {
  if (std::string error = validate(problem); !error.empty())
    return detail::failure(std::move(error));
  uint64_t assignments = 1;
  for (const Unit &unit : problem.units) {
    if (assignments > options.maxAssignments / unit.options.size())
      return detail::failure(
          "exhaustive search refuses more than " +
          std::to_string(options.maxAssignments) +
          " choices of options; use the DP or the MIP for this problem");
    assignments *= unit.options.size();
  }
  Search search(problem);
  search.incoming.resize(problem.units.size());
  for (const Edge &edge : problem.edges)
    search.incoming[edge.to].push_back(&edge);
  search.choice.assign(problem.units.size(), 0);
  search.used.assign(problem.memories.size(), 0);
  search.visit(0, 0);
  if (search.best.empty() && !problem.units.empty())
    return detail::infeasible(problem, std::move(search.closest));
  Result result;
  result.plan = evaluate(problem, std::move(search.best));
  return result;
}

} // namespace hetc::partition
