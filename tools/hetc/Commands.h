// The hetc subcommands: each registers its flags on the CLI and runs when chosen.
#ifndef HETC_TOOLS_HETC_COMMANDS_H
#define HETC_TOOLS_HETC_COMMANDS_H

#include <functional>

namespace CLI {
class App;
} // namespace CLI

namespace hetc::cli {

/// A subcommand's action, run after parsing; returns the process exit code.
using Action = std::function<int()>;

/// `hetc import MODEL.gguf`: prints the llm module of a model.
Action registerImportCommand(CLI::App &app);
/// `hetc compile MODEL.gguf -o OUT.hetpack`: compiles a model (or stops at an
/// intermediate phase and prints its IR).
Action registerCompileCommand(CLI::App &app);
/// `hetc run MODEL -p TEXT -n N`: generates text.
Action registerRunCommand(CLI::App &app);
/// `hetc bench MODEL`: measures speed against the bandwidth roofline.
Action registerBenchCommand(CLI::App &app);
/// `hetc synth ... -o M.gguf`: writes a synthetic model.
Action registerSynthCommand(CLI::App &app);
/// `hetc calibrate -o host.json`: measures this machine for the cost model.
Action registerCalibrateCommand(CLI::App &app);
/// `hetc plan MODEL --system SYS`: predicts where and how fast a model runs.
Action registerPlanCommand(CLI::App &app);
/// `hetc simulate`: a request played through the plan, as a timeline.
Action registerSimulateCommand(CLI::App &app);
/// `hetc efficiency`: devices compared per class of workload.
Action registerEfficiencyCommand(CLI::App &app);
/// `hetc info MODEL`: what a model is and what it needs.
Action registerInfoCommand(CLI::App &app);
/// `hetc cache list|clear`: the cache of compiled packs.
Action registerCacheCommand(CLI::App &app);
/// `hetc serve MODEL`: an OpenAI-compatible HTTP server.
Action registerServeCommand(CLI::App &app);
/// `hetc chat MODEL`: a conversation in the terminal.
Action registerChatCommand(CLI::App &app);
/// `hetc kernels --target T -o DIR`: the GPU kernel library's code.
Action registerKernelsCommand(CLI::App &app);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_COMMANDS_H
