// The OpenAI request bodies `hetc serve` takes (POST /v1/completions and
// /v1/chat/completions), read and checked field by field; and the error body
// OpenAI clients parse.
#ifndef HETC_SERVER_OPENAIREQUEST_H
#define HETC_SERVER_OPENAIREQUEST_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hetc::server {

/// An error as OpenAI reports it: the HTTP status and
/// {"error": {"message", "type", "param", "code"}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  /// The field at fault; "" for none.
  std::string param;
  /// A machine-readable code; "" for none.
  std::string code;
};
nlohmann::json errorBody(const ApiError &error);

struct CompletionRequest {
  bool chat = false;
  std::string model;
  /// Chat: {role, content}, "developer" read as "system".
  std::vector<std::pair<std::string, std::string>> messages;
  /// Completions: the prompt's text, or its token ids.
  std::string prompt;
  std::optional<std::vector<int32_t>> promptIds;
  std::optional<int64_t> maxTokens;
  /// The field maxTokens came from, for errors about it.
  std::string maxTokensField = "max_tokens";
  float temperature = 1.0f;
  float topP = 1.0f;
  int32_t topK = 0;
  float repeatPenalty = 1.0f;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  int32_t n = 1;
  bool stream = false;
  /// stream_options.include_usage: a last chunk with the token counts.
  bool includeUsage = false;
  /// -1: no log-probabilities; else the alternatives per token.
  int32_t topLogprobs = -1;
  bool ignoreEos = false;
};

/// The request in `body`, or nothing with `error` naming the field and
/// what it should be.
std::optional<CompletionRequest> parseCompletionRequest(const std::string &body,
                                                        bool chat,
                                                        ApiError &error);

} // namespace hetc::server

#endif // HETC_SERVER_OPENAIREQUEST_H
