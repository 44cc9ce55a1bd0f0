// Parsing JSON with positioned errors.
#include "runtime/format/JsonText.h"

#include "runtime/format/InputFile.h"

#include <set>
#include <vector>

namespace hetrt::format {

namespace {

/// nlohmann's message reads "[json.exception.parse_error.101] parse error at
/// line 1, column 2: syntax error while parsing value - invalid literal; last
/// read: 'x'". Keep what follows the position.
std::string detailOf(const nlohmann::json::parse_error &error) {
  std::string text = error.what();
  size_t colon = text.find(": ");
  if (colon != std::string::npos)
    text = text.substr(colon + 2);
  return printable(text);
}

/// Thrown from the parser callback at an object's second use of a key.
struct DuplicateKey {
  std::string key;
};

} // namespace

std::optional<nlohmann::json> parseJsonText(std::string_view text,
                                            std::string &why) {
  auto fail = [&](size_t offset, const std::string &detail) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    why = "is not valid JSON at line " + std::to_string(line) + ", column " +
          std::to_string(column) + ": " + detail;
    return std::nullopt;
  };
  // JSON leaves a repeated key to the reader, and nlohmann keeps the last:
  // in a file a person wrote, the second value silently replaced the first.
  std::vector<std::set<std::string>> keysOfOpenObjects;
  nlohmann::json::parser_callback_t refuseRepeatedKeys =
      [&](int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start)
          keysOfOpenObjects.emplace_back();
        else if (event == Event::object_end && !keysOfOpenObjects.empty())
          keysOfOpenObjects.pop_back();
        else if (event == Event::key && !keysOfOpenObjects.empty() &&
                 !keysOfOpenObjects.back().insert(parsed.get<std::string>())
                      .second)
          throw DuplicateKey{parsed.get<std::string>()};
        return true;
      };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), refuseRepeatedKeys,
                                 /*allow_exceptions=*/true,
                                 /*ignore_comments=*/false);
  } catch (const DuplicateKey &duplicate) {
    std::string quoted = nlohmann::json(duplicate.key).dump();
    size_t first = text.find(quoted);
    size_t second = first == std::string_view::npos
                        ? first
                        : text.find(quoted, first + quoted.size());
    return fail(second == std::string_view::npos ? text.size() : second,
                "the key " + printable(quoted) +
                    " appears twice in one object; keep one of the values");
  } catch (const nlohmann::json::parse_error &error) {
    // error.byte counts from 1 and points at the offending character.
    return fail(error.byte > 0 ? error.byte - 1 : 0, detailOf(error));
  } catch (const nlohmann::json::out_of_range &error) {
    // 406: a number past a double's range ("number overflow parsing
    // '1e999'"); nlohmann gives no position, so find the number's text.
    std::string message = error.what();
    size_t quote = message.find('\'');
    size_t close =
        quote == std::string::npos ? quote : message.find('\'', quote + 1);
    if (close == std::string::npos)
      return fail(text.size(), printable(message));
    std::string number = message.substr(quote + 1, close - quote - 1);
    size_t at = text.find(number);
    return fail(at == std::string_view::npos ? text.size() : at,
                "the number " + printable(number) +
                    " is too large for a double; write a finite value");
  }
}

} // namespace hetrt::format
