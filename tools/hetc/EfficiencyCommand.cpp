// `hetc efficiency [TABLE.json]`: the relative efficiency of devices per class
// of workload, computed from the catalog's numbers beside a reference table,
// with every pair of devices the two rank differently.
#include "Commands.h"
#include "Flags.h"

#include "hetc/Cost/Efficiency.h"
#include "hetc/Hardware/Catalog.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace hetc::cli {

namespace {

struct EfficiencyFlags {
  std::string table;
  std::string catalog;
  bool json = false;
};

std::string figure(const std::optional<double> &value) {
  if (!value)
    return "n/a";
  char text[32];
  std::snprintf(text, sizeof text, *value < 0.1 ? "%.3f" : "%.2f", *value);
  return text;
}

} // namespace

Action registerEfficiencyCommand(CLI::App &app) {
  auto flags = std::make_shared<EfficiencyFlags>();
  CLI::App *command = app.add_subcommand(
      "efficiency",
      "Compare devices per class of workload from the catalog's numbers, "
      "beside a reference table, naming every pair the two rank differently");
  command->add_option("table", flags->table,
                      "The workloads and reference figures (default: "
                      "hardware/workloads/relative-efficiency.json)");
  command->add_option("--catalog", flags->catalog,
                      "The hardware catalog directory (default: hetc's own)")
      ->check(hetc::cli::nonEmptyPath("the hardware catalog directory"));
  command->add_flag("--json", flags->json, "Print JSON (schema hetc.efficiency-result/1)");

  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string catalogDir =
        flags->catalog.empty() ? hardware::defaultCatalogDir() : flags->catalog;
    std::string path = flags->table.empty()
                           ? catalogDir + "/workloads/relative-efficiency.json"
                           : flags->table;
    std::string error;
    std::optional<cost::EfficiencyTable> table =
        cost::loadEfficiencyTable(path, catalogDir, error);
    if (!table) {
      hetc::cli::printMessage("hetc efficiency: %s\n", error.c_str());
      return 1;
    }
    std::vector<cost::EfficiencyRow> rows;
    for (const cost::Workload &workload : table->workloads)
      rows.push_back(cost::computeRow(*table, workload));
    const std::string &baseline = table->devices[table->baseline].device.name;

    if (flags->json) {
      nlohmann::json out = {{"schema", "hetc.efficiency-result/1"},
                            {"table", path},
                            {"baseline", baseline}};
      nlohmann::json workloads = nlohmann::json::array();
      for (size_t w = 0; w < rows.size(); ++w) {
        nlohmann::json devices = nlohmann::json::array();
        for (size_t d = 0; d < table->devices.size(); ++d) {
          auto value = [](const std::optional<double> &v) {
            return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
          };
          devices.push_back({{"device", table->devices[d].device.name},
                             {"computed", value(rows[w].relative[d])},
                             {"reference", value(table->workloads[w].reference[d])}});
        }
        nlohmann::json disagreements = nlohmann::json::array();
        for (auto [above, below] : rows[w].disagreements)
          disagreements.push_back({table->devices[above].device.name,
                                   table->devices[below].device.name});
        workloads.push_back({{"name", table->workloads[w].name},
                             {"devices", devices},
                             {"order_agrees", rows[w].disagreements.empty()},
                             {"computed_above_reference_below", disagreements}});
      }
      out["workloads"] = workloads;
      std::cout << out.dump(2) << "\n";
      return 0;
    }

    std::printf("relative efficiency, %s = 1.0 (computed from the catalog; "
                "reference in brackets)\n\n",
                baseline.c_str());
    std::printf("%-38s", "workload");
    for (const cost::EfficiencyDevice &device : table->devices)
      std::printf(" %20s", device.device.name.c_str());
    std::printf("  order\n");
    int agreeing = 0;
    for (size_t w = 0; w < rows.size(); ++w) {
      std::printf("%-38s", table->workloads[w].name.c_str());
      for (size_t d = 0; d < table->devices.size(); ++d) {
        std::string cell = figure(rows[w].relative[d]) + " (" +
                           figure(table->workloads[w].reference[d]) + ")";
        std::printf(" %20s", cell.c_str());
      }
      bool agrees = rows[w].disagreements.empty();
      agreeing += agrees;
      std::printf("  %s\n", agrees ? "agrees" : "differs");
    }
    std::printf("\n%d of %zu rows rank the devices as the reference does.\n",
                agreeing, rows.size());
    for (size_t w = 0; w < rows.size(); ++w)
      for (auto [above, below] : rows[w].disagreements)
        std::printf("%s: the catalog ranks %s above %s; the reference the "
                    "other way round\n",
                    table->workloads[w].name.c_str(),
                    table->devices[above].device.name.c_str(),
                    table->devices[below].device.name.c_str());
    std::printf("\nwhy each row is computed as it is, and why rows differ: "
                "docs/efficiency.md\n");
    return 0;
  };
}

} // namespace hetc::cli
