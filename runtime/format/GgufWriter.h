// Writes GGUF v3 files: metadata of every value type and tensor data, aligned as
// the format requires. Used by `hetc synth` and by tests that build files.
#ifndef HETRT_FORMAT_GGUFWRITER_H
#define HETRT_FORMAT_GGUFWRITER_H

#include "runtime/format/BlockFormats.h"
#include "runtime/format/Gguf.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::format {

/// Accumulates metadata and tensors, then serializes them. Not thread-safe.
class GgufWriter {
public:
  explicit GgufWriter(uint64_t alignment = 32) : alignment_(alignment) {}

  void addString(std::string_view key, std::string_view value);
  void addU32(std::string_view key, uint32_t value);
  void addI32(std::string_view key, int32_t value);
  void addU64(std::string_view key, uint64_t value);
  void addF32(std::string_view key, float value);
  void addBool(std::string_view key, bool value);
  void addStringArray(std::string_view key,
                      const std::vector<std::string> &values);
  void addF32Array(std::string_view key, const std::vector<float> &values);
  void addI32Array(std::string_view key, const std::vector<int32_t> &values);

  /// Adds a tensor with GGUF-order `dims` (innermost first) whose stored bytes
  /// are `data`; the size must match the dims and format.
  void addTensor(std::string_view name, std::vector<int64_t> dims,
                 BlockFormat format, std::vector<uint8_t> data);

  /// The complete file image.
  std::string serialize() const;
  /// Writes the image to `path`; returns false and sets `error` on failure.
  bool writeFile(const std::string &path, std::string &error) const;

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    BlockFormat format;
    std::vector<uint8_t> data;
  };
  void beginKey(std::string_view key, GgufType type);

  uint64_t alignment_;
  uint64_t metadataCount_ = 0;
  std::string metadata_;
  std::vector<Tensor> tensors_;
};

} // namespace hetrt::format

#endif // HETRT_FORMAT_GGUFWRITER_H
