// GGUF parsing and validation. Every count, size and offset read from the file is
// checked against the bytes that remain before it is used, so a truncated or
// hostile file produces an error message, never an out-of-bounds read or a huge
// allocation.
#include "runtime/format/Gguf.h"

#include "runtime/format/InputFile.h"
#include "runtime/format/MappedFiles.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetrt::format {

namespace {
constexpr uint32_t kMagic = 0x46554747; // "GGUF" little-endian
constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
// Nested arrays deeper than this are not used by any model and would let a
// file drive unbounded recursion.
constexpr int kMaxArrayDepth = 8;

/// Smallest encoded size of one value of `type`, used to bound counts before
/// allocating for them.
uint64_t minEncodedSize(GgufType type) {
  switch (type) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::Bool:
    return 1;
  case GgufType::U16:
  case GgufType::I16:
    return 2;
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::F32:
    return 4;
  case GgufType::U64:
  case GgufType::I64:
  case GgufType::F64:
  case GgufType::String: // the u64 length
    return 8;
  case GgufType::Array: // element type + count
    return 12;
  }
  return 1;
}

bool isKnownType(uint32_t id) { return id <= 12; }
} // namespace

std::string_view ggufTypeName(GgufType type) {
  switch (type) {
  case GgufType::U8:
    return "uint8";
  case GgufType::I8:
    return "int8";
  case GgufType::U16:
    return "uint16";
  case GgufType::I16:
    return "int16";
  case GgufType::U32:
    return "uint32";
  case GgufType::I32:
    return "int32";
  case GgufType::F32:
    return "float32";
  case GgufType::Bool:
    return "bool";
  case GgufType::String:
    return "string";
  case GgufType::Array:
    return "array";
  case GgufType::U64:
    return "uint64";
  case GgufType::I64:
    return "int64";
  case GgufType::F64:
    return "float64";
  }
  return "unknown";
}

bool GgufValue::isInteger() const {
  switch (type_) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::U16:
  case GgufType::I16:
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::U64:
  case GgufType::I64:
    return true;
  default:
    return false;
  }
}

std::optional<int64_t> GgufValue::asInt() const {
  if (!isInteger())
    return std::nullopt;
  if (type_ == GgufType::U64 && bits_ > static_cast<uint64_t>(INT64_MAX))
    return std::nullopt;
  return static_cast<int64_t>(bits_);
}

std::optional<double> GgufValue::asDouble() const {
  if (isFloat())
    return floatValue_;
  if (type_ == GgufType::U64)
    return static_cast<double>(bits_);
  if (std::optional<int64_t> value = asInt())
    return static_cast<double>(*value);
  return std::nullopt;
}

std::optional<bool> GgufValue::asBool() const {
  if (type_ != GgufType::Bool)
    return std::nullopt;
  return bits_ != 0;
}

std::optional<std::string_view> GgufValue::asString() const {
  if (type_ != GgufType::String)
    return std::nullopt;
  return std::string_view(string_);
}

int64_t GgufTensorInfo::numElements() const {
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim;
  return count;
}

/// Reads the file image front to back; the first problem ends parsing with a
/// message naming the field and its offset.
class GgufParser {
public:
  GgufParser(GgufFile &file) : file_(file) {}

  bool parse(std::string &error) {
    if (!parseAll()) {
      error = message_;
      return false;
    }
    return true;
  }

private:
  bool fail(const std::string &what) {
    std::ostringstream os;
    // Structural damage has one fix: a good copy of the file.
    os << file_.path_ << ": "
       << withFix(what, "the file is damaged or was written wrongly; download "
                        "or convert the model again");
    message_ = os.str();
    return false;
  }

  bool need(uint64_t bytes, const std::string &field) {
    if (bytes <= file_.size_ - pos_)
      return true;
    std::ostringstream os;
    os << "truncated: " << field << " at offset " << pos_ << " needs " << bytes
       << " bytes but the file ends at " << file_.size_
       << " (re-download or re-convert the model)";
    return fail(os.str());
  }

