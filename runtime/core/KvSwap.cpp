#include "runtime/core/KvSwap.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace hetrt::core {

KvSwapSpace::KvSwapSpace(size_t blockBytes, int64_t hostBlocks,
                         int64_t diskBlocks, std::string directory)
    : blockBytes_(blockBytes), hostBlocks_(hostBlocks),
      diskBlocks_(diskBlocks), directory_(std::move(directory)) {}

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
    error = "cannot create the KV cache's disk tier in " + directory_ + ": " +
            std::strerror(errno) +
            "; give another directory (TMPDIR) or a larger host budget";
    return false;
  }
  ::unlink(pattern.c_str());
  return true;
}

std::optional<KvSwapSpace::Handle>
KvSwapSpace::store(const std::byte *block, std::string &error) {
  if (hostUsed_ < hostBlocks_) {
    int64_t index;
    if (!freeHost_.empty()) {
      index = freeHost_.back();
      freeHost_.pop_back();
    } else {
      index = static_cast<int64_t>(host_.size());
      host_.emplace_back(new std::byte[blockBytes_]);
    }
    std::memcpy(host_[static_cast<size_t>(index)].get(), block, blockBytes_);
    ++hostUsed_;
    ++stats_.toHost;
    return Handle{false, index};
  }
  if (diskUsed_ >= diskBlocks_) {
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
  off_t offset = static_cast<off_t>(index) * static_cast<off_t>(blockBytes_);
  size_t written = 0;
  while (written < blockBytes_) {
    ssize_t n = ::pwrite(fd_, block + written, blockBytes_ - written,
                         offset + static_cast<off_t>(written));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
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
  return Handle{true, index};
}

bool KvSwapSpace::load(Handle handle, std::byte *block, std::string &error) {
  if (!handle.onDisk) {
    std::memcpy(block, host_[static_cast<size_t>(handle.index)].get(),
                blockBytes_);
    ++stats_.fromHost;
    discard(handle);
    return true;
  }
  off_t offset =
      static_cast<off_t>(handle.index) * static_cast<off_t>(blockBytes_);
  size_t read = 0;
  while (read < blockBytes_) {
    ssize_t n = ::pread(fd_, block + read, blockBytes_ - read,
                        offset + static_cast<off_t>(read));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot read a KV block back from the disk tier in " +
              directory_ + ": " +
              (n < 0 ? std::string(std::strerror(errno))
                     : std::string("the file is shorter than written"));
      return false;
    }
    read += static_cast<size_t>(n);
  }
  ++stats_.fromDisk;
  discard(handle);
  return true;
}

void KvSwapSpace::discard(Handle handle) {
  if (handle.onDisk) {
    freeDisk_.push_back(handle.index);
    --diskUsed_;
  } else {
    freeHost_.push_back(handle.index);
    --hostUsed_;
  }
}

} // namespace hetrt::core
