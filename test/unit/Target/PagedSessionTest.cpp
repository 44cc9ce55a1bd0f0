// Whole models on the CPU with the paged KV cache: the real models compiled
// as `hetc compile` compiles them, several sequences over one pool of
// blocks. Tokens must never depend on where a sequence's blocks are, whether
// they are shared with another sequence, or how sequences interleave: each
// gives exactly llama.cpp's greedy tokens (the *.reference.json files).
#include "PagedSessionSupport.h"
#include "runtime/core/Session.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

namespace {

using hetrt::core::Session;
using namespace hetc::test;

std::unique_ptr<Session> newSession(const hetrt::core::Model &model) {
  std::string error;
  std::unique_ptr<Session> session = Session::create(model, 0, error);
  EXPECT_TRUE(session) << error;
  if (session)
    session->setDecodeThreadChoice(false);
  return session;
}

/// Every reference prompt in a sequence of its own, prefilled one after
/// another and decoded in turns of one token each.
void expectInterleavedReferenceTokens(const std::string &model) {
  const hetrt::core::Model &loaded = loadedModel(model, 1024);
  std::unique_ptr<Session> session = newSession(loaded);
  ASSERT_TRUE(session);
  std::vector<SequenceId> sequences;
  expectTokensInTurns(*session, referencePrompts(model), true, sequences);
  std::string error;
  // Removing every sequence returns every block to the pool.
  for (Session::SequenceId sequence : sequences)
    ASSERT_TRUE(session->removeSequence(sequence, error)) << error;
  hetrt::core::KvUsage usage = session->kvUsage();
  EXPECT_EQ(usage.freeBlocks, usage.blocks);
  EXPECT_EQ(usage.blocks, 1024 / usage.blockSize);
}

/// The reference prompts through the tiers (expectReferenceTokensThroughTiers)
/// in a CPU session.
void expectReferenceTokensThroughTiers(const std::string &model,
                                       int64_t poolBlocks, int64_t hostBlocks,
                                       bool prefixCaching) {
  std::unique_ptr<Session> session = newSession(loadedModel(model, 1024));
  ASSERT_TRUE(session);
  hetc::test::expectReferenceTokensThroughTiers(*session, model, poolBlocks,
                                                hostBlocks, prefixCaching);
}

TEST(PagedSessions, BabyLlama105GivesTheReferenceTokensThroughHostAndDisk) {
  // Each sequence holds up to 3 blocks of 64: a pool of 3 takes one at a
  // time, host memory 2 more blocks, disk the rest.
  expectReferenceTokensThroughTiers("babyllama105", 3, 2, true);
  expectReferenceTokensThroughTiers("babyllama105", 3, 2, false);
}

TEST(PagedSessions, Stories260KGivesTheReferenceTokensThroughHostAndDisk) {
  // One block per sequence: a pool of one block moves every other
  // sequence's block out at every step.
  expectReferenceTokensThroughTiers("stories260K", 1, 1, true);
}

/// The reference prompts in turns over a pool of `poolBlocks` blocks with
/// the rest in host memory, fed the reference's tokens (teacher forcing):
/// every step's logits, sequence by sequence, and how many blocks came back.
std::vector<std::vector<float>> forcedLogits(const std::string &model,
                                             int64_t poolBlocks,
                                             hetrt::core::KvTierFormat format,
                                             int64_t &blocksBack) {
  const hetrt::core::Model &loaded = loadedModel(model, 1024);
  std::unique_ptr<Session> session = newSession(loaded);
  std::vector<std::vector<float>> logits;
  if (!session)
    return logits;
  std::string error;
  uint64_t blockBytes = static_cast<uint64_t>(session->kvUsage().blockBytes);
  EXPECT_TRUE(session->setKvBudget("pool", poolBlocks * blockBytes, error))
      << error;
  EXPECT_TRUE(session->setKvTierFormat(format, error)) << error;
  std::vector<Prompt> prompts = referencePrompts(model);
  logits.resize(prompts.size());
  std::vector<SequenceId> sequences;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences.push_back(session->createSequence());
    EXPECT_TRUE(session->prefill(sequences[i], prompts[i].prompt, error))
        << error;
  }
  int64_t vocab = session->vocabSize();
  for (size_t step = 1; step < prompts[0].generated.size(); ++step)
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (!session->decode(sequences[i], prompts[i].generated[step - 1],
                           error)) {
        ADD_FAILURE() << error;
        return logits;
      }
      logits[i].insert(logits[i].end(), session->logits(),
                       session->logits() + vocab);
    }
  blocksBack = session->kvUsage().swaps.fromHost;
  return logits;
}

