// Memory limits from /proc/meminfo and cgroup v2, and checked size arithmetic.
#include "runtime/core/Limits.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>

namespace hetrt::core {

namespace {

std::optional<uint64_t> readCgroupValue(const char *file) {
  std::ifstream in(std::string("/sys/fs/cgroup/") + file);
  std::string text;
  if (!(in >> text) || text == "max")
    return std::nullopt;
  try {
    return std::stoull(text);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<uint64_t> memAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:")
      return kib * 1024;
  return std::nullopt;
}

} // namespace

uint64_t availableMemoryBytes() {
  uint64_t available = 0;
  if (std::optional<uint64_t> fromKernel = memAvailable()) {
    available = *fromKernel;
  } else {
    long pages = sysconf(_SC_AVPHYS_PAGES);
    long pageSize = sysconf(_SC_PAGE_SIZE);
    available = pages > 0 && pageSize > 0
                    ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize)
                    : UINT64_MAX;
  }
  std::optional<uint64_t> limit = readCgroupValue("memory.max");
  if (limit) {
    uint64_t used = readCgroupValue("memory.current").value_or(0);
    available = std::min(available, *limit > used ? *limit - used : 0);
  }
  // `ulimit -v` bounds the address space, mapped files included.
  struct rlimit addressSpace;
  if (getrlimit(RLIMIT_AS, &addressSpace) == 0 &&
      addressSpace.rlim_cur != RLIM_INFINITY) {
    uint64_t mapped = 0;
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    if (statm >> pages)
      mapped = pages * static_cast<uint64_t>(sysconf(_SC_PAGE_SIZE));
    uint64_t cap = addressSpace.rlim_cur;
    available = std::min(available, cap > mapped ? cap - mapped : 0);
  }
  return available;
}

std::string formatBytes(uint64_t bytes) {
  char text[64];
  constexpr double kib = 1024.0, mib = kib * 1024, gib = mib * 1024,
                   tib = gib * 1024;
  double value = static_cast<double>(bytes);
  if (value >= tib)
    std::snprintf(text, sizeof(text), "%.2f TiB", value / tib);
  else if (value >= gib)
    std::snprintf(text, sizeof(text), "%.2f GiB", value / gib);
  else if (value >= mib)
    std::snprintf(text, sizeof(text), "%.1f MiB", value / mib);
  else if (value >= kib)
    std::snprintf(text, sizeof(text), "%.1f KiB", value / kib);
  else
    std::snprintf(text, sizeof(text), "%llu bytes",
                  static_cast<unsigned long long>(bytes));
  return text;
}

std::optional<uint64_t> checkedProduct(std::initializer_list<int64_t> factors) {
  uint64_t product = 1;
  for (int64_t factor : factors) {
    if (factor < 0 ||
        __builtin_mul_overflow(product, static_cast<uint64_t>(factor), &product) ||
        product > static_cast<uint64_t>(INT64_MAX))
      return std::nullopt;
  }
  return product;
}

bool checkThreadCount(int64_t threads, const std::string &flag,
                      std::string &error) {
  if (threads >= 0 && threads <= kMaxThreads)
    return true;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  error = flag + " " + std::to_string(threads) + " is outside [0, " +
          std::to_string(kMaxThreads) + "]: hetc starts at most " +
          std::to_string(kMaxThreads) + " threads and this machine has " +
          std::to_string(cores) + " cores; give 0 for one thread per core";
  return false;
}

std::optional<uint64_t> kvCacheBytes(int64_t layers, int64_t context,
                                     int64_t kvHeads, int64_t headDim,
                                     int64_t elementBytes) {
  return checkedProduct({layers, 2, context, kvHeads, headDim, elementBytes});
}

bool checkKvCacheFits(int64_t layers, int64_t context, int64_t kvHeads,
                      int64_t headDim, int64_t elementBytes,
                      const std::string &origin, const std::string &fix,
                      std::string &error) {
  std::optional<uint64_t> bytes =
      kvCacheBytes(layers, context, kvHeads, headDim, elementBytes);
  uint64_t available = availableMemoryBytes();
  if (bytes && *bytes <= available)
    return true;
  std::ostringstream message;
  message << origin << ": a KV cache for a context of " << context
          << " positions needs "
          << (bytes ? formatBytes(*bytes) : std::string("more than 8 EiB"))
          << " (" << layers << " layers x 2 x " << context << " x " << kvHeads
          << " KV heads x " << headDim << " x " << elementBytes
          << " bytes) but this machine has " << formatBytes(available)
          << " of memory available; " << fix;
  error = message.str();
  return false;
}

} // namespace hetrt::core
