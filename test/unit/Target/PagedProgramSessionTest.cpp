// Whole models as SPIR-V programs on every device that runs them, with the
// same paged KV cache as the CPU session: several sequences over one pool
// of blocks in the device's memory, moved out to host memory and disk and
// back, shared by forks and by the prefix cache. Each sequence's greedy
// tokens must be exactly llama.cpp's (the *.reference.json files).
#include "PagedSessionSupport.h"
#include "SpirvTestSupport.h"
#include "runtime/core/ProgramSession.h"

namespace {

using hetrt::core::ProgramSession;
using namespace hetc::test;

/// Runs `body` with a session of `model`'s programs on every device that
/// runs SPIR-V; skips with the reasons when there is none.
template <typename Body>
void onEveryDevice(const std::string &model, int64_t context, Body body) {
  onEverySpirvDevice([&](hetrt::hal::Device &device) {
    std::string error;
    hetrt::core::Failure failure;
    std::unique_ptr<ProgramSession> session = ProgramSession::create(
        loadedModel(model, context, "spirv"), device, error, failure);
    ASSERT_TRUE(session) << error;
    body(*session);
  });
}

TEST(PagedProgramSessions, BabyLlama105GivesTheReferenceTokensThroughHostAndDisk) {
  // Up to 3 blocks of 64 per sequence: a pool of 3 in the device's memory
  // takes one sequence at a time, host memory 2 more blocks, disk the rest.
  for (bool caching : {true, false})
    onEveryDevice("babyllama105", 1024, [&](ProgramSession &session) {
      expectReferenceTokensThroughTiers(session, "babyllama105", 3, 2,
                                        caching);
    });
}

TEST(PagedProgramSessions, Stories260KGivesTheReferenceTokensThroughHostAndDisk) {
  // A pool of one block moves every other sequence's block out at every
  // step.
  onEveryDevice("stories260K", 1024, [&](ProgramSession &session) {
    expectReferenceTokensThroughTiers(session, "stories260K", 1, 1, true);
  });
}

// A batch of sequences decodes in one run of the batch's program, each
// token at its own position through its own block table.
TEST(PagedProgramSessions, BatchedDecodeOfStories260KGivesTheReferenceTokens) {
  onEveryDevice("stories260K", 1024, [&](ProgramSession &session) {
    EXPECT_EQ(session.maxBatch(), 64);
    expectBatchedReferenceTokens(session, "stories260K");
  });
}

TEST(PagedProgramSessions, BatchedDecodeOfBabyLlama105GivesTheReferenceTokens) {
  onEveryDevice("babyllama105", 1024, [&](ProgramSession &session) {
    expectBatchedReferenceTokens(session, "babyllama105");
  });
}

/// A session of `model`'s plan on the CPU-only system: one CPU segment per
/// step, whose code keeps each cache head-major ([2, kv_heads, slots,
/// head_dim]), so a block is a run per head.
std::unique_ptr<ProgramSession> plannedOnCpu(const std::string &model) {
  std::string error;
  hetrt::core::Failure failure;
  std::unique_ptr<ProgramSession> session = ProgramSession::createPlanned(
      loadedModel(model, 1024, "cpu-only-host"),
      hetrt::hal::enumerateDevices(nullptr), error, failure);
  EXPECT_TRUE(session) << error;
  return session;
}

TEST(PagedProgramSessions, APlannedCpuSessionGivesTheReferenceTokensThroughHostAndDisk) {
  for (const std::string model : {"stories260K", "babyllama105"}) {
    SCOPED_TRACE(model);
    std::unique_ptr<ProgramSession> session = plannedOnCpu(model);
    ASSERT_TRUE(session);
    expectReferenceTokensThroughTiers(*session, model,
                                      model == "stories260K" ? 1 : 3, 2, true);
  }
}

// The plan's batch program: its CPU segment reads a block-table row per
// token, as the whole-model code's batched entry point does.
TEST(PagedProgramSessions, APlannedSessionDecodesBatchesToTheReferenceTokens) {
  for (const std::string model : {"stories260K", "babyllama105"}) {
    SCOPED_TRACE(model);
    std::unique_ptr<ProgramSession> session = plannedOnCpu(model);
    ASSERT_TRUE(session);
    EXPECT_EQ(session->maxBatch(), 64);
    expectBatchedReferenceTokens(*session, model);
  }
}

TEST(PagedProgramSessions, AForkInsideABlockCopiesItOnTheDevice) {
  onEveryDevice("babyllama105", 1024, [&](ProgramSession &session) {
    hetrt::core::KvCache &kv = session.kvCache();
    Prompt park = referencePrompts("babyllama105")[1];
    std::string error;
    ASSERT_TRUE(session.prefill(park.prompt, error)) << error;
    // The child shares part of block 0, which both then write: the first
    // to write copies it, in the device's buffers.
    SequenceId child = -1;
    ASSERT_TRUE(kv.forkSequence(hetrt::core::KvCache::kDefaultSequence, 40,
                                child, error))
        << error;
    ASSERT_TRUE(session.prefill(
        child,
        std::vector<int32_t>(park.prompt.begin() + 40, park.prompt.end()),
        error))
        << error;
    EXPECT_EQ(kv.usage().copiedBlocks, 1);
    EXPECT_EQ(continueGreedy(session, child, park.generated.size()),
              park.generated);
    // The parent's block 0 is its own, unchanged by the child's writes.
    SequenceId parent = -1;
    ASSERT_TRUE(kv.forkSequence(hetrt::core::KvCache::kDefaultSequence, 50,
                                parent, error))
        << error;
    ASSERT_TRUE(session.decode(parent, park.prompt.back(), error)) << error;
    EXPECT_EQ(continueGreedy(session, parent, park.generated.size()),
              park.generated);
  });
}

TEST(PagedProgramSessions, APromptWithACachedPrefixRunsOnlyTheRest) {
  Prompt once = referencePrompts("babyllama105")[0];
  // The prompt and its generation but the last token: two whole blocks and
  // a part, whose next greedy token is the reference's last.
  std::vector<int32_t> text = once.prompt;
  text.insert(text.end(), once.generated.begin(), once.generated.end() - 1);
  int32_t next = once.generated.back();
  onEveryDevice("babyllama105", 1024, [&](ProgramSession &session) {
    hetrt::core::KvCache &kv = session.kvCache();
    std::string error;
    SequenceId first = kv.createSequence();
    ASSERT_TRUE(session.prefill(first, text, error)) << error;
    EXPECT_EQ(greedy(session), next);
    ASSERT_TRUE(kv.removeSequence(first, error)) << error;
    EXPECT_EQ(kv.usage().cachedBlocks, 2);
    SequenceId second = kv.createSequence();
    ASSERT_TRUE(session.prefill(second, text, error)) << error;
    EXPECT_EQ(greedy(session), next);
    EXPECT_EQ(kv.usage().reusedTokens, 128);
    ASSERT_TRUE(session.decode(second, next, error)) << error;
    EXPECT_EQ(kv.position(second), static_cast<int64_t>(text.size()) + 1);
  });
}

TEST(PagedProgramSessions, BadRunsAreRefusedAndChangeNothing) {
  onEveryDevice("stories260K", 256, [&](ProgramSession &session) {
    std::string error;
    EXPECT_FALSE(session.prefill({1, 2, 100000}, error));
    EXPECT_NE(error.find("token id 100000 is outside the vocabulary"),
              std::string::npos)
        << error;
    EXPECT_FALSE(session.decode(7, 1, error));
    EXPECT_NE(error.find("there is no sequence 7"), std::string::npos)
        << error;
    EXPECT_FALSE(session.prefill(std::vector<int32_t>(257, 1), error));
    EXPECT_NE(error.find("exceed the context length 256"), std::string::npos)
        << error;
    EXPECT_EQ(session.kvCache().position(hetrt::core::KvCache::kDefaultSequence),
              0);
    EXPECT_EQ(session.kvCache().usage().freeBlocks, 4);
  });
}

} // namespace
