#include "runtime/core/KvSwap.h"

#include "runtime/format/Quantize.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace hetrt::core {

KvSwapSpace::KvSwapSpace(size_t blockBytes, int64_t hostBlocks,
                         int64_t diskBlocks, std::string directory,
                         KvTierFormat format, KvBlockRows rows,
                         std::optional<HostNode> hostNode)
    : blockBytes_(blockBytes), format_(format), rows_(rows),
      storedBytes_(blockBytes), hostBlocks_(hostBlocks),
      diskBlocks_(diskBlocks), directory_(std::move(directory)),
      hostNode_(std::move(hostNode)) {
  if (format_ == KvTierFormat::Int8) {
    size_t rowCount = blockBytes_ / (rows_.rowElements * rows_.elementBytes);
    storedBytes_ = rowCount * (sizeof(float) + rows_.rowElements);
    staged_.resize(storedBytes_);
  }
  // Memory bound to a node that runs out is not taken from elsewhere: the
  // kernel ends the process instead, so the tier leaves the node room.
  if (hostNode_ && storedBytes_ > 0)
    hostBlocks_ = std::min<int64_t>(
        hostBlocks_,
        static_cast<int64_t>(hostNode_->capacityBytes / 2 /
                             (storedBytes_ * kSlabSlots)) *
            kSlabSlots);
}

std::byte *KvSwapSpace::hostSlot(int64_t index) const {
  return host_[static_cast<size_t>(index / kSlabSlots)].data() +
         static_cast<size_t>(index % kSlabSlots) * storedBytes_;
}

