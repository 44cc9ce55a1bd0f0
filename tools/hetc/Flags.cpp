// Flag validators (see Flags.h).
#include "Flags.h"

#include "runtime/format/ByteSize.h"

#include "runtime/core/Limits.h"
#include "runtime/format/InputFile.h"

#include <cctype>
#include <cstdarg>
#include <sys/stat.h>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <streambuf>
#include <string>

namespace hetc::cli {

namespace {
/// Reads `text` as a decimal number as people write one (-0.5, 1e-5, .7):
/// strtod alone would also take hexadecimal ("0x10" as 16), "inf" and "nan".
/// Returns false for anything else; `nonFinite` says the text spelled an
/// infinity or NaN, for a message that says so.
bool parseDecimal(const std::string &text, double &value, bool &nonFinite) {
  nonFinite = false;
  size_t i = 0, n = text.size();
  if (i < n && (text[i] == '+' || text[i] == '-'))
    ++i;
  std::string rest = text.substr(i);
  for (char &c : rest)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (rest == "inf" || rest == "infinity" || rest == "nan") {
    nonFinite = true;
    return false;
  }
  auto digits = [&] {
    size_t start = i;
    while (i < n && std::isdigit(static_cast<unsigned char>(text[i])))
      ++i;
    return i - start;
  };
  size_t mantissa = digits();
  if (i < n && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0)
    return false;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-'))
      ++i;
    if (digits() == 0)
      return false;
  }
  if (i != n)
    return false;
  value = std::strtod(text.c_str(), nullptr);
  nonFinite = !std::isfinite(value);
  return !nonFinite;
}
} // namespace

CLI::Validator finiteRange(double low, double high) {
  std::string range = "[" + hetrt::format::readableNumber(low) + ", " +
                      hetrt::format::readableNumber(high) + "]";
  return CLI::Validator(
      [low, high, range](std::string &text) -> std::string {
        double value = 0;
        bool nonFinite = false;
        if (!parseDecimal(text, value, nonFinite))
          return nonFinite ? hetrt::format::printable(text) +
                                 " is not a finite number; give one in " + range
                           : "\"" + hetrt::format::printable(text) +
                                 "\" is not a decimal number; give one in " +
                                 range;
        if (value < low || value > high)
          return text + " is outside " + range;
        return {};
      },
      "NUMBER in " + range);
}

CLI::Validator threadCount() {
  return CLI::Validator(
      [](std::string &text) -> std::string {
        char *end = nullptr;
        long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0')
          return "\"" + text + "\" is not a whole number of threads";
        std::string error;
        if (!hetrt::core::checkThreadCount(value, "the value", error))
          return error;
        return {};
      },
      "0 to " + std::to_string(hetrt::core::kMaxThreads));
}

namespace {
CLI::Validator signCheck(bool allowZero) {
  return CLI::Validator(
      [allowZero](std::string &text) -> std::string {
        double value = 0;
        bool nonFinite = false;
        const char *wanted = allowZero ? "zero or more" : "more than zero";
        if (!parseDecimal(text, value, nonFinite) && !nonFinite)
          return "\"" + hetrt::format::printable(text) +
                 "\" is not a decimal number; give one " + wanted;
        if (nonFinite || value < 0 || (!allowZero && value == 0))
          return text + " is not " + wanted + "; give a number " + wanted;
        return {};
      },
      allowZero ? "NUMBER >= 0" : "NUMBER > 0");
}
} // namespace

CLI::Validator inputFile(const std::string &what) {
  return CLI::Validator(
      [what](std::string &path) -> std::string {
        if (path.empty())
          return "the path is empty; give the path of " + what;
        struct stat info;
        if (::stat(path.c_str(), &info) != 0)
          return path + ": cannot open (" + std::strerror(errno) +
                 "); give the path of " + what;
        if (S_ISDIR(info.st_mode))
          return path + ": is a directory; give the path of " + what +
                 " inside it";
        // Refused here, before any work, as a directory is: reading a FIFO
        // would wait for a writer, and a device is no model.
        if (!S_ISREG(info.st_mode))
          return path + ": is " + hetrt::format::fileKindName(info.st_mode) +
                 ", not a regular file; give the path of " + what;
        return {};
      },
      "FILE");
}

CLI::Validator outputFileName() {
  return CLI::Validator(
      [](std::string &path) -> std::string {
        if (path.empty())
          return "the path is empty; give a file name";
        if (path == "-")
          return "this output is a file, not standard output; give a file "
                 "name (./- if a file named \"-\" is really meant)";
        return {};
      },
      "FILE");
}

