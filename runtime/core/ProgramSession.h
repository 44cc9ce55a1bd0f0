// Generation through programs played by a ProgramRunner, with the calls of
// the CPU's Session (a prefill of the prompt, then one decode step per
// token): a model's SPIR-V programs (the pack's "spirv" part) on one Vulkan
// device, or the plan's programs (its "plan" part) over the devices of the
// system it was planned for.
#ifndef HETRT_CORE_PROGRAMSESSION_H
#define HETRT_CORE_PROGRAMSESSION_H

#include "runtime/core/KvCache.h"
#include "runtime/core/Model.h"
#include "runtime/core/ProgramRunner.h"
#include "runtime/hal/Device.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetrt::core {

/// The first of `code`'s kernel library variants (best first) whose SPIR-V
/// version, capabilities and extensions `device` has; null, with `why`
/// naming what the device lacks for each variant, when there is none.
const format::SpirvLibrary *chooseSpirvLibrary(const format::SpirvCode &code,
                                               const hal::SpirvSupport &device,
                                               std::string &why);

/// The build of a GPU kernel library (`code`, for target "nvptx" or
/// "amdgpu") a GPU of `arch` runs: for NVIDIA, the cubin of its chip, else a
/// cubin of an older chip of the same major version (sm_80 code runs on
/// sm_86 and sm_89), else PTX for an older chip, which the driver compiles;
/// for AMD, the code object of its chip. Null, with `why` listing the
/// builds, when none runs there.
const format::GpuLibrary *chooseGpuLibrary(const format::GpuCode &code,
                                           const std::string &target,
                                           const std::string &arch,
                                           std::string &why);

/// The programs' KV caches are paged like the CPU session's, and hold the
/// same sequences (KvCache): the session is the store of their blocks in
/// the devices' buffers.
class ProgramSession : private KvBlockStore {
public:
  using SequenceId = KvCache::SequenceId;
  static constexpr SequenceId kDefaultSequence = KvCache::kDefaultSequence;

  /// Null with `error` naming the pack and the fix when the pack holds no
  /// SPIR-V programs, or they do not load on `device`.
  /// `failure` is Unsupported when the pack holds no SPIR-V programs or
  /// the device runs no SPIR-V.
  static std::unique_ptr<ProgramSession> create(const Model &model,
                                                hal::Device &device,
                                                std::string &error,
                                                Failure &failure);
  /// The plan's programs over the devices they name, found among
  /// `devices` (this machine's); null with `error` naming the pack, the
  /// device and the fix, and `failure` its kind (Unsupported: no plan;
  /// Unavailable: a device is missing), when the plan cannot run here.
  static std::unique_ptr<ProgramSession>
  createPlanned(const Model &model,
                const std::vector<std::shared_ptr<hal::Device>> &devices,
                std::string &error, Failure &failure);

  /// Runs `tokens` from the default sequence's position (in chunks of the
  /// program's largest step), leaving the logits of the last.
  bool prefill(const std::vector<int32_t> &tokens, std::string &error) {
    return prefill(kDefaultSequence, tokens, error);
  }
  /// Runs one token at the default sequence's next position.
  bool decode(int32_t token, std::string &error) {
    return decode(kDefaultSequence, token, error);
  }
  /// As above, on `sequence`; a prefill that starts on a block boundary
  /// takes the blocks of its prefix that the prefix cache holds. Fails,
  /// changing nothing, when the sequence does not exist, an id is outside
  /// the vocabulary, the context would overflow or the pool cannot hold
  /// the positions.
  bool prefill(SequenceId sequence, const std::vector<int32_t> &tokens,
               std::string &error);
  bool decode(SequenceId sequence, int32_t token, std::string &error);
  /// One step of `sequences`, each taking its id of `ids` at its own next
  /// position, in one run of the batch's program (each token through its
  /// own block table); logits() then holds a row per sequence. As
  /// Session::decodeBatch; fails, changing nothing, where the pack has no
  /// batch program (a plan's) or the batch is larger than it takes.
  bool decodeBatch(const std::vector<SequenceId> &sequences,
                   const std::vector<int32_t> &ids, std::string &error);
  /// The most sequences decodeBatch takes (0: none).
  int64_t maxBatch() const { return maxBatch_; }
  /// Forgets the default sequence's tokens, freeing its blocks.
  void reset() { kv_->reset(); }

