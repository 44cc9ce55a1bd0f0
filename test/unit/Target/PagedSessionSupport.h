// What the paged-session tests share: the real models compiled as `hetc
// compile` compiles them, their reference prompts, and greedy generation of
// several sequences in turns, over any session with a KvCache (the CPU's
// Session, or a ProgramSession on a device).
#ifndef HETC_TEST_PAGEDSESSIONSUPPORT_H
#define HETC_TEST_PAGEDSESSIONSUPPORT_H

#include "hetc/Pipeline/Compile.h"
#include "runtime/core/KvCache.h"
#include "runtime/core/Model.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace hetc::test {

using SequenceId = hetrt::core::KvCache::SequenceId;

inline std::string sharedPath(const std::string &relative) {
  return std::string(HETC_SHARED_DIR) + "/" + relative;
}

struct Prompt {
  std::string name;
  std::vector<int32_t> prompt, generated;
};

inline std::vector<Prompt> referencePrompts(const std::string &model) {
  std::ifstream in(sharedPath("models/" + model + ".reference.json"));
  nlohmann::json reference = nlohmann::json::parse(in);
  std::vector<Prompt> prompts;
  for (const nlohmann::json &prompt : reference["prompts"])
    prompts.push_back(
        {prompt["name"].get<std::string>(),
         prompt["prompt_token_ids"].get<std::vector<int32_t>>(),
         prompt["generated_token_ids"].get<std::vector<int32_t>>()});
  return prompts;
}

/// The model compiled for this CPU with a pool of `context / 64` blocks,
/// and with `programs` "spirv" as SPIR-V programs too, or with another
/// name planned on that system; loaded. Packs are compiled once per model,
/// context and programs.
inline const hetrt::core::Model &loadedModel(const std::string &model,
                                             int64_t context,
                                             const std::string &programs = "") {
  static std::map<std::string, std::unique_ptr<hetrt::core::Model>> models;
  std::string key = model + "@" + std::to_string(context) +
                    (programs.empty() ? "" : "-" + programs);
  auto found = models.find(key);
  if (found != models.end())
    return *found->second;
  std::filesystem::path pack =
      std::filesystem::path(testing::TempDir()) /
      ("paged-" + key + "-" + std::to_string(::getpid()) + ".hetpack");
  hetc::pipeline::CompileOptions options;
  options.modelPath = sharedPath("models/" + model + ".gguf");
  options.outputPath = pack.string();
  options.cpuVariants = {"host"};
  options.contextLength = context;
  options.spirv = programs == "spirv";
  if (!programs.empty() && programs != "spirv")
    options.system = programs;
  std::string error;
  EXPECT_TRUE(hetc::pipeline::compileModel(options, error)) << error;
  std::unique_ptr<hetrt::core::Model> loaded =
      hetrt::core::Model::load(pack.string(), "", error);
  EXPECT_TRUE(loaded) << error;
  std::filesystem::remove(pack);
  if (!loaded)
    std::abort();
  return *(models[key] = std::move(loaded));
}

template <typename SessionT> int32_t greedy(const SessionT &session) {
  const float *logits = session.logits();
  return static_cast<int32_t>(
      std::max_element(logits, logits + session.vocabSize()) - logits);
}

/// Each prompt prefilled in a sequence of its own (the session's default
/// one first when `defaultFirst`), with its first greedy token.
template <typename SessionT>
void prefillEach(SessionT &session, const std::vector<Prompt> &prompts,
                 bool defaultFirst, std::vector<SequenceId> &sequences,
                 std::vector<std::vector<int32_t>> &generated) {
  std::string error;
  generated.assign(prompts.size(), {});
  for (size_t i = 0; i < prompts.size(); ++i) {
    sequences.push_back(i == 0 && defaultFirst
                            ? hetrt::core::KvCache::kDefaultSequence
                            : session.kvCache().createSequence());
    ASSERT_TRUE(session.prefill(sequences[i], prompts[i].prompt, error))
        << error;
    generated[i].push_back(greedy(session));
  }
}

