// Finding or building the pack for a model argument: a .hetpack is used as is;
// a GGUF is compiled for this host once and cached by its content hash.
#ifndef HETC_TOOLS_HETC_PACKCACHE_H
#define HETC_TOOLS_HETC_PACKCACHE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hetc::cli {

/// True when `path` ends in ".hetpack" or starts with the pack magic.
bool isPack(const std::string &path);

/// The directory of cached packs: $HETC_CACHE_DIR, else $XDG_CACHE_HOME/hetc,
/// else ~/.cache/hetc.
std::string cacheDirectory();

/// The part of a cache entry's name that identifies this build of hetc;
/// entries of other builds are stale (their code may follow another ABI).
std::string cacheStamp();

/// What a pack compiled for a GGUF must hold beyond the CPU code.
struct PackNeeds {
  /// The model's SPIR-V programs for Vulkan devices.
  bool spirv = false;
  /// The plan on a system (a system JSON or a catalog name), with caps on
  /// what it may use of devices' memories ("vulkan0=64MiB").
  std::string system;
  std::vector<std::string> deviceMemory;
  std::vector<std::string> computeDevices;
  std::string objective = "latency";
  /// Blocks in the CPU code's KV pool (0: one sequence of the whole
  /// context), for sessions that run many sequences at once.
  int64_t kvPoolBlocks = 0;
  /// Runs only when the model must be compiled, just before: a check that
  /// would otherwise fail after minutes of compiling; false (with `error`)
  /// stops there.
  std::function<bool(std::string &)> beforeCompiling;
};

/// The pack to load for `model` (see above); empty with `error` set on
/// failure. `contextLength` 0 keeps the model's. Progress goes to stderr,
/// prefixed by `tool`. Each set of `needs` is a cache entry of its own.
std::string packFor(const std::string &model, int64_t contextLength,
                    const std::string &tool, std::string &error,
                    const PackNeeds &needs = {});

} // namespace hetc::cli

#endif // HETC_TOOLS_HETC_PACKCACHE_H
