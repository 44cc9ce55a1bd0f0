// Loading a pack's compiled CPU code: the best variant the host can run, loaded
// from memory, with its entry points resolved.
#ifndef HETRT_BACKENDS_CPU_CPUCODE_H
#define HETRT_BACKENDS_CPU_CPUCODE_H

#include "abi/CodeRecord.h"
#include "abi/WeightLayout.h"
#include "runtime/core/Failure.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::cpu {

/// An entry point of generated code: takes an array of memref-descriptor
/// pointers in the order the compiler's ABI fixes (weights, tokens, positions,
/// one KV cache per layer, logits).
using EntryFunction = void (*)(void **descriptors);

/// x86 code hetc compiled, loaded from memory: the shared object's handle,
/// its symbols, and the record it carries. Unloads the code when destroyed.
class CodeImage {
public:
  /// Checks `image` structurally (ElfImage.h), loads it, checks its record's
  /// magic number and kernel ABI version and the host's CPU features against
  /// the ones the code says it uses (`claimed`: the ones the manifest
  /// lists, for the message), and routes its buffer allocations to the
  /// runtime's cache. `origin` names the code in messages ("PACK: the code
  /// of variant \"x86-64-v2\""). Null with `error` and `failure` set.
  static std::unique_ptr<CodeImage> load(std::string_view image,
                                         const std::string &origin,
                                         const std::vector<std::string> &claimed,
                                         std::string &error,
                                         core::Failure &failure);
  ~CodeImage();
  CodeImage(const CodeImage &) = delete;
  CodeImage &operator=(const CodeImage &) = delete;

  /// The function `name`, or null when the code exports no such function.
  EntryFunction function(const std::string &name) const;
  /// The constant `name` and its bytes, or null when the code exports no
  /// such object.
  const char *data(const std::string &name, size_t &size) const;
  const std::array<int64_t, format::kCodeRecordLength> &record() const {
    return record_;
  }
  /// The weights the code reads in another layout than the model file's:
  /// kWeightLayoutFields values per entry (abi/WeightLayout.h).
  const std::vector<int64_t> &weightLayouts() const { return weightLayouts_; }

private:
  CodeImage() = default;
  void *handle_ = nullptr;
  int fd_ = -1;
  std::array<int64_t, format::kCodeRecordLength> record_{};
  std::vector<int64_t> weightLayouts_;
};

/// Whether `record` names the model file of content hash `weightsHash` (16
/// hex digits, as the manifest gives it): code reads its weights at the
/// offsets of the file it was compiled for. Sets `error` naming `origin`.
bool checkModelHash(const std::array<int64_t, format::kCodeRecordLength> &record,
                    const std::string &origin, const std::string &weightsHash,
                    std::string &error);

/// A loaded code variant of a whole model. Unloads the code when destroyed.
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
  CpuCode(const CpuCode &) = delete;
  CpuCode &operator=(const CpuCode &) = delete;

  const std::string &variantName() const { return variant_; }
  EntryFunction prefill() const { return prefill_; }
  EntryFunction decode() const { return decode_; }
  /// A decode step of several sequences (paged code only; null otherwise).
  EntryFunction decodeBatch() const { return decodeBatch_; }
  /// What the code was compiled for, indexed by format::CodeRecordField.
  const std::array<int64_t, format::kCodeRecordLength> &record() const {
    return image_->record();
  }
  const std::vector<int64_t> &weightLayouts() const {
    return image_->weightLayouts();
  }

private:
  CpuCode() = default;
  std::string variant_;
  std::unique_ptr<CodeImage> image_;
  EntryFunction prefill_ = nullptr;
  EntryFunction decode_ = nullptr;
  EntryFunction decodeBatch_ = nullptr;
};

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUCODE_H