/// Int8 tiers round every key and value that goes out: the logits move, and
/// the greedy tokens stay the reference's at nearly every step.
void expectCompressedTiersCloseToExact(const std::string &model,
                                       int64_t poolBlocks) {
  int64_t exactBack = 0, int8Back = 0;
  std::vector<std::vector<float>> exact = forcedLogits(
      model, poolBlocks, hetrt::core::KvTierFormat::Exact, exactBack);
  std::vector<std::vector<float>> int8 = forcedLogits(
      model, poolBlocks, hetrt::core::KvTierFormat::Int8, int8Back);
  std::vector<Prompt> prompts = referencePrompts(model);
  ASSERT_EQ(exact.size(), prompts.size());
  ASSERT_EQ(int8.size(), prompts.size());
  EXPECT_GT(int8Back, 0);
  EXPECT_EQ(int8Back, exactBack);
  size_t vocab = 0, steps = 0, agreeing = 0, exactAgreeing = 0;
  double largestError = 0, largestLogit = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    size_t count = prompts[i].generated.size() - 1;
    vocab = exact[i].size() / count;
    for (size_t step = 0; step < count; ++step) {
      const float *e = exact[i].data() + step * vocab;
      const float *q = int8[i].data() + step * vocab;
      for (size_t v = 0; v < vocab; ++v) {
        largestError = std::max(largestError, double(std::fabs(e[v] - q[v])));
        largestLogit = std::max(largestLogit, double(std::fabs(e[v])));
      }
      int32_t expected = prompts[i].generated[step + 1];
      agreeing += std::max_element(q, q + vocab) - q == expected;
      exactAgreeing += std::max_element(e, e + vocab) - e == expected;
      ++steps;
    }
  }
  double agreement = double(agreeing) / double(steps);
  std::printf("%s: int8 KV tiers: largest logit error %.4f (largest logit "
              "%.2f), greedy tokens agree with the reference at %zu of %zu "
              "steps (%.1f %%)\n",
              model.c_str(), largestError, largestLogit, agreeing, steps,
              100 * agreement);
  // Exact tiers give exactly the reference; int8 ones are lossy but close.
  EXPECT_EQ(exactAgreeing, steps);
  EXPECT_GT(largestError, 0);
  EXPECT_GE(agreement, 0.9);
}

TEST(PagedSessions, Int8TiersOfStories260KStayCloseToTheExactOnes) {
  // One block per sequence: a pool of one.
  expectCompressedTiersCloseToExact("stories260K", 1);
}

TEST(PagedSessions, Int8TiersOfBabyLlama105StayCloseToTheExactOnes) {
  // Up to three blocks per sequence: a pool of three.
  expectCompressedTiersCloseToExact("babyllama105", 3);
}

