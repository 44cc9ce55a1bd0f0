#include "runtime/format/ByteSize.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace hetrt::format {

std::optional<uint64_t> parseByteSize(const std::string &text) {
  static const std::pair<const char *, uint64_t> kUnits[] = {
      {"TiB", uint64_t(1) << 40}, {"GiB", uint64_t(1) << 30},
      {"MiB", uint64_t(1) << 20}, {"KiB", uint64_t(1) << 10},
      {"TB", 1000000000000ull},   {"GB", 1000000000ull},
      {"MB", 1000000ull},         {"KB", 1000ull},
      {"B", 1},
  };
  uint64_t unit = 0;
  std::string number;
  for (const auto &[suffix, bytes] : kUnits) {
    std::string_view whole(text), tail(suffix);
    if (whole.size() > tail.size() &&
        whole.substr(whole.size() - tail.size()) == tail) {
      unit = bytes;
      number = text.substr(0, text.size() - tail.size());
      break;
    }
  }
  if (unit == 0 || number.empty() ||
      !(std::isdigit(static_cast<unsigned char>(number[0])) ||
        number[0] == '.'))
    return std::nullopt;
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(number.c_str(), &end);
  double bytes = value * static_cast<double>(unit);
  if (end != number.c_str() + number.size() || errno == ERANGE ||
      !std::isfinite(bytes) || bytes < 0 || bytes >= 18446744073709551616.0)
    return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

} // namespace hetrt::format
