// The placement problem as a mixed-integer program for GLPK: any DAG, and the
// cross-check of the chain DP.
#include "hetc/Partition/Partition.h"

#include "Internal.h"

#include <glpk.h>

#include <algorithm>
#include <cmath>

namespace hetc::partition {

namespace {

/// A power of two near `magnitude`: dividing by it rescales coefficients to
/// about 1 without any rounding, so GLPK's absolute tolerances mean the same
/// for seconds and for gigabytes and the exact re-check stays meaningful.
double powerOfTwoNear(double magnitude) {
  if (!(magnitude > 0))
    return 1;
  return std::ldexp(1.0, std::ilogb(magnitude));
}

enum class Goal { Objective, Overflow };

/// The MIP of `problem`, owned; rows and columns are 1-based as in GLPK.
class Model {
public:
  Model(const Problem &problem, Goal goal) : problem(problem), goal(goal) {
    lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    build();
  }
  ~Model() { glp_delete_prob(lp); }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Solves; on success fills `choice` with an option per unit. Returns an
  /// empty string, "infeasible", or GLPK's failure in words.
  std::string solve(const MipOptions &options, std::vector<int> &choice,
                    bool &optimal) {
    glp_load_matrix(lp, static_cast<int>(values.size()) - 1, rows.data(),
                    columns.data(), values.data());
    glp_iocp parameters;
    glp_init_iocp(&parameters);
    parameters.msg_lev = GLP_MSG_OFF;
    parameters.presolve = GLP_ON;
    // Prove optimality outright: no relative gap, and integrality and
    // objective comparisons far below what separates distinct plans.
    parameters.mip_gap = 0;
    parameters.tol_int = 1e-9;
    parameters.tol_obj = 1e-9;
    if (options.timeLimitSeconds > 0)
      parameters.tm_lim =
          static_cast<int>(std::min(options.timeLimitSeconds * 1000, 2e9));
    int code = glp_intopt(lp, &parameters);
    int status = glp_mip_status(lp);
    if (status == GLP_NOFEAS ||
        (code == GLP_ENOPFS && status != GLP_OPT && status != GLP_FEAS))
      return "infeasible";
    optimal = status == GLP_OPT;
    if (code == GLP_ETMLIM && status != GLP_FEAS)
      return "GLPK reached the time limit of " +
             std::to_string(options.timeLimitSeconds) +
             " s before finding "
             "a plan";
    if ((code != 0 && code != GLP_ETMLIM) ||
        (status != GLP_OPT && status != GLP_FEAS))
      return "GLPK failed (glp_intopt returned " + std::to_string(code) +
             ", status " + std::to_string(status) + ")";
    choice.assign(problem.units.size(), 0);
    for (size_t u = 0; u < problem.units.size(); ++u) {
      double best = -1;
      for (size_t o = 0; o < problem.units[u].options.size(); ++o) {
        double x = glp_mip_col_val(lp, optionColumn[u] + static_cast<int>(o));
        if (x > best) {
          best = x;
          choice[u] = static_cast<int>(o);
        }
      }
    }
    return {};
  }