namespace {
float elementAt(const std::byte *row, size_t i, const KvBlockRows &rows) {
  if (rows.elementBytes == 4) {
    float value;
    std::memcpy(&value, row + i * 4, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, row + i * 2, 2);
  return rows.bfloat ? format::bf16ToFp32(bits) : format::fp16ToFp32(bits);
}

void storeElement(std::byte *row, size_t i, const KvBlockRows &rows,
                  float value) {
  if (rows.elementBytes == 4) {
    std::memcpy(row + i * 4, &value, 4);
    return;
  }
  uint16_t bits =
      rows.bfloat ? format::fp32ToBf16(value) : format::fp32ToFp16(value);
  std::memcpy(row + i * 2, &bits, 2);
}
} // namespace

const std::byte *KvSwapSpace::encode(const std::byte *block) {
  if (format_ == KvTierFormat::Exact)
    return block;
  size_t rowBytes = rows_.rowElements * rows_.elementBytes;
  size_t rowCount = blockBytes_ / rowBytes;
  std::byte *out = staged_.data();
  for (size_t r = 0; r < rowCount; ++r) {
    const std::byte *row = block + r * rowBytes;
    float largest = 0;
    for (size_t i = 0; i < rows_.rowElements; ++i)
      largest = std::max(largest,
                         std::fabs(elementAt(row, i, rows_)));
    // Symmetric: the largest magnitude maps to 127.
    float scale = largest > 0 ? largest / 127.0f : 1.0f;
    std::memcpy(out, &scale, sizeof(float));
    out += sizeof(float);
    for (size_t i = 0; i < rows_.rowElements; ++i) {
      float q = std::nearbyint(elementAt(row, i, rows_) / scale);
      out[i] = static_cast<std::byte>(
          static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
    }
    out += rows_.rowElements;
  }
  return staged_.data();
}

void KvSwapSpace::decode(const std::byte *stored, std::byte *block) const {
  if (format_ == KvTierFormat::Exact) {
    std::memcpy(block, stored, blockBytes_);
    return;
  }
  size_t rowBytes = rows_.rowElements * rows_.elementBytes;
  size_t rowCount = blockBytes_ / rowBytes;
  for (size_t r = 0; r < rowCount; ++r) {
    float scale;
    std::memcpy(&scale, stored, sizeof(float));
    stored += sizeof(float);
    std::byte *row = block + r * rowBytes;
    for (size_t i = 0; i < rows_.rowElements; ++i)
      storeElement(row, i, rows_,
                   static_cast<float>(static_cast<int8_t>(stored[i])) * scale);
    stored += rows_.rowElements;
  }
}

KvSwapSpace::~KvSwapSpace() {
  if (fd_ >= 0)
    ::close(fd_);
}

int64_t KvSwapSpace::room() const {
  return (hostBlocks_ - hostUsed_) + (diskBlocks_ - diskUsed_);
}

bool KvSwapSpace::openFile(std::string &error) {
  if (fd_ >= 0)
    return true;
  // An anonymous file: unlinked at once, so a crash leaves nothing behind.
  std::string pattern = directory_ + "/hetc-kv-XXXXXX";
  fd_ = ::mkstemp(pattern.data());
  if (fd_ < 0) {
    failure_ = Failure::Io;
    error = "cannot create the KV cache's disk tier in " + directory_ + ": " +
            std::strerror(errno) +
            "; give another directory (TMPDIR) or a larger host budget";
    return false;
  }
  ::unlink(pattern.c_str());
  return true;
}

std::optional<KvSwapSpace::Handle>
KvSwapSpace::store(const std::byte *original, std::string &error) {
  const std::byte *block = encode(original);
  if (hostUsed_ < hostBlocks_) {
    int64_t index;
    if (!freeHost_.empty()) {
      index = freeHost_.back();
      freeHost_.pop_back();
    } else {
      if (hostSlots_ % kSlabSlots == 0) {
        HostSlab slab;
        size_t bytes = static_cast<size_t>(kSlabSlots) * storedBytes_;
        if (hostNode_) {
          slab.bound = NodeMemory::allocate(hostNode_->index, bytes, error);
          if (!slab.bound) {
            failure_ = Failure::OutOfMemory;
            error = "the KV cache's host tier: " + error;
            return std::nullopt;
          }
        } else {
          slab.plain.reset(new std::byte[bytes]);
        }
        host_.push_back(std::move(slab));
      }
      index = hostSlots_++;
    }
    std::memcpy(hostSlot(index), block, storedBytes_);
    ++hostUsed_;
    ++stats_.toHost;
    stats_.hostBytes += static_cast<int64_t>(storedBytes_);
    return Handle{false, index};
  }
  if (diskUsed_ >= diskBlocks_) {
    failure_ = Failure::OutOfMemory;
    error = "the KV cache's tiers are full: host memory holds " +
            std::to_string(hostBlocks_) + " blocks and disk " +
            std::to_string(diskBlocks_) +
            "; remove sequences or give the tiers larger budgets";
    return std::nullopt;
  }
  if (!openFile(error))
    return std::nullopt;
  int64_t index;
  if (!freeDisk_.empty()) {
    index = freeDisk_.back();
    freeDisk_.pop_back();
  } else {
    index = diskSlots_++;
  }
  off_t offset = static_cast<off_t>(index) * static_cast<off_t>(storedBytes_);
  size_t written = 0;
  while (written < storedBytes_) {
    ssize_t n = ::pwrite(fd_, block + written, storedBytes_ - written,
                         offset + static_cast<off_t>(written));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failure_ = Failure::Io;
      error = "cannot write a KV block to the disk tier in " + directory_ +
              ": " + std::strerror(n < 0 ? errno : ENOSPC) +
              "; free disk space or give the disk tier a smaller budget";
      freeDisk_.push_back(index);
      return std::nullopt;
    }
    written += static_cast<size_t>(n);
  }
  ++diskUsed_;
  ++stats_.toDisk;
  stats_.diskBytes += static_cast<int64_t>(storedBytes_);
  return Handle{true, index};
}

bool KvSwapSpace::load(Handle handle, std::byte *block, std::string &error) {
  if (!handle.onDisk) {
    decode(hostSlot(handle.index), block);
    ++stats_.fromHost;
    discard(handle);
    return true;
  }
  off_t offset =
      static_cast<off_t>(handle.index) * static_cast<off_t>(storedBytes_);
  // An exact block is read in place; a compressed one through staging.
  std::byte *into = format_ == KvTierFormat::Exact ? block : staged_.data();
  size_t read = 0;
  while (read < storedBytes_) {
    ssize_t n = ::pread(fd_, into + read, storedBytes_ - read,
                        offset + static_cast<off_t>(read));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      failure_ = Failure::Io;
      error = "cannot read a KV block back from the disk tier in " +
              directory_ + ": " +
              (n < 0 ? std::string(std::strerror(errno))
                     : std::string("the file is shorter than written"));
      return false;
    }
    read += static_cast<size_t>(n);
  }
  if (format_ != KvTierFormat::Exact)
    decode(staged_.data(), block);
  ++stats_.fromDisk;
  discard(handle);
  return true;
}

void KvSwapSpace::discard(Handle handle) {
  if (handle.onDisk) {
    freeDisk_.push_back(handle.index);
    --diskUsed_;
    stats_.diskBytes -= static_cast<int64_t>(storedBytes_);
  } else {
    freeHost_.push_back(handle.index);
    --hostUsed_;
    stats_.hostBytes -= static_cast<int64_t>(storedBytes_);
  }
}

} // namespace hetrt::core
