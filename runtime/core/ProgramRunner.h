// Plays programs (abi/Program.h) over the devices of the device layer: a
// model's prefill and decode programs share the weights (uploaded once from
// the GGUF, by tensor name, to each device that reads them; code compiled
// for a CPU segment reads the mapped file in place) and the KV caches (kept
// across steps on the device that owns them); each program has its own
// activation buffers, sized for the most tokens it runs. A transfer is read
// by the source device's queue into host memory and written by the target
// device's queue once an event says the read is done, so each queue runs
// its own work in order and waits only where data crosses devices.
#ifndef HETRT_CORE_PROGRAMRUNNER_H
#define HETRT_CORE_PROGRAMRUNNER_H

#include "abi/Program.h"
#include "runtime/core/MemorySpaces.h"
#include "runtime/backends/cpu/CpuWeights.h"
#include "runtime/format/Gguf.h"
#include "runtime/hal/Device.h"

#include <array>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hetrt::core {

class ProgramRunner {
public:
  /// Programs to play, each with the most tokens one step of it takes.
  struct Entry {
    hetc::abi::Program program;
    int64_t maxTokens = 1;
  };

  /// A device the programs run on, with the code it runs: the SPIR-V kernel
  /// library, or the code compiled for the CPU segments.
  struct DeviceCode {
    hal::Device *device = nullptr;
    hal::ExecutableFormat format = hal::ExecutableFormat::SpirV;
    std::string binary;
    std::vector<hal::KernelSignature> kernels;
    /// The code in words, for reports ("spirv subgroup", "x86 avx512").
    std::string description;
    /// Whether it runs code: a device that only holds memory (a program's
    /// "host-memory" device) runs none.
    bool runsCode = true;
    /// Bytes the runner may hold in the device's first memory (0: what
    /// the device has), and what set the bound, for messages.
    uint64_t memoryBudget = 0;
    std::string budgetSource = {};
  };

  /// What ran on one device since the runner was made.
  struct DeviceStats {
    std::string name;
    /// DeviceCode::description of the code it runs.
    std::string code;
    uint64_t dispatches = 0;
    /// Runs of programs with steps on it.
    uint64_t steps = 0;
    /// Parameter buffers written: a dispatch whose parameters are those of
    /// its step's last run (a decode step's products) writes none.
    uint64_t parameterWrites = 0;
    /// Bytes of activations copied into and out of the device's memory.
    uint64_t bytesIn = 0;
    uint64_t bytesOut = 0;
    /// Weights the plan streams: bytes copied in from their home in
    /// another device's memory, the time the copies took, and how long the
    /// device's work waited for them (the part not hidden behind compute).
    uint64_t streamedBytes = 0;
    uint64_t streamNanoseconds = 0;
    uint64_t streamWaitNanoseconds = 0;
    /// Bytes the runner holds in the device's memory, by what they hold:
    /// resident weights, KV caches, the buffers streamed weights land in,
    /// and those of activations and parameters (host memory read in place,
    /// such as the mapped model file, is not counted).
    uint64_t weightBytes = 0;
    uint64_t kvCacheBytes = 0;
    uint64_t streamBufferBytes = 0;
    uint64_t workBytes = 0;
  };

  /// Loads each device's code, matches the programs' devices to `devices`
  /// by name (a program of one unnamed device runs on the first), checks
  /// every entry against them (each dispatched kernel exists and takes the
  /// buffers the step gives, every buffer a step uses is on its device),
  /// allocates the buffers and uploads the weights from `weights`. Null
  /// with `error` naming the program, the step or the weight on failure.
  static std::unique_ptr<ProgramRunner>
  create(std::vector<DeviceCode> devices, std::vector<Entry> entries,
         const format::GgufFile &weights, hal::Error &error);

  /// One device running its SPIR-V kernel library.
  static std::unique_ptr<ProgramRunner>
  create(hal::Device &device, hal::ExecutableFormat format,
         const std::string &binary,
         const std::vector<hal::KernelSignature> &kernels,
         std::vector<Entry> entries, const format::GgufFile &weights,
         hal::Error &error);

  /// Runs entry `entry` for `count` tokens at positions [start, start +
  /// count) of the sequence whose block table is `blockTable`
  /// (blockTableEntries() block ids, each below that count) and copies the
  /// logits of the last token (`vocab` floats) to `logits`. The cache must
  /// hold the positions before `start`.
  bool run(size_t entry, const int32_t *tokens, int64_t count, int64_t start,
           const int32_t *blockTable, float *logits, hal::Error &error);

