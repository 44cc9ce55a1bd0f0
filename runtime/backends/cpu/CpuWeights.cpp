#include "runtime/backends/cpu/CpuWeights.h"

#include "runtime/core/Limits.h"
#include "runtime/format/MappedFiles.h"
#include "runtime/format/WeightInterleave.h"

#include <cstring>
#include <map>
#include <sys/mman.h>

namespace hetrt::cpu {

namespace {

/// Row count and bytes per row of a 2-D tensor of a block format, or false.
bool rowShape(const format::GgufTensorInfo &tensor, int64_t &rows,
              int64_t &rowBytes) {
  if (tensor.dims.size() != 2 || tensor.dims[1] <= 0)
    return false;
  rows = tensor.dims[1];
  rowBytes = static_cast<int64_t>(tensor.sizeBytes) / tensor.dims[1];
  return true;
}

} // namespace

std::unique_ptr<CpuWeights> CpuWeights::prepare(
    const format::GgufFile &file, const std::vector<int64_t> &layouts,
    const std::string &origin, std::string &error) {
  return prepare(file, layouts, origin, error, core::availableMemoryBytes());
}

std::unique_ptr<CpuWeights> CpuWeights::prepare(
    const format::GgufFile &file, const std::vector<int64_t> &layouts,
    const std::string &origin, std::string &error, uint64_t availableBytes) {
  using namespace format;
  std::unique_ptr<CpuWeights> weights(new CpuWeights());
  weights->data_ = file.dataSection();
  weights->size_ = file.dataSectionSize();
  if (layouts.empty()) {
    // Weights in the file's layout stream every decode step too, and read
    // faster from huge pages (llama-110M, one thread, four alternating
    // rounds: F32 decode 37 -> 41 tokens/s, F16 101 -> 121); a copy that
    // would crowd the machine's memory is not worth it, nor a failure.
    if (availableBytes / 2 < file.fileSize())
      return weights;
    std::string ignored;
    if (!weights->copyFile(file, 0, ignored))
      return weights;
    weights->data_ = weights->copy_ + file.dataOffset();
    mprotect(weights->copy_, weights->copySize_, PROT_READ);
    return weights;
  }
  std::map<uint64_t, const GgufTensorInfo *> byOffset;
  for (const GgufTensorInfo &tensor : file.tensors())
    byOffset[tensor.offset] = &tensor;
  // Every entry is checked against the file before anything is rewritten.
  struct Rewrite {
    uint64_t offset;
    int64_t rows, rowBytes;
    WeightLayoutKind kind;
    BlockFormat format;
    /// Where the rewritten bytes go: the tensor itself, or its copy.
    uint64_t destination;
  };
  std::vector<Rewrite> rewrites;
  // Copies follow the data section in table order (abi/WeightLayout.h).
  uint64_t copiesStart =
      (file.dataSectionSize() + kWeightCopyAlignment - 1) /
      kWeightCopyAlignment * kWeightCopyAlignment;
  uint64_t copiesBytes = 0;
  int64_t previousOffset = -1;
  for (size_t e = 0; e < layouts.size() / kWeightLayoutFields; ++e) {
    const int64_t *entry = &layouts[e * kWeightLayoutFields];
    std::string where = origin + " reads the weight at data offset " +
                        std::to_string(entry[WeightLayoutDataOffset]) +
                        " in layout " +
                        std::to_string(entry[WeightLayoutId]) + ", but ";
    auto found = byOffset.find(static_cast<uint64_t>(entry[WeightLayoutDataOffset]));
    if (entry[WeightLayoutDataOffset] < 0 || found == byOffset.end()) {
      error = where + file.path() +
              " has no tensor there; the code belongs to another model file "
              "(compile the model again with `hetc compile`)";
      return nullptr;
    }
    const GgufTensorInfo &tensor = *found->second;
    int64_t rows = 0, rowBytes = 0;
    std::string why;
    if (!rowShape(tensor, rows, rowBytes) ||
        static_cast<int64_t>(tensor.format) != entry[WeightLayoutFormat] ||
        rows != entry[WeightLayoutRows] ||
        rowBytes != entry[WeightLayoutRowBytes]) {
      error = where + "tensor \"" + tensor.name + "\" of " + file.path() +
              " has another format or shape than the code was compiled for "
              "(compile the model again with `hetc compile`)";
      return nullptr;
    }
    auto kind = static_cast<WeightLayoutKind>(entry[WeightLayoutId]);
    if (!checkInterleavable(kind, tensor.format, rows,
                            rowBytes, why)) {
      error = where + why + " (compile the model again with this hetc)";
      return nullptr;
    }
    // The copies' places follow from the order of the table.
    if (entry[WeightLayoutDataOffset] <= previousOffset) {
      error = where + "the table does not list its weights in increasing "
                      "data offset (compile the model again with this hetc)";
      return nullptr;
    }
    previousOffset = entry[WeightLayoutDataOffset];
    uint64_t destination = tensor.offset;
    if (kind == WeightLayoutKind::InterleavedRows16Copy) {
      destination = copiesStart + copiesBytes;
      copiesBytes += static_cast<uint64_t>(weightCopyBytes(rows, rowBytes));
    }
    rewrites.push_back(
        {tensor.offset, rows, rowBytes, kind, tensor.format, destination});
  }
  uint64_t size = copiesBytes ? copiesStart + copiesBytes : file.dataSectionSize();
  uint64_t end = file.dataOffset() + size;
  if (!weights->copyFile(file, end > file.fileSize() ? end - file.fileSize() : 0,
                         error))
    return nullptr;
  uint8_t *data = weights->copy_ + file.dataOffset();
  for (const Rewrite &rewrite : rewrites) {
    uint8_t *target = data + rewrite.destination;
    if (rewrite.destination != rewrite.offset)
      std::memcpy(target, data + rewrite.offset,
                  static_cast<size_t>(rewrite.rows * rewrite.rowBytes));
    interleaveRows(rewrite.kind, rewrite.format, target, rewrite.rows,
                   rewrite.rowBytes);
    ++weights->rewrittenTensors_;
    weights->rewrittenBytes_ +=
        static_cast<uint64_t>(rewrite.rows * rewrite.rowBytes);
  }
  // Read-only from here on, as the file's own mapping is.
  mprotect(weights->copy_, weights->copySize_, PROT_READ);
  weights->data_ = data;
  weights->size_ = size;
  return weights;
}

bool CpuWeights::copyFile(const format::GgufFile &file, uint64_t extraBytes,
                          std::string &error) {
  copy_ = file.mapPrivateCopy(extraBytes, error);
  if (!copy_)
    return false;
  copySize_ = file.fileSize() + extraBytes;
  // Faults in the copy are reported against the model file.
  format::registerMappedFile(copy_, copySize_, file.path());
  return true;
}

CpuWeights::~CpuWeights() {
  if (copy_) {
    format::unregisterMappedFile(copy_);
    munmap(copy_, copySize_);
  }
}

} // namespace hetrt::cpu
