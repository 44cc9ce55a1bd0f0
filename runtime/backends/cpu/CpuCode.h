// Loading a pack's compiled CPU code: the best variant the host can run, loaded
// from memory, with its entry points resolved.
#ifndef HETRT_BACKENDS_CPU_CPUCODE_H
#define HETRT_BACKENDS_CPU_CPUCODE_H

#include "abi/CodeRecord.h"
#include "runtime/core/Failure.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"

#include <array>
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
  /// `pack`, then checks the code's own record (CodeRecord.h) against the
  /// manifest: a kernel ABI other than this runtime's, or any shape the code
  /// was not compiled for, is refused before an entry point could run. On
  /// failure returns null and sets `error` naming the pack, the field and the
  /// fix.
  static std::unique_ptr<CpuCode> load(const format::PackFile &pack,
                                       const format::Manifest &manifest,
                                       std::string &error,
                                       core::Failure &failure);
  ~CpuCode();
  CpuCode(const CpuCode &) = delete;
  CpuCode &operator=(const CpuCode &) = delete;

  const std::string &variantName() const { return variant_; }
  EntryFunction prefill() const { return prefill_; }
  EntryFunction decode() const { return decode_; }
  /// What the code was compiled for, indexed by format::CodeRecordField.
  const std::array<int64_t, format::kCodeRecordLength> &record() const {
    return record_;
  }

private:
  CpuCode() = default;
  std::string variant_;
  void *handle_ = nullptr;
  int fd_ = -1;
  EntryFunction prefill_ = nullptr;
  EntryFunction decode_ = nullptr;
  std::array<int64_t, format::kCodeRecordLength> record_{};
};

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUCODE_H