  /// Runs entry `entry`, a program built for a batch (one sequence per
  /// token), for `count` tokens: token t at `positions[t]` of the sequence
  /// whose block table is row t of `tables` (count rows of
  /// blockTableEntries()); copies every token's logits (count rows of
  /// `vocab` floats) to `logits`.
  bool runBatch(size_t entry, const int32_t *tokens, const int32_t *positions,
                int64_t count, const int32_t *tables, float *logits,
                hal::Error &error);

  /// Sends entry `entry`'s first streamed weights (the copies a run issues
  /// before its target device has anything else to do) now, so that they
  /// cross while the host samples; the next run() of `entry` uses them
  /// instead of copying again, and a run of another entry drops them.
  bool prefetch(size_t entry, hal::Error &error);

  /// Waits for the work still queued: uploads of a failed create() or the
  /// steps of a failed run() read buffers and host memory freed after it.
  ~ProgramRunner();

  /// Floats of the logits run() returns.
  int64_t vocab() const { return vocab_; }
  /// Entries of a block table: the blocks of each KV cache's pool.
  int64_t blockTableEntries() const { return tableEntries_; }
  /// Slots of a block (0 when the programs keep no cache).
  int64_t kvBlockSize() const { return kvBlockSize_; }

  /// Bytes of one block of the pools: each KV cache's keys and values of
  /// the block's slots, in the order the programs name the caches.
  size_t kvBlockBytes() const;
  /// Where a block's bytes lie: per memory space holding caches, its name
  /// and the bytes of one block there.
  std::vector<std::pair<std::string, uint64_t>> kvBlockShares() const;
  /// Block `block` of every cache into `out` (kvBlockBytes()), from `in`,
  /// and from block `from` to block `to`; after the work run() queued and
  /// done on return. The streamed weights prefetch() sent stay in flight.
  bool readKvBlock(int32_t block, std::byte *out, hal::Error &error);
  bool writeKvBlock(const std::byte *in, int32_t block, hal::Error &error);
  /// writeKvBlock() without waiting: each cache's part of the block is
  /// written on its device's copy queue (from a copy of `in`), and the next
  /// run's first step that reads the cache waits for it alone, so the
  /// layers' blocks arrive while the layers before them compute. A block
  /// read, written or copied in between waits for every such write first.
  bool prefetchKvBlock(const std::byte *in, int32_t block, hal::Error &error);
  bool copyKvBlock(int32_t from, int32_t to, hal::Error &error);
  /// Per device, in the order create() was given them.
  std::vector<DeviceStats> stats() const;
  /// The memory spaces the runner holds buffers in, with what they hold and
  /// the copies between them (streamed weights, activations handed over).
  std::vector<MemorySpaceStats> memorySpaces() const;
  /// The code loaded on device `index` (create()'s order); null for a
  /// device that only holds memory.
  const hal::Executable *executable(size_t index) const {
    return devices_.at(index).executable.get();
  }

private:
  struct Prepared {
    Entry entry;
    /// The runner's device of each of the program's devices, and each
    /// runner device once.
    std::vector<int> devices;
    std::vector<int> distinctDevices;
    std::vector<std::shared_ptr<hal::Buffer>> buffers;
    /// Per buffer, the host memory a weight is read from in place (the
    /// mapped model file), or null.
    std::vector<const void *> inPlace;
    /// One parameter buffer per SPIR-V dispatch step (null for other steps),
    /// and the kernel index of each dispatch.
    std::vector<std::shared_ptr<hal::Buffer>> params;
    /// What each parameter buffer holds once its queue has run the writes
    /// made so far (empty: not known).
    std::vector<std::vector<int32_t>> writtenParams;
    std::vector<int> kernels;
    /// Per transfer step between devices, the value its target's copy
    /// event (stream event, for a streamed weight) reaches once this run's
    /// copy is done (for its Wait step).
    std::vector<uint64_t> transferDone;
    /// Per step, whether it copies a weight the host reads in place into
    /// another device (on the target's stream queue).
    std::vector<bool> streamed;
    /// Per step, whether it is a streamed weight's transfer before its
    /// target device's first other step, which prefetch() may send ahead of
    /// the run.
    std::vector<bool> leading;
  };

