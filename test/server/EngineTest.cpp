// The continuous-batching engine over a real model (the pack named by
// HETC_TEST_PACK: stories260K, from test/server/engine.test and
// scripts/sanitize.sh): requests batched together give the tokens they give
// alone, cancelled ones free their blocks, stop strings end the text, and
// stopping the engine ends what is in flight.
#include "server/Engine.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

namespace hetc::server {
namespace {

struct Result {
  std::string text;
  std::string finishReason;
  std::string error;
  int64_t tokens = 0;
};

Result collect(Generation &generation) {
  Result result;
  GenerationUpdate update;
  while (!update.finished) {
    if (!generation.wait(update, std::chrono::milliseconds(100)))
      continue;
    result.text += update.text;
  }
  result.finishReason = update.finishReason;
  result.error = update.error;
  result.tokens = update.completionTokens;
  return result;
}

class EngineTest : public testing::Test {
protected:
  void SetUp() override {
    const char *pack = std::getenv("HETC_TEST_PACK");
    ASSERT_NE(pack, nullptr) << "set HETC_TEST_PACK to a pack of stories260K "
                                "compiled with --kv-pool-blocks 32";
    hetrt::api::Status status;
    model_ = hetrt::api::Model::open(pack, "", status);
    ASSERT_TRUE(model_) << status.message;
    session_ = hetrt::api::Session::create(*model_, 1, status);
    ASSERT_TRUE(session_) << status.message;
  }

  GenerationRequest request(const std::string &prompt, int64_t tokens) {
    GenerationRequest request;
    hetrt::api::Status status;
    EXPECT_TRUE(model_->tokenize(prompt, true, request.prompt, status));
    request.maxTokens = tokens;
    request.sampling.temperature = 0;
    request.ignoreEos = true;
    return request;
  }

  std::unique_ptr<hetrt::api::Model> model_;
  std::unique_ptr<hetrt::api::Session> session_;
};

const std::vector<std::pair<std::string, int64_t>> kRequests = {
    {"Once upon a time", 40}, {"The little dog", 17},  {"Lily and Ben", 65},
    {"One day, a cat", 8},    {"Tom had a ball", 90},  {"The sun was hot", 33},
    {"Sue liked to sing", 51}, {"A bird flew", 12},     {"Max was happy", 70},
    {"The old tree", 24},     {"Mom made a cake", 47}, {"It was raining", 5}};

TEST_F(EngineTest, BatchedRequestsGiveTheirTokensAlone) {
  EngineOptions options;
  options.parallel = 4;
  options.prefillChunk = 3;
  Engine engine(*model_, *session_, options);
  std::vector<Result> alone;
  std::string why;
  for (const auto &[prompt, tokens] : kRequests) {
    std::shared_ptr<Generation> generation =
        engine.submit(request(prompt, tokens), why);
    ASSERT_TRUE(generation) << why;
    alone.push_back(collect(*generation));
    EXPECT_EQ(alone.back().finishReason, "length");
    EXPECT_EQ(alone.back().tokens, tokens);
  }
  std::vector<std::shared_ptr<Generation>> together;
  for (const auto &[prompt, tokens] : kRequests)
    together.push_back(engine.submit(request(prompt, tokens), why));
  for (size_t r = 0; r < kRequests.size(); ++r) {
    ASSERT_TRUE(together[r]) << why;
    Result result = collect(*together[r]);
    EXPECT_EQ(result.text, alone[r].text) << kRequests[r].first;
    EXPECT_EQ(result.tokens, alone[r].tokens);
  }
  EngineMetrics metrics = engine.metrics();
  EXPECT_EQ(metrics.kvPoolBlocksUsed, 0);
  EXPECT_EQ(metrics.requestsFinished["length"], 2 * kRequests.size());
  // Steps decoded more than one sequence at once.
  EXPECT_GT(metrics.decodeSteps, 0u);
  EXPECT_LT(metrics.decodeSteps, metrics.generatedTokens);
}

TEST_F(EngineTest, CancelledRequestsFreeTheirBlocksAndTheRestFinish) {
  EngineOptions options;
  options.parallel = 2;
  options.maxQueued = 8;
  Engine engine(*model_, *session_, options);
  std::string why;
  std::vector<std::shared_ptr<Generation>> generations;
  for (int r = 0; r < 5; ++r)
    generations.push_back(engine.submit(request("Once upon a time", 400), why));
  // One running, one waiting in the queue.
  GenerationUpdate update;
  while (!generations[0]->wait(update, std::chrono::milliseconds(100))) {
  }
  generations[0]->cancel();
  generations[3]->cancel();
  Result first = collect(*generations[0]);
  Result queued = collect(*generations[3]);
  EXPECT_EQ(first.finishReason, "cancelled");
  EXPECT_EQ(queued.finishReason, "cancelled");
  EXPECT_LT(first.tokens, 400);
  for (int r : {1, 2, 4})
    EXPECT_EQ(collect(*generations[r]).tokens, 400);
  EngineMetrics metrics = engine.metrics();
  EXPECT_EQ(metrics.requestsFinished["cancelled"], 2u);
  EXPECT_EQ(metrics.kvPoolBlocksUsed, 0);
  EXPECT_EQ(metrics.running, 0);
}

TEST_F(EngineTest, AStopStringEndsTheTextBeforeIt) {
  Engine engine(*model_, *session_, EngineOptions());
  std::string why;
  Result whole = collect(*engine.submit(request("Once upon a time", 30), why));
  size_t cut = whole.text.find(' ', 12);
  ASSERT_NE(cut, std::string::npos);
  GenerationRequest stopped = request("Once upon a time", 30);
  stopped.stop = {whole.text.substr(cut, 4)};
  Result result = collect(*engine.submit(std::move(stopped), why));
  EXPECT_EQ(result.finishReason, "stop");
  EXPECT_EQ(result.text, whole.text.substr(0, whole.text.find(whole.text.substr(cut, 4))));
}

TEST_F(EngineTest, AFullQueueIsRefusedAndStoppingEndsWhatIsInFlight) {
  EngineOptions options;
  options.parallel = 1;
  options.maxQueued = 1;
  Engine engine(*model_, *session_, options);
  std::string why;
  std::shared_ptr<Generation> running =
      engine.submit(request("Once upon a time", 400), why);
  GenerationUpdate update;
  while (!running->wait(update, std::chrono::milliseconds(100))) {
  }
  std::shared_ptr<Generation> waiting =
      engine.submit(request("The little dog", 400), why);
  ASSERT_TRUE(waiting);
  EXPECT_FALSE(engine.submit(request("A bird flew", 4), why));
  EXPECT_NE(why.find("already waiting"), std::string::npos) << why;
  engine.stop();
  EXPECT_EQ(collect(*running).error, "the server is shutting down");
  EXPECT_EQ(collect(*waiting).error, "the server is shutting down");
  EXPECT_FALSE(engine.submit(request("A bird flew", 4), why));
}

} // namespace
} // namespace hetc::server