  /// Lowers memory m's limit by `bytes`, for when GLPK's feasibility
  /// tolerance let a plan overflow it slightly.
  void tighten(size_t memory, uint64_t bytes) {
    int row = capacityRow[memory];
    if (row == 0)
      return;
    double limit =
        glp_get_row_ub(lp, row) - static_cast<double>(bytes) / rowScale[memory];
    glp_set_row_bnds(lp, row, GLP_UP, 0, limit);
  }

private:
  void build() {
    size_t numUnits = problem.units.size();
    size_t numDevices = problem.devices.size();
    double objectiveScale = 1;
    if (goal == Goal::Objective) {
      double largest = 0;
      for (const Unit &unit : problem.units)
        for (const Option &option : unit.options)
          largest = std::max(largest, std::abs(option.value));
      for (const Edge &edge : problem.edges)
        for (double cost : edge.transfer)
          largest = std::max(largest, std::abs(cost));
      objectiveScale = powerOfTwoNear(largest);
    }
    // x[u][o]: unit u takes option o; exactly one per unit.
    optionColumn.resize(numUnits);
    for (size_t u = 0; u < numUnits; ++u) {
      const std::vector<Option> &options = problem.units[u].options;
      optionColumn[u] = addColumns(options.size(), GLP_BV);
      int row = addRow(GLP_FX, 1);
      for (size_t o = 0; o < options.size(); ++o) {
        int column = optionColumn[u] + static_cast<int>(o);
        if (goal == Goal::Objective)
          glp_set_obj_coef(lp, column, options[o].value / objectiveScale);
        entry(row, column, 1);
      }
    }
    if (goal == Goal::Objective)
      for (const Edge &edge : problem.edges)
        addTransfer(edge, numDevices, objectiveScale);
    // One row per memory that some choice can overflow; in the overflow goal
    // a free slack column per row takes the excess and is what is minimized.
    capacityRow.assign(problem.memories.size(), 0);
    rowScale.assign(problem.memories.size(), 1);
    double overflowScale = 1;
    for (const Memory &memory : problem.memories)
      overflowScale =
          std::max(overflowScale, static_cast<double>(memory.capacityBytes));
    overflowScale = powerOfTwoNear(overflowScale);
    for (size_t m = 0; m < problem.memories.size(); ++m) {
      uint64_t worst = 0, largest = 0;
      for (const Unit &unit : problem.units) {
        uint64_t most = 0;
        for (const Option &option : unit.options)
          most = std::max(most, option.bytesIn(m));
        worst += most;
        largest = std::max(largest, most);
      }
      uint64_t capacity = problem.memories[m].capacityBytes;
      if (worst <= capacity)
        continue;
      double scale = powerOfTwoNear(static_cast<double>(
          std::max(largest, std::max<uint64_t>(capacity, 1))));
      rowScale[m] = scale;
      int row = addRow(GLP_UP, static_cast<double>(capacity) / scale);
      capacityRow[m] = row;
      for (size_t u = 0; u < numUnits; ++u)
        for (size_t o = 0; o < problem.units[u].options.size(); ++o)
          if (uint64_t bytes = problem.units[u].options[o].bytesIn(m))
            entry(row, optionColumn[u] + static_cast<int>(o),
                  static_cast<double>(bytes) / scale);
      if (goal == Goal::Overflow) {
        int slack = addColumns(1, GLP_CV);
        glp_set_col_bnds(lp, slack, GLP_LO, 0, 0);
        glp_set_obj_coef(lp, slack, scale / overflowScale);
        entry(row, slack, -1);
      }
    }
  }

  /// The transfer cost of `edge` linearized exactly: y[a][b] in [0, 1] per
  /// pair of devices its ends can take, with the row sums of y equal to how
  /// much of `from` is on a and the column sums to how much of `to` is on b.
  /// For binary x that forces y[a][b] = [from on a] * [to on b], whatever
  /// the signs of the costs.
  void addTransfer(const Edge &edge, size_t numDevices, double scale) {
    if (std::all_of(edge.transfer.begin(), edge.transfer.end(),
                    [](double cost) { return cost == 0; }))
      return;
    auto devicesOf = [&](int unit) {
      std::vector<int> devices;
      for (const Option &option : problem.units[unit].options)
        if (std::find(devices.begin(), devices.end(), option.device) ==
            devices.end())
          devices.push_back(option.device);
      std::sort(devices.begin(), devices.end());
      return devices;
    };
    std::vector<int> fromDevices = devicesOf(edge.from);
    std::vector<int> toDevices = devicesOf(edge.to);
    int first = addColumns(fromDevices.size() * toDevices.size(), GLP_CV);
    auto pair = [&](size_t a, size_t b) {
      return first + static_cast<int>(a * toDevices.size() + b);
    };
    for (size_t a = 0; a < fromDevices.size(); ++a)
      for (size_t b = 0; b < toDevices.size(); ++b)
        glp_set_obj_coef(lp, pair(a, b),
                         edge.cost(fromDevices[a], toDevices[b], numDevices) /
                             scale);
    auto tie = [&](int unit, int device, const std::vector<int> &pairColumns) {
      int row = addRow(GLP_FX, 0);
      for (int column : pairColumns)
        entry(row, column, 1);
      const std::vector<Option> &options = problem.units[unit].options;
      for (size_t o = 0; o < options.size(); ++o)
        if (options[o].device == device)
          entry(row, optionColumn[unit] + static_cast<int>(o), -1);
    };
    for (size_t a = 0; a < fromDevices.size(); ++a) {
      std::vector<int> pairColumns;
      for (size_t b = 0; b < toDevices.size(); ++b)
        pairColumns.push_back(pair(a, b));
      tie(edge.from, fromDevices[a], pairColumns);
    }
    for (size_t b = 0; b < toDevices.size(); ++b) {
      std::vector<int> pairColumns;
      for (size_t a = 0; a < fromDevices.size(); ++a)
        pairColumns.push_back(pair(a, b));
      tie(edge.to, toDevices[b], pairColumns);
    }
  }