  struct RunnerDevice {
    DeviceCode code;
    std::shared_ptr<hal::Executable> executable;
    std::unique_ptr<hal::Queue> queue;
    /// Signaled by the queue where a transfer reads its source on this
    /// device, or writes its target here.
    std::shared_ptr<hal::Event> event;
    uint64_t eventValue = 0;
    /// Where transfers from other devices are written into this device's
    /// memory, beside its queue's work; its event marks each copy done.
    std::unique_ptr<hal::Queue> copyQueue;
    std::shared_ptr<hal::Event> copyEvent;
    uint64_t copyValue = 0;
    /// Where streamed weights are written into this device's memory, beside
    /// its queue's work; its event marks each copy done, and how long the
    /// queue's work waited for one.
    std::unique_ptr<hal::Queue> streamQueue;
    std::shared_ptr<hal::Event> streamEvent;
    uint64_t streamValue = 0;
    DeviceStats stats;
    /// The memory space of its buffers.
    size_t space = 0;
    std::array<hal::Queue *, 3> queues() const {
      return {queue.get(), copyQueue.get(), streamQueue.get()};
    }
  };

  ProgramRunner() = default;
  /// run() and runBatch(): `tableRows` tables, the last token's logits or
  /// `everyToken`'s.
  bool runSteps(size_t entry, const int32_t *tokens, const int32_t *positions,
                int64_t count, const int32_t *tables, int64_t tableRows,
                float *logits, bool everyToken, hal::Error &error);
  /// Queues transfer step `step` of `prepared`, a weight readable from the
  /// host, on its target's stream queue after the target's work so far.
  bool sendWeight(Prepared &prepared, size_t step, int64_t bytes,
                  hal::Error &error);
  /// The host memory weight buffer `buffer` of `prepared` can be copied
  /// from, or null.
  const void *weightHome(Prepared &prepared, int32_t buffer) const;
  bool prepare(size_t index, Entry entry, const format::GgufFile &weights,
               hal::Error &error);
  bool finishAll(hal::Error &error);

  MemoryManager memory_;
  std::vector<RunnerDevice> devices_;
  /// The weights as each CPU device's code reads them (a rewritten copy
  /// when it reads some in an interleaved layout), by runner device.
  std::map<int, std::unique_ptr<cpu::CpuWeights>> cpuWeights_;
  /// Weights and caches by (runner device, name), shared by the entries,
  /// with the bytes the program declared.
  struct SharedBuffer {
    std::shared_ptr<hal::Buffer> buffer;
    int64_t bytes = 0;
    const void *inPlace = nullptr;
  };
  std::map<std::pair<int, std::string>, SharedBuffer> shared_;
  std::vector<Prepared> prepared_;
  /// The entry whose leading streams prefetch() sent, if any (counted as
  /// streamed once a run uses them).
  std::optional<size_t> prefetched_;
  /// The runner device of each KV cache, by name.
  std::map<std::string, int> cacheDevices_;
  /// The KV caches in the order the programs first name them: each is
  /// [2 (keys, values), runs, blocks, a block's bytes of one run].
  struct KvCacheBuffer {
    int device = 0;
    std::shared_ptr<hal::Buffer> buffer;
    uint64_t runs = 1;
    uint64_t runBytes = 0;
  };
  std::vector<KvCacheBuffer> kvCaches_;
  /// Caches with prefetched blocks still being written: the copy event's
  /// value that marks them done, by cache buffer.
  std::map<const hal::Buffer *, uint64_t> pendingKvWrites_;
  /// Waits for every prefetched block (before a block is read, written or
  /// copied on the device's own queue).
  bool finishKvPrefetches(hal::Error &error);
  /// Whether every one of `blocks` is in the pool; `error` names one that
  /// is not.
  bool checkKvBlocks(std::initializer_list<int32_t> blocks,
                     hal::Error &error) const;
  /// Where run `run` of block `block` starts in `cache`.
  uint64_t kvRunOffset(const KvCacheBuffer &cache, uint64_t run,
                       int32_t block) const {
    return (run * static_cast<uint64_t>(tableEntries_) +
            static_cast<uint64_t>(block)) *
           cache.runBytes;
  }
  /// Checks that `blocks` are in the pool, runs `move(queue, cache, run,
  /// at)` over every run of each cache (`at`: where the run sits in a
  /// gathered block), then finishes the queues it used.
  template <typename Move>
  bool forEachKvRun(std::initializer_list<int32_t> blocks, hal::Error &error,
                    Move move);
  int64_t vocab_ = 0;
  int64_t tableEntries_ = 0;
  int64_t kvBlockSize_ = 0;
  /// Host memory the queues read from or write to until the next finish.
  std::vector<std::vector<char>> staging_;
  /// RoPE frequency factors, by weight name (read on the host).
  std::map<std::string, std::vector<float>> factors_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_PROGRAMRUNNER_H
