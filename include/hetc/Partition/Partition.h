// The partitioner's solvers over an abstract placement problem: units with
// placement options, transfer costs on edges and memory capacities. No IR and
// no hardware knowledge; the het-partition pass and `hetc plan` translate
// models and systems into a Problem and read the chosen options back.
#ifndef HETC_PARTITION_PARTITION_H
#define HETC_PARTITION_PARTITION_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetc::partition {

/// A memory whose capacity the placement must respect ("gpu0.hbm").
struct Memory {
  std::string name;
  uint64_t capacityBytes = 0;
};

/// One way to place a unit: where it runs, what that costs and what it holds.
struct Option {
  /// Index into Problem::devices.
  int device = 0;
  /// Additive objective contribution (seconds, joules or dollars; the solvers
  /// only add and compare). Must be finite.
  double value = 0;
  /// Bytes held per memory, indexed like Problem::memories; missing trailing
  /// entries are 0, so an option holding nothing may leave it empty.
  std::vector<uint64_t> bytes;

  uint64_t bytesIn(size_t memory) const {
    return memory < bytes.size() ? bytes[memory] : 0;
  }
};

/// Something placed as a whole: an op, a layer's attention, a group of
/// experts.
struct Unit {
  std::string name;
  /// At least one.
  std::vector<Option> options;
};

/// Data flowing from unit `from` to unit `to` (from < to: units are listed in
/// topological order).
struct Edge {
  int from = 0;
  int to = 0;
  /// The cost when `from` runs on device a and `to` on device b is
  /// transfer[a * numDevices + b]: a full table rather than bytes times a
  /// per-pair rate, so link latency and asymmetric links fit too. The
  /// diagonal must be 0 (data stays on its device); empty means free.
  std::vector<double> transfer;

  double cost(int fromDevice, int toDevice, size_t numDevices) const {
    if (transfer.empty() || fromDevice == toDevice)
      return 0;
    return transfer[static_cast<size_t>(fromDevice) * numDevices +
                    static_cast<size_t>(toDevice)];
  }
};

/// Choose one option per unit minimizing
///   sum of chosen Option::value + sum over edges of Edge::cost
/// subject to, for every memory, the chosen options' bytes in it summing to
/// at most its capacity.
struct Problem {
  /// Device names, for messages; their count sizes the transfer tables.
  std::vector<std::string> devices;
  std::vector<Memory> memories;
  /// In topological order.
  std::vector<Unit> units;
  std::vector<Edge> edges;
};

/// Empty when `problem` is well formed, else the first thing wrong with it
/// (an option's device or bytes out of range, an edge backwards or out of
/// range, a transfer table of the wrong size or with a non-zero diagonal, a
/// unit without options, a value that is not finite).
std::string validate(const Problem &problem);

/// True when every edge joins a unit to the next one (i -> i+1), which is
/// what solveChainDp needs. Missing links are free, repeated ones add up.
bool isChain(const Problem &problem);

/// Whether `memory` can run out: every unit's largest option in it together
/// exceed its capacity. A memory that cannot limits no choice.
bool canRunOut(const Problem &problem, size_t memory);

/// A choice of one option per unit and what it amounts to.
struct Plan {
  /// Per unit, the index of its chosen option.
  std::vector<int> option;
  /// The objective of the choice, summed in unit order then edge order.
  double objective = 0;
  /// Per memory, the bytes the chosen options hold.
  std::vector<uint64_t> bytesUsed;

  /// Bytes by which the choice exceeds `memory`'s capacity (0 when it fits).
  uint64_t overflowBytes(const Problem &problem, size_t memory) const;
  /// True when no memory overflows.
  bool fits(const Problem &problem) const;
};

/// The objective and memory use of `option` (one index per unit, assumed in
/// range) for a well-formed `problem`.
Plan evaluate(const Problem &problem, std::vector<int> option);

/// Why no choice fits. The figure reported is the smallest possible total
/// overflow: over every choice of options, the minimum of
///   sum over memories of max(0, bytes used - capacity),
/// with `closest` a choice reaching it. It is exact (both the DP and the MIP
/// compute the same minimum; a single memory whose minimum possible use
/// exceeds its capacity shows up as exactly that excess when the other
/// memories have room), and it says how many bytes must be freed or added.
struct Shortfall {
  /// The memory `closest` overflows the most (the lowest index on a tie).
  int memory = -1;
  std::string memoryName;
  /// How far `closest` overflows `memory`.
  uint64_t memoryBytes = 0;
  /// The minimal total overflow, over all memories.
  uint64_t totalBytes = 0;
  Plan closest;
};