/// The reference prompts prefilled one by one, then decoded together: one
/// call of the batched entry point per step, each sequence at its own
/// position with its own blocks.
template <typename SessionT>
void expectBatchedReferenceTokens(SessionT &session, const std::string &model) {
  std::vector<Prompt> prompts = referencePrompts(model);
  std::vector<SequenceId> sequences;
  std::vector<std::vector<int32_t>> generated;
  prefillEach(session, prompts, false, sequences, generated);
  std::string error;
  for (size_t step = 1; step < prompts[0].generated.size(); ++step) {
    std::vector<int32_t> ids;
    for (size_t i = 0; i < prompts.size(); ++i)
      ids.push_back(generated[i].back());
    ASSERT_TRUE(session.decodeBatch(sequences, ids, error)) << error;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const float *logits = session.logits(i);
      generated[i].push_back(static_cast<int32_t>(
          std::max_element(logits, logits + session.vocabSize()) - logits));
    }
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(prompts[i].name);
    EXPECT_EQ(generated[i], prompts[i].generated);
  }
  // A sequence given twice, or one that does not exist, is refused.
  EXPECT_FALSE(session.decodeBatch({sequences[0], sequences[0]}, {1, 2},
                                   error));
  EXPECT_NE(error.find("in the batch twice"), std::string::npos) << error;
  EXPECT_FALSE(session.decodeBatch({sequences[0], 999}, {1, 2}, error));
  EXPECT_NE(error.find("there is no sequence 999"), std::string::npos)
      << error;
  EXPECT_FALSE(session.decodeBatch({sequences[0]}, {1, 2}, error));
}

/// The prompts prefilled, then decoded in turns of one token each until
/// each has its reference's count, which its tokens must equal.
template <typename SessionT>
void expectTokensInTurns(SessionT &session, const std::vector<Prompt> &prompts,
                         bool defaultFirst, std::vector<SequenceId> &sequences) {
  std::vector<std::vector<int32_t>> generated;
  prefillEach(session, prompts, defaultFirst, sequences, generated);
  std::string error;
  for (size_t step = 1; step < prompts[0].generated.size(); ++step)
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (generated[i].size() >= prompts[i].generated.size())
        continue;
      ASSERT_TRUE(session.decode(sequences[i], generated[i].back(), error))
          << error;
      generated[i].push_back(greedy(session));
    }
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(prompts[i].name);
    EXPECT_EQ(generated[i], prompts[i].generated);
    EXPECT_EQ(session.kvCache().position(sequences[i]),
              static_cast<int64_t>(prompts[i].prompt.size() +
                                   prompts[i].generated.size() - 1));
  }
}

/// The reference prompts of `model` interleaved over a pool of
/// `poolBlocks` blocks with host memory for `hostBlocks` more and disk for
/// the rest: each sequence's blocks move out when the others run and come
/// back before it does, and its tokens are the reference's.
template <typename SessionT>
void expectReferenceTokensThroughTiers(SessionT &session,
                                       const std::string &model,
                                       int64_t poolBlocks, int64_t hostBlocks,
                                       bool prefixCaching) {
  hetrt::core::KvCache &kv = session.kvCache();
  kv.setPrefixCaching(prefixCaching);
  uint64_t blockBytes = static_cast<uint64_t>(kv.usage().blockBytes);
  std::string error;
  ASSERT_TRUE(kv.setBudget("pool", poolBlocks * blockBytes, error)) << error;
  ASSERT_TRUE(kv.setBudget("host", hostBlocks * blockBytes, error)) << error;
  ASSERT_TRUE(kv.setBudget("disk", 64 * blockBytes, error, testing::TempDir()))
      << error;
  std::vector<SequenceId> sequences;
  expectTokensInTurns(session, referencePrompts(model), false, sequences);
  hetrt::core::KvSwapStats swaps = kv.usage().swaps;
  EXPECT_GT(swaps.toHost, 0);
  EXPECT_GT(swaps.toDisk, 0);
  EXPECT_GT(swaps.fromHost, 0);
  EXPECT_GT(swaps.fromDisk, 0);
  for (SequenceId sequence : sequences)
    ASSERT_TRUE(kv.removeSequence(sequence, error)) << error;
  EXPECT_EQ(kv.usage().freeBlocks, poolBlocks);
}

/// Greedy tokens of `sequence` from its current logits until it has
/// `count`, decoding each.
template <typename SessionT>
std::vector<int32_t> continueGreedy(SessionT &session, SequenceId sequence,
                                    size_t count) {
  std::vector<int32_t> tokens = {greedy(session)};
  std::string error;
  while (tokens.size() < count) {
    if (!session.decode(sequence, tokens.back(), error)) {
      ADD_FAILURE() << error;
      break;
    }
    tokens.push_back(greedy(session));
  }
  return tokens;
}

} // namespace hetc::test

#endif // HETC_TEST_PAGEDSESSIONSUPPORT_H
