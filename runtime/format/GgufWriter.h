// Writes GGUF v3 files: metadata of every value type and tensor data, aligned as
// the format requires. Used by `hetc synth` and by tests that build files.
#ifndef HETRT_FORMAT_GGUFWRITER_H
#define HETRT_FORMAT_GGUFWRITER_H

#include "abi/BlockFormats.h"
#include "runtime/format/Gguf.h"

#include <cstdint>
#include <functional>
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

  /// Emits a tensor's stored bytes in pieces through `sink`; returns false
  /// with `error` set when it cannot produce them.
  using TensorProducer = std::function<bool(
      const std::function<void(std::string_view)> &sink, std::string &error)>;
  /// Adds a tensor whose `sizeBytes` stored bytes `producer` emits when the
  /// file is written, so a large model is never held in memory.
  void addTensor(std::string_view name, std::vector<int64_t> dims,
                 BlockFormat format, uint64_t sizeBytes, TensorProducer producer);

  /// The complete file image (producers run; for small files and tests).
  std::string serialize() const;
  /// The size of the file serialize() and writeFile() produce.
  uint64_t fileSize() const;
  /// Streams the file to `path` through a temporary file beside it; returns
  /// false and sets `error` on failure, leaving an earlier file intact.
  bool writeFile(const std::string &path, std::string &error) const;

private:
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
    BlockFormat format;
    std::vector<uint8_t> data;
    TensorProducer producer;
    uint64_t size = 0;
  };
  void beginKey(std::string_view key, GgufType type);
  uint64_t padded(uint64_t size) const;
  /// Header, metadata and tensor infos, padded to the alignment.
  std::string header() const;
  bool emit(const std::function<void(std::string_view)> &sink,
            std::string &error) const;

  uint64_t alignment_;
  uint64_t metadataCount_ = 0;
  std::string metadata_;
  std::vector<Tensor> tensors_;
};

} // namespace hetrt::format

#endif // HETRT_FORMAT_GGUFWRITER_H
