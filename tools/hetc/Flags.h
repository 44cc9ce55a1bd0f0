// Validators shared by the subcommands' flags: finite numbers in readable
// ranges, bounded thread counts.
#ifndef HETC_TOOLS_HETC_FLAGS_H
#define HETC_TOOLS_HETC_FLAGS_H

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetc::cli {

/// A finite number in [low, high]; NaN and infinities are refused, and the
/// message prints the limits as a person writes them.
CLI::Validator finiteRange(double low, double high);

/// An input file that exists and is not a directory: replaces CLI11's
/// ExistingFile, whose messages ("File is actually a directory") give no
/// fix. `what` names what the file should hold ("a GGUF model").
CLI::Validator inputFile(const std::string &what);

/// An output that is a file: a name that is neither empty (which would read
/// as "not given") nor "-" (which would create a file named "-" where the
/// user meant standard output).
CLI::Validator outputFileName();

/// A path that must not be empty (a directory such as --catalog).
CLI::Validator nonEmptyPath(const std::string &what);

/// A thread count in [0, hetrt::core::kMaxThreads]; 0 means one per core.
CLI::Validator threadCount();

/// A finite number above zero (`positive`) or at least zero (`nonNegative`);
/// replaces CLI11's checks, whose messages print DBL_MAX in full.
CLI::Validator positive();
CLI::Validator nonNegative();

/// A whole number in [low, high]; a value past the range of 64 bits is
/// refused, never clamped.
CLI::Validator wholeRange(int64_t low, int64_t high);

/// Adds the model as a positional argument and as -m/--model (llama.cpp's
/// spelling) to `command`, both filling `model`; one of them is required, and
/// naming two different models (`run a.gguf -m b.gguf`) is a usage error
/// rather than a silent choice of one.
void addModelArgument(CLI::App *command, std::string &model,
                      const std::string &description);

/// --device-memory DEVICE=SIZE, repeatable or comma-separated, into `caps`;
/// `scope` says what it caps ("" for hetc plan, "With --system: " where a
/// plan is optional).
void addDeviceMemoryOption(CLI::App &command, std::vector<std::string> &caps,
                           const std::string &scope);

/// --compute-devices DEVICE[,DEVICE] into `ids`: the devices a plan may run
/// units on; `scope` as for addDeviceMemoryOption.
void addComputeDevicesOption(CLI::App &command, std::vector<std::string> &ids,
                             const std::string &scope);

/// The options that shape a plan where one is optional (hetc compile, run
/// and bench, each with --system).
struct PlanShapeFlags {
  std::vector<std::string> deviceMemory;
  std::vector<std::string> computeDevices;
  std::string objective = "latency";
};

/// --device-memory, --compute-devices and --objective, each "With --system".
void addPlanShapeOptions(CLI::App &command, PlanShapeFlags &flags);

/// Why `flags` cannot apply without a plan ("--device-memory caps a plan;
/// give --system too"), when one is set and `planned` is false.
std::optional<std::string> planShapeWithoutPlan(const PlanShapeFlags &flags,
                                                bool planned);

/// --objective latency|throughput|cost|energy into `objective`: what a
/// plan minimizes; `scope` as for addDeviceMemoryOption.
void addObjectiveOption(CLI::App &command, std::string &objective,
                        const std::string &scope);

/// --kv-budget SPACE=SIZE (pool, host or disk), repeatable or
/// comma-separated, into `budgets`, each checked as it is read.
void addKvBudgetOption(CLI::App &command, std::vector<std::string> &budgets);

/// A --kv-budget SPACE=SIZE as the space and its bytes.
std::pair<std::string, uint64_t> kvBudgetOf(const std::string &budget);
/// --kv-tier-format exact|int8 (on run and hetrt-run).
void addKvTierFormatOption(CLI::App &command, std::string &format);

/// The message for an argument CLI11 would misread: a single dash before
/// several letters ("-ngl 99" would otherwise parse as "-n gl"); empty when
/// `argument` is not one.
std::string misreadShortOption(const std::string &argument);

/// Reports a command-line parse error of `app` and returns the exit code:
/// help and version print as CLI11 prints them (0); a real error prints its
/// message with bytes that are not UTF-8 escaped (a path or value from the
/// command line may hold any bytes) and returns 2.
int reportParseError(CLI::App &app, const CLI::ParseError &error);

/// Ends a tool whose work returned `code`: flushes standard output and, when
/// what it printed could not be written (a full disk, a closed pipe), says
/// so on standard error and returns 1 instead of a success that lost the
/// output.
int finishStandardOutput(int code, const char *tool);

/// Makes std::cerr escape control bytes other than newline and tab (as
/// \xNN), so a path or value from the command line or the environment
/// printed in a message never acts on the terminal. For the tools' main().
void escapeStandardError();

/// printf to std::cerr, so the message is escaped as escapeStandardError()
/// arranges.
[[gnu::format(printf, 1, 2)]] void printMessage(const char *format, ...);

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_FLAGS_H
