#include "server/OpenAiRequest.h"

#include <cmath>
#include <limits>

namespace hetc::server {

using nlohmann::json;

json errorBody(const ApiError &error) {
  return {{"error",
           {{"message", error.message},
            {"type", error.type},
            {"param", error.param.empty() ? json(nullptr) : json(error.param)},
            {"code", error.code.empty() ? json(nullptr) : json(error.code)}}}};
}

namespace {

/// Reads one field of the body, or says what is wrong with it.
class Fields {
public:
  Fields(const json &body, ApiError &error) : body_(body), error_(error) {}

  bool failed() const { return failed_; }
  bool has(const char *name) const {
    return body_.contains(name) && !body_[name].is_null();
  }
  const json &operator[](const char *name) const { return body_[name]; }

  bool fail(const std::string &param, const std::string &message) {
    if (!failed_) {
      error_.param = param;
      error_.message = message;
      failed_ = true;
    }
    return false;
  }

  void number(const char *name, float &out, double low, double high) {
    if (!has(name))
      return;
    const json &value = body_[name];
    if (!value.is_number()) {
      fail(name, std::string("'") + name + "' must be a number, not " +
                     value.type_name());
      return;
    }
    double number = value.get<double>();
    if (!std::isfinite(number) || number < low || number > high) {
      fail(name, std::string("'") + name + "' is " + value.dump() +
                     "; it must be from " + json(low).dump() + " to " +
                     json(high).dump());
      return;
    }
    out = static_cast<float>(number);
  }

  template <typename Int>
  void integer(const char *name, Int &out, int64_t low, int64_t high) {
    if (!has(name))
      return;
    const json &value = body_[name];
    if (!value.is_number_integer()) {
      fail(name, std::string("'") + name + "' must be an integer, not " +
                     (value.is_number() ? value.dump() : value.type_name()));
      return;
    }
    // Unsigned values past INT64_MAX are out of every range here.
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(name, std::string("'") + name + "' is " + value.dump() +
                     "; it must be from " + std::to_string(low) + " to " +
                     std::to_string(high));
      return;
    }
    int64_t number = value.get<int64_t>();
    if (number < low || number > high) {
      fail(name, std::string("'") + name + "' is " + value.dump() +
                     "; it must be from " + std::to_string(low) + " to " +
                     std::to_string(high));
      return;
    }
    out = static_cast<Int>(number);
  }

  void boolean(const char *name, bool &out) {
    if (!has(name))
      return;
    if (!body_[name].is_boolean()) {
      fail(name, std::string("'") + name + "' must be true or false, not " +
                     body_[name].type_name());
      return;
    }
    out = body_[name].get<bool>();
  }

