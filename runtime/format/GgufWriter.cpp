// GGUF v3 serialization (little-endian, as every GGUF reader expects).
#include "runtime/format/GgufWriter.h"

#include "runtime/format/OutputFile.h"

#include <algorithm>
#include <cstring>

namespace hetrt::format {

namespace {
template <typename T> void append(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void appendString(std::string &out, std::string_view value) {
  append<uint64_t>(out, value.size());
  out.append(value.data(), value.size());
}
} // namespace

void GgufWriter::beginKey(std::string_view key, GgufType type) {
  ++metadataCount_;
  appendString(metadata_, key);
  append<uint32_t>(metadata_, static_cast<uint32_t>(type));
}

void GgufWriter::addString(std::string_view key, std::string_view value) {
  beginKey(key, GgufType::String);
  appendString(metadata_, value);
}

void GgufWriter::addU32(std::string_view key, uint32_t value) {
  beginKey(key, GgufType::U32);
  append(metadata_, value);
}

void GgufWriter::addI32(std::string_view key, int32_t value) {
  beginKey(key, GgufType::I32);
  append(metadata_, value);
}

void GgufWriter::addU64(std::string_view key, uint64_t value) {
  beginKey(key, GgufType::U64);
  append(metadata_, value);
}

void GgufWriter::addF32(std::string_view key, float value) {
  beginKey(key, GgufType::F32);
  append(metadata_, value);
}

void GgufWriter::addBool(std::string_view key, bool value) {
  beginKey(key, GgufType::Bool);
  append<uint8_t>(metadata_, value ? 1 : 0);
}

void GgufWriter::addStringArray(std::string_view key,
                                const std::vector<std::string> &values) {
  beginKey(key, GgufType::Array);
  append<uint32_t>(metadata_, static_cast<uint32_t>(GgufType::String));
  append<uint64_t>(metadata_, values.size());
  for (const std::string &value : values)
    appendString(metadata_, value);
}

void GgufWriter::addF32Array(std::string_view key,
                             const std::vector<float> &values) {
  beginKey(key, GgufType::Array);
  append<uint32_t>(metadata_, static_cast<uint32_t>(GgufType::F32));
  append<uint64_t>(metadata_, values.size());
  for (float value : values)
    append(metadata_, value);
}

void GgufWriter::addI32Array(std::string_view key,
                             const std::vector<int32_t> &values) {
  beginKey(key, GgufType::Array);
  append<uint32_t>(metadata_, static_cast<uint32_t>(GgufType::I32));
  append<uint64_t>(metadata_, values.size());
  for (int32_t value : values)
    append(metadata_, value);
}

void GgufWriter::addTensor(std::string_view name, std::vector<int64_t> dims,
                           BlockFormat format, std::vector<uint8_t> data) {
  uint64_t size = data.size();
  tensors_.push_back(
      {std::string(name), std::move(dims), format, std::move(data), {}, size});
}

void GgufWriter::addTensor(std::string_view name, std::vector<int64_t> dims,
                           BlockFormat format, uint64_t sizeBytes,
                           TensorProducer producer) {
  tensors_.push_back({std::string(name), std::move(dims), format, {},
                      std::move(producer), sizeBytes});
}

uint64_t GgufWriter::padded(uint64_t size) const {
  return (size + alignment_ - 1) / alignment_ * alignment_;
}

std::string GgufWriter::header() const {
  std::string out;
  append<uint32_t>(out, 0x46554747);
  append<uint32_t>(out, 3);
  append<uint64_t>(out, tensors_.size());
  // general.alignment is written only when it differs from the default, as
  // llama.cpp does.
  bool writeAlignment = alignment_ != 32;
  append<uint64_t>(out, metadataCount_ + (writeAlignment ? 1 : 0));
  out += metadata_;
  if (writeAlignment) {
    appendString(out, "general.alignment");
    append<uint32_t>(out, static_cast<uint32_t>(GgufType::U32));
    append<uint32_t>(out, static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (const Tensor &tensor : tensors_) {
    appendString(out, tensor.name);
    append<uint32_t>(out, static_cast<uint32_t>(tensor.dims.size()));
    for (int64_t dim : tensor.dims)
      append<uint64_t>(out, static_cast<uint64_t>(dim));
    append<uint32_t>(out, static_cast<uint32_t>(tensor.format));
    append<uint64_t>(out, offset);
    offset += padded(tensor.size);
  }
  out.resize(padded(out.size()), '\0');
  return out;
}

uint64_t GgufWriter::fileSize() const {
  uint64_t size = header().size();
  for (const Tensor &tensor : tensors_)
    size += padded(tensor.size);
  return size;
}

bool GgufWriter::emit(const std::function<void(std::string_view)> &sink,
                      std::string &error) const {
  sink(header());
  static const char zeros[64] = {};
  for (const Tensor &tensor : tensors_) {
    uint64_t written = 0;
    if (tensor.producer) {
      if (!tensor.producer([&](std::string_view bytes) {
            written += bytes.size();
            sink(bytes);
          }, error))
        return false;
    } else {
      sink(std::string_view(reinterpret_cast<const char *>(tensor.data.data()),
                            tensor.data.size()));
      written = tensor.data.size();
    }
    if (written != tensor.size) {
      error = "tensor \"" + tensor.name + "\" produced " +
              std::to_string(written) + " bytes instead of " +
              std::to_string(tensor.size);
      return false;
    }
    for (uint64_t pad = padded(written) - written; pad > 0;) {
      uint64_t chunk = std::min<uint64_t>(pad, sizeof(zeros));
      sink(std::string_view(zeros, chunk));
      pad -= chunk;
    }
  }
  return true;
}

std::string GgufWriter::serialize() const {
  std::string out;
  std::string error;
  bool ok = emit([&](std::string_view bytes) { out.append(bytes); }, error);
  (void)ok;
  return out;
}

bool GgufWriter::writeFile(const std::string &path, std::string &error) const {
  // Streamed through a temporary file beside the target: tensors are
  // produced one at a time, never held whole, and a failed write never
  // leaves a truncated model where a good one was.
  OutputFile out;
  if (!out.open(path, error))
    return false;
  if (!emit([&](std::string_view bytes) { out.write(bytes); }, error))
    return false;
  return out.commit(error);
}

} // namespace hetrt::format