TEST(PagedSessions, BudgetsAreCheckedAndNamed) {
  const hetrt::core::Model &model = loadedModel("stories260K", 256);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  uint64_t blockBytes =
      static_cast<uint64_t>(session->kvUsage().blockBytes);
  std::string error;
  EXPECT_FALSE(session->setKvBudget("pool", blockBytes / 2, error));
  EXPECT_NE(error.find("the pool holds 4 blocks"), std::string::npos) << error;
  EXPECT_FALSE(session->setKvBudget("pool", 5 * blockBytes, error));
  EXPECT_FALSE(session->setKvBudget("vram", blockBytes, error));
  EXPECT_NE(error.find("memories are pool, host (or one of the host's NUMA nodes"), std::string::npos) << error;
  // Without room in the tiers a full pool refuses the run, changing
  // nothing.
  ASSERT_TRUE(session->setKvBudget("pool", blockBytes, error)) << error;
  ASSERT_TRUE(session->setKvBudget("host", 0, error)) << error;
  std::vector<int32_t> prompt = referencePrompts("stories260K")[0].prompt;
  ASSERT_TRUE(session->prefill(prompt, error)) << error;
  Session::SequenceId other = session->createSequence();
  EXPECT_FALSE(session->prefill(other, prompt, error));
  EXPECT_NE(error.find("the KV pool is full"), std::string::npos) << error;
  EXPECT_EQ(session->position(other), 0);
  EXPECT_FALSE(session->setKvBudget("pool", 2 * blockBytes, error));
  EXPECT_NE(error.find("before the first run"), std::string::npos) << error;
}

TEST(PagedSessions, BatchedDecodeOfStories260KGivesTheReferenceTokens) {
  std::unique_ptr<Session> session =
      newSession(loadedModel("stories260K", 1024));
  ASSERT_TRUE(session);
  expectBatchedReferenceTokens(*session, "stories260K");
}

TEST(PagedSessions, BatchedDecodeOfBabyLlama105GivesTheReferenceTokens) {
  std::unique_ptr<Session> session =
      newSession(loadedModel("babyllama105", 1024));
  ASSERT_TRUE(session);
  expectBatchedReferenceTokens(*session, "babyllama105");
}

TEST(PagedSessions, ABatchThatDoesNotFitThePoolIsRefused) {
  // A pool of one block and no tier: two sequences cannot both be in it.
  const hetrt::core::Model &model = loadedModel("stories260K", 256);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  uint64_t blockBytes = static_cast<uint64_t>(session->kvUsage().blockBytes);
  std::string error;
  ASSERT_TRUE(session->setKvBudget("pool", 2 * blockBytes, error)) << error;
  std::vector<int32_t> prompt = referencePrompts("stories260K")[0].prompt;
  std::vector<SequenceId> sequences;
  for (int i = 0; i < 3; ++i) {
    sequences.push_back(session->createSequence());
    ASSERT_TRUE(session->prefill(sequences.back(), prompt, error)) << error;
  }
  EXPECT_FALSE(session->decodeBatch(sequences, {1, 1, 1}, error));
  EXPECT_NE(error.find("in the pool at once"), std::string::npos) << error;
  // Two of them fit, the third's block moving out to host memory.
  ASSERT_TRUE(session->decodeBatch({sequences[0], sequences[1]}, {1, 1}, error))
      << error;
  EXPECT_EQ(session->position(sequences[0]),
            static_cast<int64_t>(prompt.size() + 1));
}

TEST(PagedSessions, InterleavedSequencesOfStories260KGiveTheReferenceTokens) {
  expectInterleavedReferenceTokens("stories260K");
}

TEST(PagedSessions, InterleavedSequencesOfBabyLlama105GiveTheReferenceTokens) {
  expectInterleavedReferenceTokens("babyllama105");
}

