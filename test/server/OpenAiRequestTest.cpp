// OpenAI request bodies read field by field, and what is wrong with a bad one
// named with its field.
#include "server/OpenAiRequest.h"

#include <gtest/gtest.h>

namespace hetc::server {
namespace {

std::optional<CompletionRequest> parse(const std::string &body, bool chat,
                                       ApiError &error) {
  return parseCompletionRequest(body, chat, error);
}

TEST(OpenAiRequest, ReadsACompletionWithEveryField) {
  ApiError error;
  std::optional<CompletionRequest> request = parse(
      R"({"model": "m", "prompt": "Once", "max_tokens": 12, "temperature": 0.5,
          "top_p": 0.9, "top_k": 40, "seed": 7, "stop": ["a", "b"], "n": 2,
          "stream": true, "stream_options": {"include_usage": true},
          "logprobs": 3, "repeat_penalty": 1.1, "ignore_eos": true,
          "frequency_penalty": 0, "user": "someone"})",
      false, error);
  ASSERT_TRUE(request) << error.message;
  EXPECT_EQ(request->model, "m");
  EXPECT_EQ(request->prompt, "Once");
  EXPECT_EQ(request->maxTokens, 12);
  EXPECT_FLOAT_EQ(request->temperature, 0.5f);
  EXPECT_FLOAT_EQ(request->topP, 0.9f);
  EXPECT_EQ(request->topK, 40);
  EXPECT_EQ(request->seed, 7u);
  EXPECT_EQ(request->stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(request->n, 2);
  EXPECT_TRUE(request->stream);
  EXPECT_TRUE(request->includeUsage);
  EXPECT_EQ(request->topLogprobs, 3);
  EXPECT_TRUE(request->ignoreEos);
}

TEST(OpenAiRequest, DefaultsAreOpenAis) {
  ApiError error;
  std::optional<CompletionRequest> request =
      parse(R"({"model": "m", "prompt": ["Once"]})", false, error);
  ASSERT_TRUE(request);
  EXPECT_EQ(request->prompt, "Once");
  EXPECT_FALSE(request->maxTokens);
  EXPECT_FLOAT_EQ(request->temperature, 1.0f);
  EXPECT_FLOAT_EQ(request->topP, 1.0f);
  EXPECT_EQ(request->n, 1);
  EXPECT_EQ(request->topLogprobs, -1);
  EXPECT_FALSE(request->seed);
}

TEST(OpenAiRequest, ReadsTokenIdsAsThePrompt) {
  ApiError error;
  std::optional<CompletionRequest> request =
      parse(R"({"model": "m", "prompt": [1, 400, 3]})", false, error);
  ASSERT_TRUE(request);
  ASSERT_TRUE(request->promptIds);
  EXPECT_EQ(*request->promptIds, (std::vector<int32_t>{1, 400, 3}));
}

TEST(OpenAiRequest, ReadsChatMessagesAndTextParts) {
  ApiError error;
  std::optional<CompletionRequest> request = parse(
      R"({"model": "m", "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi "},
                                         {"type": "text", "text": "there"}]}],
          "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2})",
      true, error);
  ASSERT_TRUE(request) << error.message;
  ASSERT_EQ(request->messages.size(), 2u);
  EXPECT_EQ(request->messages[0],
            (std::pair<std::string, std::string>{"system", "Be brief."}));
  EXPECT_EQ(request->messages[1].second, "Hi there");
  EXPECT_EQ(request->maxTokens, 9);
  EXPECT_EQ(request->topLogprobs, 2);
}

struct BadBody {
  bool chat;
  const char *body;
  const char *param;
  const char *message;
};

class OpenAiBadRequest : public testing::TestWithParam<BadBody> {};

TEST_P(OpenAiBadRequest, NamesTheFieldAndTheFix) {
  ApiError error;
  EXPECT_FALSE(parse(GetParam().body, GetParam().chat, error));
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.type, "invalid_request_error");
  EXPECT_EQ(error.param, GetParam().param);
  EXPECT_NE(error.message.find(GetParam().message), std::string::npos)
      << error.message;
}