  /// The sequences and their blocks, as Session's.
  KvCache &kvCache() { return *kv_; }
  const KvCache &kvCache() const { return *kv_; }

  /// The last step's logits: the last token's, or a row per sequence of a
  /// batch.
  const float *logits() const { return logits_.data(); }
  /// Sequence `row`'s logits of the last batch.
  const float *logits(size_t row) const {
    return logits_.data() + row * static_cast<size_t>(vocab_);
  }
  int64_t vocabSize() const { return vocab_; }
  /// The devices it runs on, joined by '+' ("vulkan0", "vulkan0+cpu0").
  const std::string &deviceName() const { return deviceName_; }
  /// The name the plan gives the device this machine calls `runtimeName`
  /// (they differ when the plan was made for a catalog system: gpu0 runs on
  /// cuda0), or `runtimeName` itself.
  const std::string &planDeviceName(const std::string &runtimeName) const {
    for (const auto &[runtime, planned] : planNames_)
      if (runtime == runtimeName)
        return planned;
    return runtimeName;
  }
  /// The memory spaces the session holds buffers in (its devices', and
  /// the cache's tiers), with the copies between them.
  std::vector<MemorySpaceStats> memorySpaces() const;
  /// What ran on each device so far.
  std::vector<ProgramRunner::DeviceStats> deviceStats() const {
    return runner_->stats();
  }

private:
  ProgramSession() = default;
  /// Finishes create(): runs `prefill` and `decode` with `devices`.
  static std::unique_ptr<ProgramSession>
  start(const Model &model, std::vector<ProgramRunner::DeviceCode> devices,
        hetc::abi::Program prefill, hetc::abi::Program decode,
        int64_t maxPrefillTokens, const std::string &recompile,
        std::string &error, Failure &failure,
        std::optional<hetc::abi::Program> batch = std::nullopt,
        int64_t maxBatch = 0);
  /// The sequence, if it exists and `count` more ids fit its context and
  /// the vocabulary; null with `error` otherwise.
  KvSequence *checkRun(SequenceId sequence, const int32_t *tokens,
                       int64_t count, std::string &error);
  /// Runs `count` tokens of `sequence` through entry `program`.
  bool step(size_t program, SequenceId id, KvSequence &sequence,
            const int32_t *tokens, int64_t count, std::string &error);
  // The caches as the KV cache's block store (ProgramRunner moves them).
  size_t blockBytes() const override { return runner_->kvBlockBytes(); }
  KvBlockRows blockRows() const override {
    return {headDim_, kvElementBytes_, kvBfloat_};
  }
  bool gatherBlock(int32_t block, std::byte *out, std::string &error) override;
  bool scatterBlock(const std::byte *in, int32_t block,
                    std::string &error) override;
  bool copyBlock(int32_t from, int32_t to, std::string &error) override;
  /// The runner's entries: the prefill program, then the decode program.
  static constexpr size_t kPrefillEntry = 0;
  static constexpr size_t kDecodeEntry = 1;
  /// The batch's decode step, where the pack has one.
  static constexpr size_t kBatchEntry = 2;

  std::unique_ptr<ProgramRunner> runner_;
  std::unique_ptr<KvCache> kv_;
  /// The block table the programs read: the running sequence's blocks,
  /// then zeros to the pool's size.
  std::vector<int32_t> table_;
  size_t headDim_ = 0;
  size_t kvElementBytes_ = 4;
  bool kvBfloat_ = false;
  std::vector<float> logits_;
  int64_t context_ = 0;
  int64_t maxPrefillTokens_ = 1;
  int64_t maxBatch_ = 0;
  int64_t vocab_ = 0;
  std::string deviceName_;
  /// (this machine's name, the plan's name) of each device of a plan.
  std::vector<std::pair<std::string, std::string>> planNames_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_PROGRAMSESSION_H
