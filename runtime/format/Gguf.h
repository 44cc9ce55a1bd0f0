// A bounds-checked reader of GGUF model files (versions 2 and 3): metadata,
// tensor infos and memory-mapped tensor data. Shared by the runtime and the
// compiler; depends on nothing but the C++ standard library and POSIX.
#ifndef HETRT_FORMAT_GGUF_H
#define HETRT_FORMAT_GGUF_H

#include "abi/BlockFormats.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetrt::format {

/// GGUF metadata value types, with the file's numeric ids.
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

/// The name GGUF's specification uses for `type` ("uint32", "string", ...).
std::string_view ggufTypeName(GgufType type);

/// One metadata value. Scalars keep the file's type and are readable through
/// any accessor whose type holds the value exactly; arrays hold their elements.
class GgufValue {
public:
  GgufType type() const { return type_; }
  /// For arrays: the element type.
  GgufType elementType() const { return elementType_; }

  bool isInteger() const;
  bool isFloat() const { return type_ == GgufType::F32 || type_ == GgufType::F64; }

  /// The value as an integer, or nullopt if it is not an integer type (or a
  /// u64 beyond int64's range).
  std::optional<int64_t> asInt() const;
  /// The value as a double, for integer and float types.
  std::optional<double> asDouble() const;
  std::optional<bool> asBool() const;
  /// The string, or nullopt if the value is not a string.
  std::optional<std::string_view> asString() const;
  /// Array elements (empty for scalars).
  const std::vector<GgufValue> &elements() const { return elements_; }

private:
  friend class GgufParser;
  GgufType type_ = GgufType::U8;
  GgufType elementType_ = GgufType::U8;
  uint64_t bits_ = 0; // integers (two's complement), bool, float bit patterns
  double floatValue_ = 0;
  std::string string_;
  std::vector<GgufValue> elements_;
};

/// One tensor of the file.
struct GgufTensorInfo {
  std::string name;
  /// GGUF order: dims[0] is the innermost (contiguous) dimension.
  std::vector<int64_t> dims;
  BlockFormat format = BlockFormat::F32;
  /// Offset of the data from the start of the data section.
  uint64_t offset = 0;
  /// Stored bytes of the data.
  uint64_t sizeBytes = 0;

  int64_t numElements() const;
};

/// An open GGUF file. The data section is memory-mapped read-only; the
/// metadata and tensor infos are parsed and checked when the file is opened.
/// Immutable after open, so it may be shared between threads.
class GgufFile {
public:
  /// Opens and validates `path`. On failure returns null and sets `error` to a
  /// message naming the file, the field, its offset and what is wrong.
  static std::unique_ptr<GgufFile> open(const std::string &path,
                                        std::string &error);

  /// Validates an in-memory image (used for tests and fuzzing). `name` appears
  /// in error messages. The bytes are copied.
  static std::unique_ptr<GgufFile> openBuffer(std::string_view bytes,
                                              const std::string &name,
                                              std::string &error);

  ~GgufFile();
  GgufFile(const GgufFile &) = delete;
  GgufFile &operator=(const GgufFile &) = delete;

  const std::string &path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t fileSize() const { return size_; }
  /// Offset of the data section from the start of the file.
  uint64_t dataOffset() const { return dataOffset_; }
  /// The mapped data section (all tensors) and its size in bytes.
  const uint8_t *dataSection() const { return base_ + dataOffset_; }
  uint64_t dataSectionSize() const { return size_ - dataOffset_; }

  /// Metadata in key order.
  const std::map<std::string, GgufValue> &metadata() const { return metadata_; }
  /// The value of `key`, or null.
  const GgufValue *find(std::string_view key) const;

  /// Tensor infos in file order.
  const std::vector<GgufTensorInfo> &tensors() const { return tensors_; }
  /// The tensor named `name`, or null.
  const GgufTensorInfo *findTensor(std::string_view name) const;
  /// The bytes of `tensor` in the mapping (valid while the file is open).
  const uint8_t *tensorData(const GgufTensorInfo &tensor) const;

  /// A writable private copy of the whole file (fileSize() bytes, then
  /// `extraBytes` of zeros) in anonymous memory, 2 MiB-aligned and advised
  /// into huge pages; the file is never written. Unmap it with munmap. Null
  /// with `error` set when it cannot be made.
  uint8_t *mapPrivateCopy(uint64_t extraBytes, std::string &error) const;

private:
  GgufFile() = default;
  friend class GgufParser;

  std::string path_;
  /// The open file behind the mapping, for private copies (-1 for images).
  int fd_ = -1;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t dataOffset_ = 0;
  const uint8_t *base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> ownedBytes_;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensorIndex_;
};

} // namespace hetrt::format

#endif // HETRT_FORMAT_GGUF_H
