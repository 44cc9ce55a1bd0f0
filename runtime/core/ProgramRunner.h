// Plays device programs (abi/Program.h) on one device of the device layer:
// a model's prefill and decode programs share the weights (uploaded once from
// the GGUF, by tensor name) and the KV caches (kept across steps); each
// program has its own activation buffers, sized for the most tokens it runs.
#ifndef HETRT_CORE_PROGRAMRUNNER_H
#define HETRT_CORE_PROGRAMRUNNER_H

#include "abi/Program.h"
#include "runtime/format/Gguf.h"
#include "runtime/hal/Device.h"

#include <map>
#include <memory>
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

  /// Loads `executable` (the target's kernel library, for `kernels`), checks
  /// every entry against it (each dispatched kernel exists and takes the
  /// buffers the step gives), allocates the buffers and uploads the weights
  /// from `weights`. Null with `error` naming the program, the step or the
  /// weight on failure.
  static std::unique_ptr<ProgramRunner>
  create(hal::Device &device, hal::ExecutableFormat format,
         const std::string &binary,
         const std::vector<hal::KernelSignature> &kernels,
         std::vector<Entry> entries, const format::GgufFile &weights,
         hal::Error &error);

  /// Runs entry `entry` for `count` tokens at positions [start, start +
  /// count) and copies the logits of the last token (`vocab` floats) to
  /// `logits`. The cache must hold the positions before `start`.
  bool run(size_t entry, const int32_t *tokens, int64_t count, int64_t start,
           float *logits, hal::Error &error);

  /// Waits for the work still queued: uploads of a failed create() or the
  /// steps of a failed run() read buffers and host memory freed after it.
  ~ProgramRunner();

  /// Floats of the logits run() returns.
  int64_t vocab() const { return vocab_; }

private:
  struct Prepared {
    Entry entry;
    std::vector<std::shared_ptr<hal::Buffer>> buffers;
    /// One parameter buffer per dispatch step (null for host steps), and the
    /// kernel index of each.
    std::vector<std::shared_ptr<hal::Buffer>> params;
    std::vector<int> kernels;
  };

  ProgramRunner(hal::Device &device) : device_(device) {}

  hal::Device &device_;
  std::shared_ptr<hal::Executable> executable_;
  std::unique_ptr<hal::Queue> queue_;
  /// Weights and caches by name, shared by the entries.
  std::map<std::string, std::shared_ptr<hal::Buffer>> shared_;
  std::vector<Prepared> prepared_;
  int64_t vocab_ = 0;
  /// Host memory the queue reads from until the next finish().
  std::vector<std::vector<char>> staging_;
  /// RoPE frequency factors, by weight name (read on the host).
  std::map<std::string, std::vector<float>> factors_;
};

} // namespace hetrt::core

#endif // HETRT_CORE_PROGRAMRUNNER_H
