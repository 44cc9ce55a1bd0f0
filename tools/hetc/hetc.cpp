// hetc: the command-line entry point for compiling, planning and running models.
// Each subcommand lives in its own file (see Commands.h); this file wires them
// and holds what every subcommand shares: the last of a repeated option wins,
// --help shows every default, and the exit codes below.
#include "Commands.h"
#include "Flags.h"
#include "Version.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/MappedFiles.h"

#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

/// Exit codes, documented in --help and docs/cli.md.
constexpr int kExitUsage = 2;

constexpr const char *kFooter =
    "\nExit codes: 0 success; 1 an input, a file or the run failed (the "
    "message names it); 2 the command line is wrong; 3 hetc plan or simulate "
    "found no placement that fits.\n"
    "Environment: HETC_CACHE_DIR is where compiled packs of GGUF models are "
    "cached (default $XDG_CACHE_HOME/hetc, else ~/.cache/hetc); `hetc cache "
    "list` shows it.";

} // namespace

namespace {
int runHetc(int argc, char **argv) {
  CLI::App app{"hetc: a heterogeneous compiler for large-language-model "
               "inference.\n"
               "It lowers a model through the llm and het MLIR dialects into code "
               "for every device of a machine (x86 CPUs, NVIDIA, AMD, SPIR-V) "
               "chosen by a cost model.\n"
               "Inspect and transform the IR with hetc-opt.",
               "hetc"};
  app.footer(kFooter);
  // People repeat flags when they edit a command line: the last one counts,
  // as in llama.cpp. Subcommands inherit these defaults.
  app.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->always_capture_default();
  app.set_version_flag("--version",
                       std::string("hetc ") + HETC_VERSION + " (LLVM/MLIR " +
                           HETC_LLVM_VERSION + ")",
                       "Print the version and exit");
  std::vector<hetc::cli::Action> actions = {
      hetc::cli::registerImportCommand(app),
      hetc::cli::registerCompileCommand(app),
      hetc::cli::registerRunCommand(app),
      hetc::cli::registerChatCommand(app),
      hetc::cli::registerServeCommand(app),
      hetc::cli::registerInfoCommand(app),
      hetc::cli::registerSynthCommand(app),
      hetc::cli::registerBenchCommand(app),
      hetc::cli::registerCalibrateCommand(app),
      hetc::cli::registerPlanCommand(app),
      hetc::cli::registerSimulateCommand(app),
      hetc::cli::registerEfficiencyCommand(app),
      hetc::cli::registerCacheCommand(app),
      hetc::cli::registerKernelsCommand(app),
  };
  CLI::App *help = app.add_subcommand(
      "help", "Print this list of commands, or with a command's name its help");
  help->add_option("command", "The command to describe");
  // `hetc help run` is answered before parsing: CLI11 would read "run" as
  // the run command itself, and ask for its model.
  std::string helpTopic;
  if (argc == 3 && std::string(argv[1]) == "help")
    helpTopic = argv[2];

  if (!helpTopic.empty()) {
    CLI::App *topic = nullptr;
    for (CLI::App *command : app.get_subcommands({}))
      if (command != help && command->get_name() == helpTopic)
        topic = command;
    if (!topic) {
      std::fprintf(stderr,
                   "hetc help: there is no command \"%s\"; `hetc help` lists "
                   "them\n",
                   hetrt::format::printable(helpTopic).c_str());
      return kExitUsage;
    }
    std::fputs(topic->help("hetc").c_str(), stdout);
    return 0;
  }
  bool afterSeparator = false;
  for (int i = 1; i < argc; ++i) {
    std::string argument = argv[i];
    afterSeparator = afterSeparator || argument == "--";
    if (afterSeparator)
      continue;
    std::string message = hetc::cli::misreadShortOption(argument);
    if (!message.empty()) {
      hetc::cli::printMessage("hetc: %s\nRun with --help for more information.\n",
                   message.c_str());
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    // --help and --version end the same way; every real parse error is a
    // usage error, whatever CLI11's internal code for it.
    return hetc::cli::reportParseError(app, error) == 0 ? 0 : kExitUsage;
  }
  // App::help() describes the selected subcommand; `hetc help` wants the
  // top level.
  auto printCommandList = [&app] {
    std::fputs(app.get_formatter()
                   ->make_help(&app, "hetc", CLI::AppFormatMode::Normal)
                   .c_str(),
               stdout);
  };
  if (*help || argc == 1) {
    printCommandList();
    return 0;
  }
  for (const hetc::cli::Action &action : actions) {
    int code = action();
    if (code >= 0)
      return code;
  }
  printCommandList();
  return 0;
}
} // namespace

int main(int argc, char **argv) {
  hetrt::format::installMappedFileFaultHandler("hetc");
  hetc::cli::escapeStandardError();
  int code = runHetc(argc, argv);
  // MLIR and LLVM print through llvm::outs(), whose write errors would
  // otherwise end the process with an LLVM fatal error.
  llvm::outs().flush();
  if (llvm::outs().has_error()) {
    std::fprintf(stderr,
                 "hetc: cannot write the output to standard output (%s); "
                 "check the disk or the pipe it goes to\n",
                 llvm::outs().error().message().c_str());
    llvm::outs().clear_error();
    code = code == 0 ? 1 : code;
  }
  return hetc::cli::finishStandardOutput(code, "hetc");
}