CLI::Validator nonEmptyPath(const std::string &what) {
  return CLI::Validator(
      [what](std::string &path) -> std::string {
        return path.empty() ? "the path is empty; give the path of " + what
                            : std::string();
      },
      "DIR");
}

CLI::Validator wholeRange(int64_t low, int64_t high) {
  std::string range =
      "[" + std::to_string(low) + ", " + std::to_string(high) + "]";
  return CLI::Validator(
      [low, high, range](std::string &text) -> std::string {
        errno = 0;
        char *end = nullptr;
        long long value = std::strtoll(text.c_str(), &end, 10);
        if (end == text.c_str() || *end != '\0')
          return "\"" + hetrt::format::printable(text) +
                 "\" is not a whole number; give one in " + range;
        if (errno == ERANGE || value < low || value > high)
          return text + " is outside " + range;
        return {};
      },
      "INT in " + range);
}

CLI::Validator positive() { return signCheck(false); }
CLI::Validator nonNegative() { return signCheck(true); }

void addModelArgument(CLI::App *command, std::string &model,
                      const std::string &description) {
  auto positional = std::make_shared<std::string>();
  auto named = std::make_shared<std::string>();
  command->add_option("model", *positional, description)
      ->check(inputFile("a GGUF model or a .hetpack"));
  command->add_option("-m,--model", *named, description + " (as -m in llama.cpp)")
      ->check(inputFile("a GGUF model or a .hetpack"));
  command->parse_complete_callback([positional, named, &model] {
    if (!positional->empty() && !named->empty() && *positional != *named)
      throw CLI::ValidationError(
          "model", "two models are given, " + *positional + " and " + *named +
                       " (-m); give one");
    if (positional->empty() && named->empty())
      throw CLI::RequiredError("A model (its path, or -m PATH)");
    model = positional->empty() ? *named : *positional;
  });
}

