// hetc: the command-line entry point for compiling, planning and running models.
// Each subcommand lives in its own file (see Commands.h); this file wires them.
#include "Commands.h"
#include "Version.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  CLI::App app{"hetc: a heterogeneous compiler for large-language-model "
               "inference.\n"
               "It lowers a model through the llm and het MLIR dialects into code "
               "for every device of a machine (x86 CPUs, NVIDIA, AMD, SPIR-V) "
               "chosen by a cost model.\n"
               "Inspect and transform the IR with hetc-opt.",
               "hetc"};
  app.set_version_flag("--version",
                       std::string("hetc ") + HETC_VERSION + " (LLVM/MLIR " +
                           HETC_LLVM_VERSION + ")",
                       "Print the version and exit");
  std::vector<hetc::cli::Action> actions = {
      hetc::cli::registerImportCommand(app),
      hetc::cli::registerCompileCommand(app),
      hetc::cli::registerRunCommand(app),
      hetc::cli::registerSynthCommand(app),
      hetc::cli::registerBenchCommand(app),
      hetc::cli::registerCalibrateCommand(app),
      hetc::cli::registerPlanCommand(app),
      hetc::cli::registerSimulateCommand(app),
      hetc::cli::registerEfficiencyCommand(app),
  };
  CLI11_PARSE(app, argc, argv);
  for (const hetc::cli::Action &action : actions) {
    int code = action();
    if (code >= 0)
      return code;
  }
  std::fputs(app.help().c_str(), stdout);
  return 0;
}