  int addColumns(size_t count, int kind) {
    int first = glp_add_cols(lp, static_cast<int>(count));
    for (int column = first; column < first + static_cast<int>(count);
         ++column) {
      glp_set_col_kind(lp, column, kind);
      if (kind == GLP_CV)
        glp_set_col_bnds(lp, column, GLP_DB, 0, 1);
    }
    return first;
  }

  int addRow(int type, double bound) {
    int row = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, row, type, type == GLP_FX ? bound : 0, bound);
    return row;
  }

  void entry(int row, int column, double value) {
    rows.push_back(row);
    columns.push_back(column);
    values.push_back(value);
  }

  const Problem &problem;
  Goal goal;
  glp_prob *lp = nullptr;
  /// Per unit, the column of its option 0.
  std::vector<int> optionColumn;
  /// Per memory, its row (0 when it cannot overflow) and the row's divisor.
  std::vector<int> capacityRow;
  std::vector<double> rowScale;
  /// The constraint matrix as triplets, with GLPK's unused entry 0.
  std::vector<int> rows{0}, columns{0};
  std::vector<double> values{0};
};

} // namespace

Result solveMip(const Problem &problem, const MipOptions &options) {
  if (std::string error = validate(problem); !error.empty())
    return detail::failure(std::move(error));
  glp_term_out(GLP_OFF);
  Model model(problem, Goal::Objective);
  // GLPK checks capacities within a relative tolerance; a plan that
  // overflows by a few bytes is re-solved with that memory's limit lowered.
  bool infeasible = false;
  for (int attempt = 0; attempt < 8 && !infeasible; ++attempt) {
    std::vector<int> choice;
    bool optimal = true;
    std::string error = model.solve(options, choice, optimal);
    if ((infeasible = error == "infeasible"))
      continue;
    if (!error.empty())
      return detail::failure(std::move(error));
    Plan plan = evaluate(problem, std::move(choice));
    if (plan.fits(problem)) {
      Result result;
      result.plan = std::move(plan);
      result.optimal = optimal;
      return result;
    }
    for (size_t m = 0; m < problem.memories.size(); ++m)
      if (uint64_t over = plan.overflowBytes(problem, m))
        model.tighten(m, over);
  }
  if (!infeasible)
    return detail::failure("GLPK's plans kept overflowing a memory by less "
                           "than its feasibility tolerance");
  Model overflow(problem, Goal::Overflow);
  std::vector<int> closest;
  bool optimal = true;
  if (std::string error = overflow.solve(options, closest, optimal);
      !error.empty())
    return detail::failure("no placement fits the memory limits, and GLPK "
                           "could not find the closest one: " +
                           error);
  Result result = detail::infeasible(problem, std::move(closest));
  result.optimal = optimal;
  return result;
}

} // namespace hetc::partition
