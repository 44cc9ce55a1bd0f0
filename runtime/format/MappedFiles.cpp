#include "runtime/format/MappedFiles.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <signal.h>
#include <unistd.h>

namespace hetrt::format {
namespace {

// The handler reads these without locks: a slot's path is written before its
// base is published, and a slot is cleared by resetting its base first.
struct MappedFileSlot {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> size{0};
  char path[512] = {};
};

MappedFileSlot slots[kMaxMappedFiles];
std::mutex slotsMutex;
const char *toolName = "hetrt";

void writeText(const char *text) {
  size_t length = std::strlen(text);
  while (length > 0) {
    ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0)
      return;
    text += written;
    length -= static_cast<size_t>(written);
  }
}

void onBusError(int signal, siginfo_t *info, void *) {
  uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (MappedFileSlot &slot : slots) {
    uintptr_t base = slot.base.load(std::memory_order_acquire);
    if (base == 0 || address < base ||
        address - base >= slot.size.load(std::memory_order_relaxed))
      continue;
    writeText(toolName);
    writeText(": ");
    writeText(slot.path);
    writeText(" changed while it was in use: it was truncated or rewritten "
              "in place, and the data it held is gone; keep a file unchanged "
              "while hetc reads it (write a new version beside it and rename "
              "it into place), then run again\n");
    ::_exit(1);
  }
  // Not one of ours: the default action, when the fault repeats on return.
  ::signal(signal, SIG_DFL);
}

} // namespace

void registerMappedFile(const void *base, size_t size,
                        const std::string &path) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  for (MappedFileSlot &slot : slots) {
    if (slot.base.load(std::memory_order_relaxed) != 0)
      continue;
    size_t length = std::min(path.size(), sizeof(slot.path) - 1);
    std::memcpy(slot.path, path.data(), length);
    slot.path[length] = '\0';
    slot.size.store(size, std::memory_order_relaxed);
    slot.base.store(reinterpret_cast<uintptr_t>(base),
                    std::memory_order_release);
    return;
  }
}

void unregisterMappedFile(const void *base) {
  std::lock_guard<std::mutex> lock(slotsMutex);
  for (MappedFileSlot &slot : slots)
    if (slot.base.load(std::memory_order_relaxed) ==
        reinterpret_cast<uintptr_t>(base))
      slot.base.store(0, std::memory_order_release);
}

void installMappedFileFaultHandler(const char *tool) {
  toolName = tool;
  struct sigaction action = {};
  action.sa_sigaction = onBusError;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGBUS, &action, nullptr);
  ::signal(SIGXFSZ, SIG_IGN);
}

} // namespace hetrt::format