  template <typename T> bool readRaw(T &out, const std::string &field) {
    if (!need(sizeof(T), field))
      return false;
    std::memcpy(&out, file_.base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  bool readString(std::string &out, const std::string &field) {
    uint64_t length = 0;
    uint64_t start = pos_;
    if (!readRaw(length, field + " (string length)"))
      return false;
    if (length > file_.size_ - pos_) {
      std::ostringstream os;
      os << field << " at offset " << start << " claims a string of " << length
         << " bytes but only " << (file_.size_ - pos_)
         << " bytes remain in the file";
      return fail(os.str());
    }
    out.assign(reinterpret_cast<const char *>(file_.base_ + pos_), length);
    pos_ += length;
    return true;
  }

  bool readValue(GgufType type, GgufValue &value, const std::string &field,
                 int depth) {
    value.type_ = type;
    switch (type) {
    case GgufType::U8: {
      uint8_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = v;
      return true;
    }
    case GgufType::I8: {
      int8_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = static_cast<uint64_t>(static_cast<int64_t>(v));
      return true;
    }
    case GgufType::U16: {
      uint16_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = v;
      return true;
    }
    case GgufType::I16: {
      int16_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = static_cast<uint64_t>(static_cast<int64_t>(v));
      return true;
    }
    case GgufType::U32: {
      uint32_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = v;
      return true;
    }
    case GgufType::I32: {
      int32_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = static_cast<uint64_t>(static_cast<int64_t>(v));
      return true;
    }
    case GgufType::U64:
    case GgufType::I64: {
      uint64_t v;
      if (!readRaw(v, field))
        return false;
      value.bits_ = v;
      return true;
    }
    case GgufType::F32: {
      float v;
      if (!readRaw(v, field))
        return false;
      value.floatValue_ = v;
      return true;
    }
    case GgufType::F64: {
      double v;
      if (!readRaw(v, field))
        return false;
      value.floatValue_ = v;
      return true;
    }
    case GgufType::Bool: {
      uint8_t v;
      uint64_t at = pos_;
      if (!readRaw(v, field))
        return false;
      if (v > 1) {
        std::ostringstream os;
        os << field << " at offset " << at << " is a bool with value "
           << unsigned(v) << " (must be 0 or 1)";
        return fail(os.str());
      }
      value.bits_ = v;
      return true;
    }
    case GgufType::String:
      return readString(value.string_, field);
    case GgufType::Array:
      return readArray(value, field, depth);
    }
    return false;
  }

  bool readArray(GgufValue &value, const std::string &field, int depth) {
    uint64_t at = pos_;
    if (depth >= kMaxArrayDepth) {
      std::ostringstream os;
      os << field << " at offset " << at << " nests arrays deeper than "
         << kMaxArrayDepth << " levels";
      return fail(os.str());
    }
    uint32_t elementTypeId = 0;
    if (!readRaw(elementTypeId, field + " (array element type)"))
      return false;
    if (!isKnownType(elementTypeId)) {
      std::ostringstream os;
      os << field << " at offset " << at << " has unknown array element type "
         << elementTypeId << " (known types are 0..12)";
      return fail(os.str());
    }
    uint64_t count = 0;
    uint64_t countAt = pos_;
    if (!readRaw(count, field + " (array length)"))
      return false;
    GgufType elementType = static_cast<GgufType>(elementTypeId);
    uint64_t remaining = file_.size_ - pos_;
    if (count > remaining / minEncodedSize(elementType)) {
      std::ostringstream os;
      os << field << " at offset " << countAt << " claims " << count << " "
         << ggufTypeName(elementType) << " elements but only " << remaining
         << " bytes remain in the file";
      return fail(os.str());
    }
    value.elementType_ = elementType;
    value.elements_.resize(count);
    for (uint64_t i = 0; i < count; ++i)
      if (!readValue(elementType, value.elements_[i],
                     field + "[" + std::to_string(i) + "]", depth + 1))
        return false;
    return true;
  }

  bool parseAll() {
    uint32_t magic = 0;
    if (!readRaw(magic, "magic"))
      return false;
    if (magic != kMagic)
      return fail("not a GGUF file: the first 4 bytes are not \"GGUF\"");
    uint64_t versionAt = pos_;
    if (!readRaw(file_.version_, "version"))
      return false;
    if (file_.version_ != 2 && file_.version_ != 3) {
      std::ostringstream os;
      os << "GGUF version " << file_.version_ << " at offset " << versionAt
         << " is not supported (hetc reads versions 2 and 3; re-convert the "
            "model with a current llama.cpp)";
      return fail(os.str());
    }
    uint64_t tensorCount = 0, kvCount = 0;
    uint64_t tensorCountAt = pos_;
    if (!readRaw(tensorCount, "tensor_count"))
      return false;
    uint64_t kvCountAt = pos_;
    if (!readRaw(kvCount, "metadata_kv_count"))
      return false;
    // A key-value pair is at least a key length, a type and a one-byte value;
    // a tensor info at least a name length, n_dims, type and offset.
    uint64_t remaining = file_.size_ - pos_;
    if (kvCount > remaining / 13) {
      std::ostringstream os;
      os << "metadata_kv_count (" << kvCount << ") at offset " << kvCountAt
         << " exceeds what the remaining " << remaining
         << " bytes of the file can hold";
      return fail(os.str());
    }
    if (tensorCount > remaining / 24) {
      std::ostringstream os;
      os << "tensor_count (" << tensorCount << ") at offset " << tensorCountAt
         << " exceeds what the remaining " << remaining
         << " bytes of the file can hold";
      return fail(os.str());
    }

    for (uint64_t i = 0; i < kvCount; ++i) {
      std::string key;
      uint64_t keyAt = pos_;
      if (!readString(key, "metadata key #" + std::to_string(i)))
        return false;
      uint32_t typeId = 0;
      uint64_t typeAt = pos_;
      if (!readRaw(typeId, "type of metadata \"" + printable(key) + "\""))
        return false;
      if (!isKnownType(typeId)) {
        std::ostringstream os;
        os << "metadata \"" << printable(key) << "\" at offset " << typeAt
           << " has unknown value type " << typeId << " (known types are 0..12)";
        return fail(os.str());
      }
      GgufValue value;
      if (!readValue(static_cast<GgufType>(typeId), value,
                     "metadata \"" + printable(key) + "\"", 0))
        return false;
      if (!file_.metadata_.emplace(key, std::move(value)).second) {
        std::ostringstream os;
        os << "metadata key \"" << printable(key) << "\" at offset " << keyAt
           << " appears twice";
        return fail(os.str());
      }
    }

    if (const GgufValue *alignment = file_.find("general.alignment")) {
      std::optional<int64_t> value = alignment->asInt();
      if (alignment->type() != GgufType::U32 || !value || *value == 0 ||
          (*value & (*value - 1)) != 0) {
        std::ostringstream os;
        os << "metadata \"general.alignment\" must be a uint32 power of two, got "
           << ggufTypeName(alignment->type()) << " "
           << (value ? std::to_string(*value) : std::string("?"));
        return fail(os.str());
      }
      file_.alignment_ = static_cast<uint64_t>(*value);
    }

    file_.tensors_.reserve(tensorCount);
    for (uint64_t i = 0; i < tensorCount; ++i)
      if (!readTensorInfo(i))
        return false;

    uint64_t dataOffset =
        (pos_ + file_.alignment_ - 1) / file_.alignment_ * file_.alignment_;
    if (tensorCount > 0 && dataOffset > file_.size_) {
      std::ostringstream os;
      os << "truncated: the data section should start at offset " << dataOffset
         << " but the file ends at " << file_.size_;
      return fail(os.str());
    }
    file_.dataOffset_ = dataOffset;
    return checkTensorData();
  }

  bool readTensorInfo(uint64_t index) {
    GgufTensorInfo info;
    std::string field = "tensor #" + std::to_string(index);
    if (!readString(info.name, field + " name"))
      return false;
    field = "tensor \"" + printable(info.name) + "\"";
    uint32_t nDims = 0;
    uint64_t dimsAt = pos_;
    if (!readRaw(nDims, field + " n_dims"))
      return false;
    if (nDims == 0 || nDims > kMaxDims) {
      std::ostringstream os;
      os << field << " at offset " << dimsAt << " has " << nDims
         << " dimensions (must be 1.." << kMaxDims << ")";
      return fail(os.str());
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      uint64_t dim = 0;
      uint64_t dimAt = pos_;
      if (!readRaw(dim, field + " dims[" + std::to_string(d) + "]"))
        return false;
      // Every dimension fits in the file's bytes many times over; anything
      // larger is corrupt and would overflow the element count.
      if (dim == 0 || dim > (uint64_t{1} << 40) ||
          elements > (uint64_t{1} << 50) / dim) {
        std::ostringstream os;
        os << field << " dims[" << d << "] at offset " << dimAt << " is " << dim
           << ", which no model tensor can have";
        return fail(os.str());
      }
      elements *= dim;
      info.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t typeId = 0;
    uint64_t typeAt = pos_;
    if (!readRaw(typeId, field + " type"))
      return false;
    std::optional<BlockFormat> format = blockFormatFromTypeId(typeId);
    if (!format) {
      std::ostringstream os;
      os << field << " at offset " << typeAt << " has ggml type " << typeId
         << ", which hetc does not support (supported: f32, f16, bf16, q8_0, "
            "q4_0, q2_k, q3_k, q4_k, q5_k, q6_k)";
      return fail(os.str());
    }
    info.format = *format;
    std::optional<int64_t> bytes =
        storageBytes(*format, info.dims.empty() ? 0 : info.dims[0]);
    if (!bytes) {
      std::ostringstream os;
      os << field << " has a row of " << info.dims[0] << " elements, not a "
         << "multiple of the " << blockLayout(*format).name << " block size ("
         << blockLayout(*format).blockSize << ")";
      return fail(os.str());
    }
    info.sizeBytes =
        static_cast<uint64_t>(*bytes) * (elements / static_cast<uint64_t>(info.dims[0]));
    uint64_t offsetAt = pos_;
    if (!readRaw(info.offset, field + " offset"))
      return false;
    if (info.offset % file_.alignment_ != 0) {
      std::ostringstream os;
      os << field << " offset " << info.offset << " (at file offset "
         << offsetAt << ") is not a multiple of the alignment "
         << file_.alignment_;
      return fail(os.str());
    }
    if (!file_.tensorIndex_.emplace(info.name, file_.tensors_.size()).second)
      return fail("tensor name \"" + printable(info.name) + "\" appears twice");
    file_.tensors_.push_back(std::move(info));
    return true;
  }

  bool checkTensorData() {
    uint64_t dataBytes = file_.size_ - file_.dataOffset_;
    std::vector<const GgufTensorInfo *> byOffset;
    for (const GgufTensorInfo &tensor : file_.tensors_) {
      if (tensor.offset > dataBytes || tensor.sizeBytes > dataBytes - tensor.offset) {
        std::ostringstream os;
        os << "truncated: tensor \"" << tensor.name << "\" occupies bytes "
           << file_.dataOffset_ + tensor.offset << ".."
           << file_.dataOffset_ + tensor.offset + tensor.sizeBytes
           << " but the file ends at " << file_.size_
           << " (re-download or re-convert the model)";
        return fail(os.str());
      }
      byOffset.push_back(&tensor);
    }
    std::sort(byOffset.begin(), byOffset.end(),
              [](const GgufTensorInfo *a, const GgufTensorInfo *b) {
                return a->offset < b->offset;
              });
    for (size_t i = 1; i < byOffset.size(); ++i) {
      const GgufTensorInfo &prev = *byOffset[i - 1];
      if (prev.offset + prev.sizeBytes > byOffset[i]->offset)
        return fail("tensor \"" + byOffset[i]->name + "\" at data offset " +
                    std::to_string(byOffset[i]->offset) + " overlaps tensor \"" +
                    prev.name + "\" (" + std::to_string(prev.offset) + ".." +
                    std::to_string(prev.offset + prev.sizeBytes) + ")");
    }
    return true;
  }

  GgufFile &file_;
  uint64_t pos_ = 0;
  std::string message_;
};

GgufFile::~GgufFile() {
  if (mapped_) {
    unregisterMappedFile(base_);
    munmap(const_cast<uint8_t *>(base_), size_);
  }
  if (fd_ >= 0)
    ::close(fd_);
}

uint8_t *GgufFile::mapPrivateCopy(uint64_t extraBytes,
                                  std::string &error) const {
  // Anonymous memory on a 2 MiB boundary, in huge pages where the kernel
  // gives them: every decode step streams these weights, and with 4 KiB
  // pages each page costs a TLB walk and a restart of the prefetchers'
  // streams (llama-110M, one thread, four alternating rounds: Q8_0 decode
  // 188 -> 203 tokens/s, Q4_K_M 278 -> 294, Q4_0 379 -> 388).
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  size_t total = size_ + extraBytes;
  size_t reserved = total + kHugePage;
  void *area = mmap(nullptr, reserved, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (area == MAP_FAILED) {
    error = path_ + ": cannot allocate a private copy of the weights (" +
            std::to_string(total) + " bytes): " + std::strerror(errno) +
            "; free memory";
    return nullptr;
  }
  auto begin = reinterpret_cast<uintptr_t>(area);
  uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t end = (aligned + total + page - 1) & ~(page - 1);
  // The unaligned head and the tail past the copy go back at once.
  if (aligned > begin)
    munmap(area, aligned - begin);
  if (begin + reserved > end)
    munmap(reinterpret_cast<void *>(end), begin + reserved - end);
  auto *copy = reinterpret_cast<uint8_t *>(aligned);
  // Advice only: without transparent huge pages the copy keeps small ones.
  madvise(copy, total, MADV_HUGEPAGE);
  std::memcpy(copy, base_, size_);
  return copy;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string &path,
                                         std::string &error) {
  uint64_t size = 0;
  int fd = openRegularFile(path, "a GGUF model", size, error);
  if (fd < 0)
    return nullptr;
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = path;
  file->size_ = size;
  if (file->size_ == 0) {
    ::close(fd);
    error = path + ": the file is empty, not a GGUF model; download or "
                   "convert the model again";
    return nullptr;
  }
  // Weights are never read whole: the kernel pages them in as they are used.
  void *base = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  // Kept open for private copies of the mapping (mapPrivateCopy).
  file->fd_ = fd;
  if (base == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return nullptr;
  }
  file->base_ = static_cast<const uint8_t *>(base);
  file->mapped_ = true;
  registerMappedFile(base, file->size_, path);
  GgufParser parser(*file);
  if (!parser.parse(error))
    return nullptr;
  return file;
}

std::unique_ptr<GgufFile> GgufFile::openBuffer(std::string_view bytes,
                                               const std::string &name,
                                               std::string &error) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->path_ = name;
  file->ownedBytes_.assign(bytes.begin(), bytes.end());
  file->base_ = file->ownedBytes_.data();
  file->size_ = file->ownedBytes_.size();
  GgufParser parser(*file);
  if (!parser.parse(error))
    return nullptr;
  return file;
}

const GgufValue *GgufFile::find(std::string_view key) const {
  auto it = metadata_.find(std::string(key));
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo *GgufFile::findTensor(std::string_view name) const {
  auto it = tensorIndex_.find(name);
  return it == tensorIndex_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t *GgufFile::tensorData(const GgufTensorInfo &tensor) const {
  return base_ + dataOffset_ + tensor.offset;
}

} // namespace hetrt::format
