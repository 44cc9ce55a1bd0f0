// Parsing JSON from files with errors a user can act on: the line and column
// of a syntax error, and numbers too large for a double named as such.
#ifndef HETRT_FORMAT_JSONTEXT_H
#define HETRT_FORMAT_JSONTEXT_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace hetrt::format {

/// Parses `text` as one JSON document. On failure returns nullopt and sets
/// `why` to where and what, e.g. "is not valid JSON at line 3, column 7:
/// expected ',' or '}' after an object member" or "is not valid JSON at line
/// 2, column 14: the number 1e999 is too large for a double".
std::optional<nlohmann::json> parseJsonText(std::string_view text,
                                            std::string &why);

} // namespace hetrt::format

#endif // HETRT_FORMAT_JSONTEXT_H
