// Relative efficiency of devices on whole classes of workloads, computed from
// the catalog's numbers by roofline models (docs/efficiency.md): the check of
// the claim that no single architecture wins every workload.
#ifndef HETC_COST_EFFICIENCY_H
#define HETC_COST_EFFICIENCY_H

#include "hetc/Hardware/Catalog.h"

#include <optional>
#include <string>
#include <vector>

namespace hetc::cost {

/// How a workload's speed follows from a device's figures.
enum class WorkloadModel {
  /// Dense math at `dataType`: the compute peak (f16 takes the better of the
  /// f16 and bf16 peaks).
  Compute,
  /// Every item reads `bytes` once (batch-1 decode): memory bandwidth, with
  /// the model split over as many devices as its bytes need; per watt of all
  /// of them.
  StreamPerWatt,
  /// Random reads over a table of `bytes` (embedding lookups): the bandwidth
  /// of the device's own memory when the table fits there, else of its link
  /// to the host.
  Gather,
  /// Peak operations at `dataType` per watt.
  PeakPerWatt,
};

struct Workload {
  std::string name;
  WorkloadModel model = WorkloadModel::Compute;
  hardware::DataType dataType = hardware::DataType::F16;
  double bytes = 0;
  /// What the reference table says per device (nothing: "n/a").
  std::vector<std::optional<double>> reference;
  std::string why;
};

struct EfficiencyDevice {
  hardware::Device device;
  /// The link to a host's memory (accelerators), when the table uses one.
  std::optional<hardware::Link> hostLink;
};

struct EfficiencyTable {
  std::string origin;
  std::string source;
  int baseline = 0;
  std::vector<EfficiencyDevice> devices;
  std::vector<Workload> workloads;
};

/// Reads a table (schema hetc.efficiency/1, docs/efficiency.md), resolving
/// device and link names in `catalogDir`. Errors name the file, the field
/// and the fix.
std::optional<EfficiencyTable> loadEfficiencyTable(const std::string &path,
                                                   const std::string &catalogDir,
                                                   std::string &error);

/// A workload's absolute figure on one device (its unit depends on the
/// model), or nothing when the device cannot run it at all.
std::optional<double> workloadFigure(const Workload &workload,
                                     const EfficiencyDevice &device);

struct EfficiencyRow {
  /// Per device, the figure relative to the baseline device's.
  std::vector<std::optional<double>> relative;
  /// Pairs of devices (i, j) the computation ranks i above j while the
  /// reference ranks j above i.
  std::vector<std::pair<int, int>> disagreements;
};

EfficiencyRow computeRow(const EfficiencyTable &table, const Workload &workload);

} // namespace hetc::cost

#endif // HETC_COST_EFFICIENCY_H