INSTANTIATE_TEST_SUITE_P(
    Bodies, OpenAiBadRequest,
    testing::Values(
        BadBody{false, "{", "", "not valid JSON"},
        BadBody{false, "\"text\"", "", "must be a JSON object, not string"},
        BadBody{false, R"({"prompt": "a"})", "model", "'model' is required"},
        BadBody{false, R"({"model": 3, "prompt": "a"})", "model",
                "'model' must be a string"},
        BadBody{false, R"({"model": "m"})", "prompt", "'prompt' is required"},
        BadBody{false, R"({"model": "m", "prompt": ["a", "b"]})", "prompt",
                "send one prompt per request"},
        BadBody{false, R"({"model": "m", "prompt": [1, -2]})", "prompt",
                "non-negative integers"},
        BadBody{false, R"({"model": "m", "prompt": "a", "max_tokens": 0})",
                "max_tokens", "'max_tokens' is 0; it must be from 1"},
        BadBody{false, R"({"model": "m", "prompt": "a", "max_tokens": 2.5})",
                "max_tokens", "'max_tokens' must be an integer, not 2.5"},
        BadBody{false,
                R"({"model": "m", "prompt": "a", "max_tokens": 18446744073709551615})",
                "max_tokens", "it must be from 1"},
        BadBody{false, R"({"model": "m", "prompt": "a", "top_p": "high"})",
                "top_p", "'top_p' must be a number, not string"},
        BadBody{false, R"({"model": "m", "prompt": "a", "n": 17})", "n",
                "'n' is 17; it must be from 1 to 16"},
        BadBody{false, R"({"model": "m", "prompt": "a", "stream": "yes"})",
                "stream", "'stream' must be true or false"},
        BadBody{false, R"({"model": "m", "prompt": "a", "stop": [1]})", "stop",
                "'stop' must hold strings only"},
        BadBody{false, R"({"model": "m", "prompt": "a", "stop": ["a","b","c","d","e"]})",
                "stop", "at most 4 strings"},
        BadBody{false, R"({"model": "m", "prompt": "a", "stop": ""})", "stop",
                "empty string"},
        BadBody{false, R"({"model": "m", "prompt": "a", "logprobs": 6})",
                "logprobs", "'logprobs' is 6; it must be from 0 to 5"},
        BadBody{false, R"({"model": "m", "prompt": "a", "echo": true})", "echo",
                "'echo' is not supported"},
        BadBody{false,
                R"({"model": "m", "prompt": "a", "stream_options": {"include_usage": true}})",
                "stream_options", "needs 'stream': true"},
        BadBody{false, R"({"model": "m", "prompt": "a", "logit_bias": {"5": 1}})",
                "logit_bias", "not supported"},
        BadBody{true, R"({"model": "m"})", "messages", "'messages' is required"},
        BadBody{true, R"({"model": "m", "messages": []})", "messages",
                "non-empty array"},
        BadBody{true, R"({"model": "m", "messages": [{"content": "x"}]})",
                "messages[0].role", "with a string 'role'"},
        BadBody{true, R"({"model": "m", "messages": [{"role": "tool", "content": "x"}]})",
                "messages[0].role", "'messages[0].role' is 'tool'"},
        BadBody{true, R"({"model": "m", "messages": [{"role": "user"}]})",
                "messages[0].content", "'messages[0].content' is required"},
        BadBody{true,
                R"({"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
                "messages[0].content", "this model reads text only"},
        BadBody{true,
                R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
                "top_logprobs", "needs 'logprobs': true"},
        BadBody{true,
                R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{}]})",
                "tools", "runs no tool calls"}));

TEST(OpenAiRequest, ErrorBodiesHaveOpenAisShape) {
  ApiError error;
  error.status = 429;
  error.type = "rate_limit_error";
  error.code = "queue_full";
  error.message = "busy";
  EXPECT_EQ(errorBody(error).dump(),
            R"({"error":{"code":"queue_full","message":"busy","param":null,"type":"rate_limit_error"}})");
}

} // namespace
} // namespace hetc::server
