// The model file's tensor data as one code variant reads it: the mapped data
// section itself, or, when the code reads some weights in an interleaved
// layout (abi/WeightLayout.h), a private copy of the file in huge pages with
// those tensors rewritten. The file and its page cache are never written.
#ifndef HETRT_BACKENDS_CPU_CPUWEIGHTS_H
#define HETRT_BACKENDS_CPU_CPUWEIGHTS_H

#include "runtime/format/Gguf.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hetrt::cpu {

class CpuWeights {
public:
  /// The data section of `file` in the layouts `layouts` lists (entries of
  /// kWeightLayoutFields values, as CodeImage::weightLayouts gives them).
  /// Every entry must name a tensor of the file by its data offset, format
  /// and shape; otherwise returns null with `error` naming `origin`, the
  /// entry and the fix.
  ///
  /// The code reads a private copy of the file in huge pages: always when
  /// it rewrites tensors, and otherwise when `availableBytes` (the memory
  /// this process may still take) holds the copy twice over, room for the
  /// page cache the copying fills beside it; else it reads the file's own
  /// mapping.
  static std::unique_ptr<CpuWeights> prepare(const format::GgufFile &file,
                                             const std::vector<int64_t> &layouts,
                                             const std::string &origin,
                                             std::string &error,
                                             uint64_t availableBytes);
  static std::unique_ptr<CpuWeights> prepare(const format::GgufFile &file,
                                             const std::vector<int64_t> &layouts,
                                             const std::string &origin,
                                             std::string &error);
  /// Whether the code reads a private copy rather than the file's mapping.
  bool copied() const { return copy_ != nullptr; }
  ~CpuWeights();
  CpuWeights(const CpuWeights &) = delete;
  CpuWeights &operator=(const CpuWeights &) = delete;

  const uint8_t *data() const { return data_; }
  /// The data section's bytes, and the copies after it (abi/WeightLayout.h).
  uint64_t size() const { return size_; }
  /// Tensors rewritten into another layout, and their bytes.
  int64_t rewrittenTensors() const { return rewrittenTensors_; }
  uint64_t rewrittenBytes() const { return rewrittenBytes_; }

private:
  CpuWeights() = default;
  /// Makes copy_ a private copy of `file` with `extraBytes` after it;
  /// false with `error` set.
  bool copyFile(const format::GgufFile &file, uint64_t extraBytes,
                std::string &error);
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
  /// The private mapping (null when the file's own mapping serves).
  uint8_t *copy_ = nullptr;
  uint64_t copySize_ = 0;
  int64_t rewrittenTensors_ = 0;
  uint64_t rewrittenBytes_ = 0;
};

} // namespace hetrt::cpu

#endif // HETRT_BACKENDS_CPU_CPUWEIGHTS_H
