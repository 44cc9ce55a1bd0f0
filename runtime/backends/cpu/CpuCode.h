// Loading a pack's compiled CPU code: the best variant the host can run, loaded
// from memory, with its entry points resolved.
#ifndef HETRT_BACKENDS_CPU_CPUCODE_H
#define HETRT_BACKENDS_CPU_CPUCODE_H

#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"

#include <memory>
#include <string>

namespace hetrt::cpu {

/// An entry point of generated code: takes an array of memref-descriptor
/// pointers in the order the compiler's ABI fixes (weights, tokens, positions,
/// one KV cache per layer, logits).
using EntryFunction = void (*)(void **descriptors);

/// A loaded code variant. Unloads the code when destroyed.
class CpuCode {
public:
  /// Picks the first variant of `manifest` the host supports and loads it from
  /// `pack`. On failure returns null and sets `error`.
  static std::unique_ptr<CpuCode> load(const format::PackFile &pack,
                                       const format::Manifest &manifest,
                                       std::string &error);
  ~CpuCode();
  CpuCode(const CpuCode &) = delete;
  CpuCode &operator=(const CpuCode &) = delete;

  const std::string &variantName() const { return variant_; }
  EntryFunction prefill() const { return prefill_; }
  EntryFunction decode() const { return decode_; }

private:
  CpuCode() = default;
  std::string variant_;
  void *handle_ = nullptr;
  int fd_ = -1;
  EntryFunction prefill_ = nullptr;
  EntryFunction decode_ = nullptr;
};

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUCODE_H