  /// A field hetc serve does not do, refused unless it has the value that
  /// means "off".
  void unsupported(const char *name, const json &off,
                   const std::string &why) {
    if (has(name) && body_[name] != off)
      fail(name, std::string("'") + name + "' is not supported: " + why);
  }

private:
  const json &body_;
  ApiError &error_;
  bool failed_ = false;
};

/// A message's content: a string, or parts of type "text".
std::optional<std::string> messageText(const json &content, size_t index,
                                       Fields &fields) {
  std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string())
    return content.get<std::string>();
  if (!content.is_array()) {
    fields.fail(param, "'" + param + "' must be a string or an array of "
                                     "text parts, not " +
                           content.type_name());
    return std::nullopt;
  }
  std::string text;
  for (size_t p = 0; p < content.size(); ++p) {
    const json &part = content[p];
    if (!part.is_object() || !part.contains("type") ||
        part["type"] != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      fields.fail(param, "'" + param + "[" + std::to_string(p) +
                             "]' must be {\"type\": \"text\", \"text\": "
                             "...}; this model reads text only");
      return std::nullopt;
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

} // namespace

std::optional<CompletionRequest> parseCompletionRequest(const std::string &body,
                                                        bool chat,
                                                        ApiError &error) {
  error = {};
  json parsed = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    error.message = "the body is not valid JSON; send one JSON object "
                    "(Content-Type: application/json)";
    return std::nullopt;
  }
  if (!parsed.is_object()) {
    error.message = std::string("the body must be a JSON object, not ") +
                    parsed.type_name();
    return std::nullopt;
  }
  Fields fields(parsed, error);
  CompletionRequest request;
  request.chat = chat;
  if (!fields.has("model") || !fields["model"].is_string()) {
    fields.fail("model", fields.has("model")
                             ? "'model' must be a string (GET /v1/models "
                               "lists the one served)"
                             : "'model' is required (GET /v1/models lists "
                               "the one served)");
    return std::nullopt;
  }
  request.model = fields["model"].get<std::string>();

  if (chat) {
    if (!fields.has("messages")) {
      fields.fail("messages", "'messages' is required: an array of "
                              "{\"role\", \"content\"}");
      return std::nullopt;
    }
    const json &messages = fields["messages"];
    if (!messages.is_array() || messages.empty()) {
      fields.fail("messages", "'messages' must be a non-empty array of "
                              "{\"role\", \"content\"}");
      return std::nullopt;
    }
    for (size_t m = 0; m < messages.size(); ++m) {
      const json &message = messages[m];
      std::string at = "messages[" + std::to_string(m) + "]";
      if (!message.is_object() || !message.contains("role") ||
          !message["role"].is_string()) {
        fields.fail(at + ".role",
                    "'" + at + "' must be an object with a string 'role'");
        return std::nullopt;
      }
      std::string role = message["role"].get<std::string>();
      if (role == "developer")
        role = "system";
      if (role != "system" && role != "user" && role != "assistant") {
        fields.fail(at + ".role", "'" + at + ".role' is '" + role +
                                      "'; it must be system, developer, "
                                      "user or assistant");
        return std::nullopt;
      }
      if (!message.contains("content") || message["content"].is_null()) {
        fields.fail(at + ".content", "'" + at + ".content' is required");
        return std::nullopt;
      }
      std::optional<std::string> text =
          messageText(message["content"], m, fields);
      if (!text)
        return std::nullopt;
      request.messages.emplace_back(role, *text);
    }
    if (fields.has("logprobs")) {
      bool logprobs = false;
      fields.boolean("logprobs", logprobs);
      if (logprobs)
        request.topLogprobs = 0;
    }
    if (fields.has("top_logprobs")) {
      if (request.topLogprobs < 0)
        fields.fail("top_logprobs",
                    "'top_logprobs' needs 'logprobs': true");
      fields.integer("top_logprobs", request.topLogprobs, 0, 20);
    }
    // The newer name of max_tokens for chat.
    if (fields.has("max_completion_tokens")) {
      int64_t maxTokens = 0;
      fields.integer("max_completion_tokens", maxTokens, 1,
                     std::numeric_limits<int32_t>::max());
      request.maxTokens = maxTokens;
      request.maxTokensField = "max_completion_tokens";
    }
    fields.unsupported("tools", json::array(),
                       "this server runs no tool calls");
    fields.unsupported("response_format", {{"type", "text"}},
                       "only plain text is generated");
  } else {
    if (!fields.has("prompt")) {
      fields.fail("prompt", "'prompt' is required: a string, or an array of "
                            "token ids");
      return std::nullopt;
    }
    const json &prompt = fields["prompt"];
    if (prompt.is_array() && prompt.size() == 1 && prompt[0].is_string()) {
      request.prompt = prompt[0].get<std::string>();
    } else if (prompt.is_string()) {
      request.prompt = prompt.get<std::string>();
    } else if (prompt.is_array() && !prompt.empty() &&
               prompt[0].is_number_integer()) {
      std::vector<int32_t> ids;
      for (const json &id : prompt) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          fields.fail("prompt", "'prompt' as token ids must hold "
                                "non-negative integers only");
          return std::nullopt;
        }
        ids.push_back(id.get<int32_t>());
      }
      request.promptIds = std::move(ids);
    } else {
      fields.fail("prompt",
                  prompt.is_array()
                      ? "'prompt' holds several prompts or mixed values; "
                        "send one prompt per request (a string or an "
                        "array of token ids)"
                      : std::string("'prompt' must be a string or an array "
                                    "of token ids, not ") +
                            prompt.type_name());
      return std::nullopt;
    }
    if (fields.has("logprobs")) {
      int32_t logprobs = 0;
      fields.integer("logprobs", logprobs, 0, 5);
      request.topLogprobs = logprobs;
    }
    fields.unsupported("echo", false, "the prompt is not sent back");
    fields.unsupported("suffix", "", "this model does not fill in the middle");
    fields.unsupported("best_of", 1, "'n' gives several choices");
  }
  if (fields.has("max_tokens") && !request.maxTokens) {
    int64_t maxTokens = 0;
    fields.integer("max_tokens", maxTokens, 1,
                   std::numeric_limits<int32_t>::max());
    request.maxTokens = maxTokens;
  }
  fields.number("temperature", request.temperature, 0, 2);
  fields.number("top_p", request.topP, 0, 1);
  fields.integer("top_k", request.topK, 0,
                 std::numeric_limits<int32_t>::max());
  fields.number("repeat_penalty", request.repeatPenalty, 0.001, 100);
  if (fields.has("seed")) {
    int64_t seed = 0;
    fields.integer("seed", seed, std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max());
    request.seed = static_cast<uint64_t>(seed);
  }
  fields.integer("n", request.n, 1, 16);
  fields.boolean("stream", request.stream);
  fields.boolean("ignore_eos", request.ignoreEos);
  if (fields.has("stream_options")) {
    const json &options = fields["stream_options"];
    if (!options.is_object())
      fields.fail("stream_options", "'stream_options' must be an object");
    else if (!request.stream)
      fields.fail("stream_options", "'stream_options' needs 'stream': true");
    else if (options.contains("include_usage")) {
      if (!options["include_usage"].is_boolean())
        fields.fail("stream_options.include_usage",
                    "'stream_options.include_usage' must be true or false");
      else
        request.includeUsage = options["include_usage"].get<bool>();
    }
  }
  if (fields.has("stop")) {
    const json &stop = fields["stop"];
    if (stop.is_string()) {
      request.stop.push_back(stop.get<std::string>());
    } else if (stop.is_array() && stop.size() <= 4) {
      for (const json &one : stop) {
        if (!one.is_string()) {
          fields.fail("stop", "'stop' must hold strings only");
          break;
        }
        request.stop.push_back(one.get<std::string>());
      }
    } else {
      fields.fail("stop", "'stop' must be a string or an array of at most 4 "
                          "strings");
    }
    for (const std::string &one : request.stop)
      if (one.empty())
        fields.fail("stop", "'stop' holds an empty string, which would stop "
                            "before any text");
  }
  fields.unsupported("frequency_penalty", 0,
                     "use 'repeat_penalty' (1 is off)");
  fields.unsupported("presence_penalty", 0,
                     "use 'repeat_penalty' (1 is off)");
  fields.unsupported("logit_bias", json::object(),
                     "logits are not biased by request");
  if (fields.failed())
    return std::nullopt;
  return request;
}

} // namespace hetc::server