TEST(PagedSessions, AForkInsideABlockCopiesItAndBothContinueAlike) {
  const hetrt::core::Model &model = loadedModel("babyllama105", 1024);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  Prompt park = referencePrompts("babyllama105")[1];
  ASSERT_EQ(park.prompt.size(), 51u);
  std::string error;
  ASSERT_TRUE(session->prefill(park.prompt, error)) << error;
  // The child shares the first 40 positions: part of block 0, which both
  // then write, so the first to write copies it.
  Session::SequenceId child = -1;
  ASSERT_TRUE(session->forkSequence(Session::kDefaultSequence, 40, child, error))
      << error;
  EXPECT_EQ(session->position(child), 40);
  EXPECT_EQ(session->kvUsage().sharedBlocks, 1);
  ASSERT_TRUE(session->prefill(
      child, std::vector<int32_t>(park.prompt.begin() + 40, park.prompt.end()),
      error))
      << error;
  EXPECT_EQ(session->kvUsage().copiedBlocks, 1);
  EXPECT_EQ(session->kvUsage().sharedBlocks, 0);
  EXPECT_EQ(continueGreedy(*session, child, park.generated.size()),
            park.generated);
  // The parent's logits were overwritten by the child's runs: run its last
  // prompt token again in a fork of its first 50 positions.
  Session::SequenceId parent = -1;
  ASSERT_TRUE(session->forkSequence(Session::kDefaultSequence, 50, parent,
                                    error))
      << error;
  ASSERT_TRUE(session->removeSequence(Session::kDefaultSequence, error))
      << error;
  ASSERT_TRUE(session->decode(parent, park.prompt.back(), error)) << error;
  EXPECT_EQ(continueGreedy(*session, parent, park.generated.size()),
            park.generated);
}

TEST(PagedSessions, AForkAtABlockBoundarySharesWithoutCopying) {
  // The child shares block 0 by the fork and block 1 by the prefix cache
  // (the parent published it when it was whole); neither is copied.
  const hetrt::core::Model &model = loadedModel("babyllama105", 1024);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  Prompt once = referencePrompts("babyllama105")[0];
  std::string error;
  ASSERT_TRUE(session->prefill(once.prompt, error)) << error;
  std::vector<int32_t> generated =
      continueGreedy(*session, Session::kDefaultSequence, once.generated.size());
  ASSERT_EQ(generated, once.generated);
  // The whole text run so far; a fork of its first block re-runs the rest.
  std::vector<int32_t> text = once.prompt;
  text.insert(text.end(), generated.begin(), generated.end() - 1);
  int64_t blockSize = session->kvUsage().blockSize;
  Session::SequenceId child = -1;
  ASSERT_TRUE(session->forkSequence(Session::kDefaultSequence, blockSize,
                                    child, error))
      << error;
  ASSERT_TRUE(session->prefill(
      child, std::vector<int32_t>(text.begin() + blockSize, text.end()),
      error))
      << error;
  EXPECT_EQ(greedy(*session), generated.back());
  hetrt::core::KvUsage usage = session->kvUsage();
  EXPECT_EQ(usage.copiedBlocks, 0);
  EXPECT_EQ(usage.sharedBlocks, 2);
  EXPECT_EQ(usage.reusedTokens, blockSize);
}

/// babyllama105's first reference prompt with its generation but the last
/// token: 145 ids, two whole blocks and a part, whose next greedy token is
/// the reference's last.
std::vector<int32_t> longText(int32_t &next) {
  Prompt once = referencePrompts("babyllama105")[0];
  std::vector<int32_t> text = once.prompt;
  text.insert(text.end(), once.generated.begin(), once.generated.end() - 1);
  next = once.generated.back();
  return text;
}

TEST(PagedSessions, APromptWithACachedPrefixRunsOnlyTheRest) {
  const hetrt::core::Model &model = loadedModel("babyllama105", 1024);
  int32_t next = 0;
  std::vector<int32_t> text = longText(next);
  for (bool caching : {true, false}) {
    SCOPED_TRACE(caching ? "prefix caching" : "no prefix caching");
    std::unique_ptr<Session> session = newSession(model);
    ASSERT_TRUE(session);
    session->setPrefixCaching(caching);
    std::string error;
    Session::SequenceId first = session->createSequence();
    ASSERT_TRUE(session->prefill(first, text, error)) << error;
    EXPECT_EQ(greedy(*session), next);
    ASSERT_TRUE(session->removeSequence(first, error)) << error;
    EXPECT_EQ(session->kvUsage().cachedBlocks, caching ? 2 : 0);
    // A second request with the same prompt takes the two whole blocks
    // from the cache and computes the 17 ids after them.
    Session::SequenceId second = session->createSequence();
    ASSERT_TRUE(session->prefill(second, text, error)) << error;
    EXPECT_EQ(greedy(*session), next);
    EXPECT_EQ(session->kvUsage().reusedTokens, caching ? 128 : 0);
    // It goes on from its own position.
    ASSERT_TRUE(session->decode(second, next, error)) << error;
    EXPECT_EQ(session->position(second), 146);
  }
}

