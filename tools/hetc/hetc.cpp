// hetc: the command-line entry point for compiling, planning and running models.
// Subcommands are added as they become real; today it reports what it is.
#include "Version.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

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
  app.require_subcommand(0);
  CLI11_PARSE(app, argc, argv);
  if (argc == 1) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  return 0;
}
