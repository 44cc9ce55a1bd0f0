// The placement problem: validation, evaluation of a choice and the wording
// of a shortfall.
#include "hetc/Partition/Partition.h"

#include "Internal.h"

#include <algorithm>
#include <cmath>

namespace hetc::partition {

std::string validate(const Problem &problem) {
  size_t numDevices = problem.devices.size();
  size_t numMemories = problem.memories.size();
  if (numDevices == 0)
    return "the problem has no devices";
  for (size_t u = 0; u < problem.units.size(); ++u) {
    const Unit &unit = problem.units[u];
    std::string where = "unit " + std::to_string(u) + " (" + unit.name + ")";
    if (unit.options.empty())
      return where + " has no options";
    for (size_t o = 0; o < unit.options.size(); ++o) {
      const Option &option = unit.options[o];
      std::string at = where + " option " + std::to_string(o);
      if (option.device < 0 || static_cast<size_t>(option.device) >= numDevices)
        return at + " runs on device " + std::to_string(option.device) +
               ", but there are " + std::to_string(numDevices) + " devices";
      if (!std::isfinite(option.value))
        return at + " has a value that is not finite";
      if (option.bytes.size() > numMemories)
        return at + " lists bytes for " + std::to_string(option.bytes.size()) +
               " memories, but there are " + std::to_string(numMemories);
    }
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const Edge &edge = problem.edges[e];
    std::string where = "edge " + std::to_string(e) + " (" +
                        std::to_string(edge.from) + " -> " +
                        std::to_string(edge.to) + ")";
    if (edge.from < 0 || edge.to < 0 ||
        static_cast<size_t>(edge.to) >= problem.units.size())
      return where + " names a unit out of range";
    if (edge.from >= edge.to)
      return where + " does not go forward; list units in topological order";
    if (edge.transfer.empty())
      continue;
    if (edge.transfer.size() != numDevices * numDevices)
      return where + " has a transfer table of " +
             std::to_string(edge.transfer.size()) + " entries; expected " +
             std::to_string(numDevices * numDevices) + " (devices squared)";
    for (size_t a = 0; a < numDevices; ++a) {
      if (edge.transfer[a * numDevices + a] != 0)
        return where + " costs a transfer from device " + std::to_string(a) +
               " to itself; the diagonal must be 0";
      for (size_t b = 0; b < numDevices; ++b)
        if (!std::isfinite(edge.transfer[a * numDevices + b]))
          return where + " has a transfer cost that is not finite";
    }
  }
  return {};
}

bool canRunOut(const Problem &problem, size_t memory) {
  uint64_t most = 0;
  for (const Unit &unit : problem.units) {
    uint64_t largest = 0;
    for (const Option &option : unit.options)
      largest = std::max(largest, option.bytesIn(memory));
    most += largest;
  }
  return most > problem.memories[memory].capacityBytes;
}

bool isChain(const Problem &problem) {
  return std::all_of(problem.edges.begin(), problem.edges.end(),
                     [](const Edge &edge) { return edge.to == edge.from + 1; });
}

uint64_t Plan::overflowBytes(const Problem &problem, size_t memory) const {
  uint64_t capacity = problem.memories[memory].capacityBytes;
  return bytesUsed[memory] > capacity ? bytesUsed[memory] - capacity : 0;
}

bool Plan::fits(const Problem &problem) const {
  for (size_t m = 0; m < problem.memories.size(); ++m)
    if (overflowBytes(problem, m) > 0)
      return false;
  return true;
}

Plan evaluate(const Problem &problem, std::vector<int> option) {
  Plan plan;
  plan.option = std::move(option);
  plan.bytesUsed.assign(problem.memories.size(), 0);
  for (size_t u = 0; u < problem.units.size(); ++u) {
    const Option &chosen = problem.units[u].options[plan.option[u]];
    plan.objective += chosen.value;
    for (size_t m = 0; m < chosen.bytes.size(); ++m)
      plan.bytesUsed[m] += chosen.bytes[m];
  }
  for (const Edge &edge : problem.edges)
    plan.objective += edge.cost(
        problem.units[edge.from].options[plan.option[edge.from]].device,
        problem.units[edge.to].options[plan.option[edge.to]].device,
        problem.devices.size());
  return plan;
}

std::string describe(const Problem &problem, const Shortfall &shortfall) {
  std::vector<size_t> over;
  for (size_t m = 0; m < problem.memories.size(); ++m)
    if (shortfall.closest.overflowBytes(problem, m) > 0)
      over.push_back(m);
  std::sort(over.begin(), over.end(), [&](size_t a, size_t b) {
    uint64_t overA = shortfall.closest.overflowBytes(problem, a);
    uint64_t overB = shortfall.closest.overflowBytes(problem, b);
    return overA != overB ? overA > overB : a < b;
  });
  std::string text = "no placement fits the memory limits: the closest one "
                     "needs ";
  for (size_t i = 0; i < over.size(); ++i) {
    const Memory &memory = problem.memories[over[i]];
    if (i > 0)
      text += i + 1 == over.size() ? " and " : ", ";
    text += std::to_string(shortfall.closest.overflowBytes(problem, over[i])) +
            " bytes more than " + memory.name + " holds (" +
            std::to_string(shortfall.closest.bytesUsed[over[i]]) + " of " +
            std::to_string(memory.capacityBytes) + ")";
  }
  if (over.size() > 1)
    text +=
        "; " + std::to_string(shortfall.totalBytes) + " bytes short in total";
  return text;
}

namespace detail {

Result failure(std::string error) {
  Result result;
  result.error = std::move(error);
  return result;
}

Result infeasible(const Problem &problem, std::vector<int> closest) {
  Shortfall shortfall;
  shortfall.closest = evaluate(problem, std::move(closest));
  for (size_t m = 0; m < problem.memories.size(); ++m) {
    uint64_t over = shortfall.closest.overflowBytes(problem, m);
    shortfall.totalBytes += over;
    if (over > shortfall.memoryBytes) {
      shortfall.memoryBytes = over;
      shortfall.memory = static_cast<int>(m);
    }
  }
  if (shortfall.memory >= 0)
    shortfall.memoryName = problem.memories[shortfall.memory].name;
  Result result;
  result.error = describe(problem, shortfall);
  result.shortfall = std::move(shortfall);
  return result;
}

} // namespace detail
} // namespace hetc::partition
