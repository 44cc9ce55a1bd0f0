// hetrt-synth: `hetc synth` for machines that have the runtime and not the
// compiler. A pack compiled elsewhere for a synthetic model binds to its
// file's hash; synthetic models are deterministic, so the model written here
// is byte for byte the one the pack was compiled for, and a GPU machine can
// run a Llama-3.2-1B-shaped model without copying gigabytes to it.
#include "Commands.h"
#include "Flags.h"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

int main(int argc, char **argv) {
  hetc::cli::escapeStandardError();
  CLI::App app{"hetrt-synth: write a synthetic Llama-shaped model, as `hetc "
               "synth` does, with the runtime's libraries alone",
               "hetrt-synth"};
  app.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->always_capture_default();
  hetc::cli::Action synth = hetc::cli::registerSynthCommand(app);
  app.require_subcommand(1);
  // The flags are `hetc synth`'s: the tool reads them as that command.
  std::vector<char *> arguments(argv, argv + argc);
  std::string command = "synth";
  arguments.insert(arguments.begin() + 1, command.data());
  for (int i = 1; i < argc; ++i) {
    std::string message = hetc::cli::misreadShortOption(argv[i]);
    if (!message.empty()) {
      hetc::cli::printMessage("hetrt-synth: %s\n", message.c_str());
      return 2;
    }
  }
  try {
    app.parse(static_cast<int>(arguments.size()), arguments.data());
  } catch (const CLI::ParseError &error) {
    return hetc::cli::reportParseError(app, error) == 0 ? 0 : 2;
  }
  return synth();
}