TEST(PagedSessions, EvictedPrefixBlocksAreComputedAgain) {
  // 256 positions: a pool of 4 blocks of 64.
  const hetrt::core::Model &model = loadedModel("babyllama105", 256);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  int32_t next = 0;
  std::vector<int32_t> text = longText(next);
  std::string error;
  Session::SequenceId first = session->createSequence();
  ASSERT_TRUE(session->prefill(first, text, error)) << error;
  ASSERT_TRUE(session->removeSequence(first, error)) << error;
  ASSERT_EQ(session->kvUsage().cachedBlocks, 2);
  // Another text of 200 ids needs every block: the cached ones go.
  std::vector<int32_t> other(200);
  for (size_t i = 0; i < other.size(); ++i)
    other[i] = text[(i * 7) % text.size()];
  Session::SequenceId second = session->createSequence();
  ASSERT_TRUE(session->prefill(second, other, error)) << error;
  hetrt::core::KvUsage usage = session->kvUsage();
  EXPECT_EQ(usage.evictedBlocks, 2);
  EXPECT_EQ(usage.freeBlocks, 0);
  ASSERT_TRUE(session->removeSequence(second, error)) << error;
  // The first text again: whatever the cache still finds is reused, the
  // rest computed, and the next token is the same.
  Session::SequenceId third = session->createSequence();
  ASSERT_TRUE(session->prefill(third, text, error)) << error;
  EXPECT_EQ(greedy(*session), next);
}

TEST(PagedSessions, AFullPoolRefusesTheRunAndChangesNothing) {
  // 256 positions: a pool of 4 blocks of 64.
  const hetrt::core::Model &model = loadedModel("stories260K", 256);
  std::unique_ptr<Session> session = newSession(model);
  ASSERT_TRUE(session);
  ASSERT_EQ(session->kvUsage().blocks, 4);
  std::vector<int32_t> prompt = referencePrompts("stories260K")[0].prompt;
  std::string error;
  // No tier to move blocks out to.
  ASSERT_TRUE(session->setKvBudget("host", 0, error)) << error;
  std::vector<SequenceId> sequences;
  for (int i = 0; i < 4; ++i) {
    sequences.push_back(session->createSequence());
    ASSERT_TRUE(session->prefill(sequences.back(), prompt, error)) << error;
  }
  EXPECT_EQ(session->kvUsage().freeBlocks, 0);
  EXPECT_FALSE(session->prefill(prompt, error));
  EXPECT_NE(error.find("the KV pool is full"), std::string::npos) << error;
  EXPECT_EQ(session->position(), 0);
  EXPECT_FALSE(session->prefill(99, prompt, error));
  EXPECT_NE(error.find("there is no sequence 99"), std::string::npos) << error;
  // A sequence's own block has room for its next positions.
  ASSERT_TRUE(session->decode(sequences[0], 1, error)) << error;
  ASSERT_TRUE(session->removeSequence(sequences[1], error)) << error;
  EXPECT_FALSE(session->removeSequence(sequences[1], error));
  ASSERT_TRUE(session->prefill(prompt, error)) << error;
  EXPECT_EQ(session->position(), static_cast<int64_t>(prompt.size()));
  Session::SequenceId fork = -1;
  EXPECT_FALSE(session->forkSequence(sequences[0], 1000, fork, error));
  EXPECT_NE(error.find("it holds"), std::string::npos) << error;
}

} // namespace