void addDeviceMemoryOption(CLI::App &command, std::vector<std::string> &caps,
                           const std::string &scope) {
  command
      .add_option("--device-memory", caps,
                  scope + "Cap what the plan may use of a device's memory, "
                          "DEVICE=SIZE (e.g. vulkan0=64MiB); repeat or "
                          "comma-separate for several")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void addComputeDevicesOption(CLI::App &command, std::vector<std::string> &ids,
                             const std::string &scope) {
  command
      .add_option("--compute-devices", ids,
                  scope + "Run units only on these devices (e.g. vulkan0, "
                          "leaving the CPU to sampling and serving); the "
                          "others' memories still hold weights; "
                          "comma-separate several")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void addPlanShapeOptions(CLI::App &command, PlanShapeFlags &flags) {
  const std::string scope = "With --system: ";
  addDeviceMemoryOption(command, flags.deviceMemory, scope);
  addComputeDevicesOption(command, flags.computeDevices, scope);
  addObjectiveOption(command, flags.objective, scope);
}

std::optional<std::string> planShapeWithoutPlan(const PlanShapeFlags &flags,
                                                bool planned) {
  if (planned)
    return std::nullopt;
  if (!flags.deviceMemory.empty())
    return "--device-memory caps a plan; give --system too";
  if (!flags.computeDevices.empty())
    return "--compute-devices restricts a plan; give --system too";
  if (flags.objective != "latency")
    return "--objective chooses a plan; give --system too";
  return std::nullopt;
}

void addObjectiveOption(CLI::App &command, std::string &objective,
                        const std::string &scope) {
  command.add_option("--objective", objective, scope + "What the plan optimizes")
      ->check(CLI::IsMember({"latency", "throughput", "cost", "energy"}))
      ->capture_default_str();
}

std::pair<std::string, uint64_t> kvBudgetOf(const std::string &budget) {
  size_t equals = budget.find('=');
  std::string space = budget.substr(0, equals);
  std::optional<uint64_t> bytes =
      equals == std::string::npos
          ? std::nullopt
          : hetrt::format::parseByteSize(budget.substr(equals + 1));
  return {space, bytes.value_or(UINT64_MAX)};
}

void addKvBudgetOption(CLI::App &command, std::vector<std::string> &budgets) {
  command
      .add_option("--kv-budget", budgets,
                  "Bound what a memory holds of the KV cache, SPACE=SIZE: "
                  "pool (the blocks the model code reads), host (blocks "
                  "moved out of a full pool), numaN (host, held on NUMA "
                  "node N) or disk (a file, once host is full), e.g. "
                  "host=64MiB; repeat or comma-separate")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Validator(
          [](std::string &budget) -> std::string {
            size_t equals = budget.find('=');
            if (equals == std::string::npos)
              return budget + ": write SPACE=SIZE, e.g. host=64MiB";
            std::string space = budget.substr(0, equals);
            bool numaNode =
                space.size() > 4 && space.rfind("numa", 0) == 0 &&
                space.find_first_not_of("0123456789", 4) == std::string::npos;
            if (space != "pool" && space != "host" && space != "disk" &&
                !numaNode)
              return budget + ": the KV cache's memories are pool, host, "
                              "numaN (host, held on NUMA node N) and disk";
            if (!hetrt::format::parseByteSize(budget.substr(equals + 1)))
              return budget + ": the size must be " +
                     hetrt::format::kByteSizeHint;
            return {};
          },
          "SPACE=SIZE"));
}

void addKvTierFormatOption(CLI::App &command, std::string &format) {
  command
      .add_option("--kv-tier-format", format,
                  "How the KV cache's host and disk tiers keep the blocks "
                  "moved out of the pool: exact, or int8 (rows of int8 with "
                  "a scale: fewer bytes to move, rounded keys and values). "
                  "A plan chooses int8 where its link is the bottleneck; "
                  "exact otherwise")
      ->check(CLI::IsMember({"exact", "int8"}));
}

std::string misreadShortOption(const std::string &argument) {
  double value = 0;
  bool nonFinite = false;
  // CLI11 reads "-1" as a value itself, but not "-inf" or "-nan".
  if (argument.size() > 1 && argument[0] == '-' &&
      !parseDecimal(argument, value, nonFinite) && nonFinite)
    return "unknown option " + argument + ": a value that starts with '-' is "
           "read as an option; attach it to its flag with '=' (--flag=" +
           argument + ")";
  if (argument.size() < 3 || argument[0] != '-' || argument[1] == '-' ||
      !std::isalpha(static_cast<unsigned char>(argument[1])) ||
      !std::isalpha(static_cast<unsigned char>(argument[2])))
    return {};
  std::string message = "unknown option " + argument +
                        ": short options are one letter, before their value "
                        "(-n 64, or -n64); several letters after one dash "
                        "are not an option";
  if (argument == "-ngl")
    message += "; hetc places layers on devices with its cost model instead "
               "of -ngl: see `hetc plan MODEL --system SYS`";
  return message;
}

int reportParseError(CLI::App &app, const CLI::ParseError &error) {
  if (error.get_exit_code() == 0)
    return app.exit(error);
  std::fprintf(stderr, "%s\nRun with --help for more information.\n",
               hetrt::format::printable(error.what()).c_str());
  return 2;
}

namespace {
/// Forwards to another buffer with control bytes escaped. Messages are
/// written whole, so escaping byte by byte is enough.
class EscapingBuffer : public std::streambuf {
public:
  explicit EscapingBuffer(std::streambuf *target) : target_(target) {}

protected:
  int overflow(int byte) override {
    if (byte == traits_type::eof())
      return traits_type::not_eof(byte);
    char c = static_cast<char>(byte);
    return xsputn(&c, 1) == 1 ? byte : traits_type::eof();
  }
  std::streamsize xsputn(const char *text, std::streamsize count) override {
    std::string out;
    out.reserve(static_cast<size_t>(count));
    for (std::streamsize i = 0; i < count; ++i) {
      unsigned char byte = static_cast<unsigned char>(text[i]);
      if ((byte < 0x20 && byte != '\n' && byte != '\t') || byte == 0x7f) {
        char escaped[5];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
        out += escaped;
      } else {
        out += static_cast<char>(byte);
      }
    }
    std::streamsize written =
        target_->sputn(out.data(), static_cast<std::streamsize>(out.size()));
    return written == static_cast<std::streamsize>(out.size()) ? count : 0;
  }
  int sync() override { return target_->pubsync(); }

private:
  std::streambuf *target_;
};
} // namespace

void escapeStandardError() {
  static EscapingBuffer buffer(std::cerr.rdbuf());
  std::cerr.rdbuf(&buffer);
}

void printMessage(const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  va_list copy;
  va_copy(copy, arguments);
  int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length > 0) {
    std::string text(static_cast<size_t>(length) + 1, '\0');
    std::vsnprintf(text.data(), text.size(), format, arguments);
    text.pop_back();
    std::cerr << text;
  }
  va_end(arguments);
}

int finishStandardOutput(int code, const char *tool) {
  errno = 0;
  std::cout.flush();
  bool failed = !std::cout.good();
  failed = std::fflush(stdout) != 0 || failed;
  failed = std::ferror(stdout) != 0 || failed;
  if (!failed)
    return code;
  int cause = errno;
  std::fprintf(stderr,
               "%s: cannot write the output to standard output (%s); check "
               "the disk or the pipe it goes to\n",
               tool, cause ? std::strerror(cause) : "write error");
  return code == 0 ? 1 : code;
}

} // namespace hetc::cli