/// What a solver returns: a plan, or an error saying why there is none.
struct Result {
  /// An optimal plan that fits every memory.
  std::optional<Plan> plan;
  /// Set when the problem is well formed but no choice fits.
  std::optional<Shortfall> shortfall;
  /// Set whenever `plan` is not: malformed problem, wrong shape for the
  /// solver, solver failure, or the shortfall in words naming the memories
  /// and bytes.
  std::string error;
  /// False when the solver stopped at a limit (MipOptions::timeLimitSeconds)
  /// with `plan` the best found so far, not proven optimal.
  bool optimal = true;
  /// When `optimal` is false and the solver knows one: an objective no plan
  /// that fits can beat.
  std::optional<double> lowerBound;

  explicit operator bool() const { return plan.has_value(); }
};

/// The message a Result carries for `shortfall`: every memory `closest`
/// overflows with its excess in bytes, the largest first, and the total.
std::string describe(const Problem &problem, const Shortfall &shortfall);

struct ChainDpOptions {
  /// 0 or 1: exact. G > 1: every option's bytes are rounded up to a multiple
  /// of G and every capacity down to one, which bounds the number of
  /// distinct memory-use vectors. A plan found then always fits the exact
  /// capacities, and it is optimal among the choices that still fit after
  /// rounding. It is then checked against the relaxation that rounds bytes
  /// down: when nothing there is cheaper (or the cheaper choice fits
  /// exactly, and is returned), the plan is the exact optimum; otherwise
  /// Result::optimal is false and Result::lowerBound bounds the optimum. The
  /// shortfall of an infeasible problem is always computed exactly.
  uint64_t byteGranularity = 0;
  /// 0: none. N > 0: once a plan is known, a pass whose stage would keep more
  /// than N states stops the search, which returns the best plan found so
  /// far (Result::optimal false unless the relaxation still proves it),
  /// bounding time and memory.
  size_t stateLimit = 0;
  /// A plan known to fit (an option per unit), which bounds the search from
  /// the start: a finer solve after a coarser one. Ignored unless it fits.
  std::optional<std::vector<int>> startFrom;
};

/// Exact dynamic program for chain problems (isChain). Per unit and device of
/// that unit it keeps a Pareto frontier of (memory use per memory, cost): a
/// state is dropped only when another on the same device has no higher cost
/// and no higher use in any memory, or when no completion can fit or can beat
/// a plan already known. Results equal exhaustive search. Errors for a
/// malformed or non-chain problem. Thread-safe (no shared state).
Result solveChainDp(const Problem &problem, const ChainDpOptions &options = {});

struct ExhaustiveOptions {
  /// Refuse problems with more choices than this (the product of the
  /// option counts).
  uint64_t maxAssignments = uint64_t{1} << 22;
};

/// Tries every choice; for tests of the other solvers on small problems. Any
/// DAG. Errors for a malformed problem or one above the size limit.
Result solveExhaustive(const Problem &problem,
                       const ExhaustiveOptions &options = {});

struct MipOptions {
  /// GLPK's branch-and-bound time limit; 0 means none. When it is reached
  /// with a plan found, the Result holds that plan with `optimal` false;
  /// without one, an error.
  double timeLimitSeconds = 0;
};

/// Mixed-integer program solved by GLPK, for any DAG (e.g. a router fanning
/// out to experts that join again): binary x[u][o] choosing one option per
/// unit, per edge a continuous y[a][b] per device pair tied to the device
/// sums of both ends (exact for binary x, any sign of cost), and one row per
/// memory. The optimality gap is 0, so objectives agree with the DP up to
/// floating-point tolerance (ties may pick other options); the returned plan
/// is re-checked against the capacities in exact integer arithmetic.
/// Errors for a malformed problem or a GLPK failure. GLPK's terminal output
/// is silenced. Not thread-safe: GLPK keeps global state.
Result solveMip(const Problem &problem, const MipOptions &options = {});

} // namespace hetc::partition

#endif // HETC_PARTITION_PARTITION_H
