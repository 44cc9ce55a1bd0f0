// Flag validators (see Flags.h).
#include "Flags.h"

#include "runtime/core/Limits.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hetc::cli {

namespace {
std::string readable(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}
} // namespace

CLI::Validator finiteRange(double low, double high) {
  std::string range = "[" + readable(low) + ", " + readable(high) + "]";
  return CLI::Validator(
      [low, high, range](std::string &text) -> std::string {
        char *end = nullptr;
        double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0')
          return "\"" + text + "\" is not a number; give one in " + range;
        if (!std::isfinite(value))
          return text + " is not a finite number; give one in " + range;
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

} // namespace hetc::cli
