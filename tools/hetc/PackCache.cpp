// Pack lookup and the on-disk cache of compiled packs.
#include "Flags.h"
#include "PackCache.h"
#include "Version.h"

#include "hetc/InitAll.h"
#include "hetc/Pipeline/Compile.h"
#include "runtime/core/Limits.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/format/Pack.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace hetc::cli {

bool isPack(const std::string &path) {
  // By name too, so an empty or damaged pack is reported as a pack and not
  // parsed as a GGUF.
  static constexpr std::string_view kSuffix = ".hetpack";
  if (path.size() >= kSuffix.size() &&
      path.compare(path.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0)
    return true;
  std::string error;
  uint64_t size = 0;
  int fd = hetrt::format::openRegularFile(path, "a model", size, error);
  if (fd < 0)
    return false;
  char magic[8] = {};
  bool matches = ::read(fd, magic, sizeof(magic)) == sizeof(magic) &&
                 std::memcmp(magic, "HETCPACK", 8) == 0;
  ::close(fd);
  return matches;
}

std::string cacheDirectory() {
  if (const char *dir = std::getenv("HETC_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/hetc";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/hetc";
  return "/tmp/hetc-cache";
}

namespace {


bool makeDirectories(const std::string &path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST)
      return false;
  }
  return true;
}

/// Where packs are cached when cacheDirectory() cannot be written: per user,
/// so one user's packs are never loaded by another.
std::string fallbackCacheDirectory() {
  const char *tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/hetc-cache-" +
         std::to_string(static_cast<unsigned long>(getuid()));
}

/// Whether `dir` belongs to this user and no one else may write it: the
/// fallback lies in a shared temporary directory, where another user could
/// have made it first to plant packs.
bool ownedPrivately(const std::string &dir) {
  struct stat info;
  return lstat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode) &&
         info.st_uid == getuid() && (info.st_mode & 022) == 0;
}

/// Creates `dir` if needed and checks that files can be created in it.
bool writableDirectory(const std::string &dir, std::string &reason) {
  struct stat info;
  if (stat(dir.c_str(), &info) == 0 && !S_ISDIR(info.st_mode)) {
    reason = std::string("it is ") + hetrt::format::fileKindName(info.st_mode) +
             ", not a directory";
    return false;
  }
  if (!makeDirectories(dir) || access(dir.c_str(), W_OK | X_OK) != 0) {
    reason = std::strerror(errno);
    return false;
  }
  return true;
}

/// Identifies this build of the compiler, so a rebuilt hetc never reuses a
/// pack an older build generated (its code may follow another ABI).
/// Whether `path` opens as a pack whose checksums and manifest are valid.
/// Checks a cache entry as any pack is checked, and that it is the entry its
/// name promises: compiled from the model with `hash`, for `context`.
bool validatePack(const std::string &path, const std::string &hash,
                  int64_t context, const PackNeeds &needs, std::string &error) {
  std::unique_ptr<hetrt::format::PackFile> pack =
      hetrt::format::PackFile::open(path, error);
  if (!pack)
    return false;
  const std::string_view *manifest = pack->section("manifest.json");
  if (!manifest) {
    error = path + ": the pack has no manifest.json section";
    return false;
  }
  std::optional<hetrt::format::Manifest> parsed =
      hetrt::format::Manifest::fromJson(std::string(*manifest), path, error);
  if (!parsed)
    return false;
  if (parsed->weightsHash != hash || parsed->contextLength != context) {
    error = path + ": the entry was compiled from the model with hash " +
            hetrt::format::printable(parsed->weightsHash) + " for a context of " +
            std::to_string(parsed->contextLength) + ", not from this one (" +
            hash + ") for " + std::to_string(context);
    return false;
  }
  if (needs.spirv && !parsed->spirv) {
    error = path + ": the entry holds no SPIR-V programs";
    return false;
  }
  if (!needs.system.empty() && !parsed->plan) {
    error = path + ": the entry holds no plan";
    return false;
  }
  return true;
}

std::string compilerStampOfThisBuild() {
  struct stat self;
  if (stat("/proc/self/exe", &self) != 0)
    return "unknown";
  char text[40];
  std::snprintf(text, sizeof(text), "%llx%llx",
                static_cast<unsigned long long>(self.st_mtime),
                static_cast<unsigned long long>(self.st_size));
  return text;
}

} // namespace

std::string cacheStamp() {
  return std::string("-hetc") + HETC_VERSION + "-" + compilerStampOfThisBuild();
}

std::string packFor(const std::string &model, int64_t contextLength,
                    const std::string &tool, std::string &error,
                    const PackNeeds &needs) {
  if (isPack(model))
    return model;
  // The model's shapes are checked, and its KV cache against this machine's
  // memory, before anything is hashed or compiled.
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(model, error);
  if (!file)
    return {};
  std::optional<hetrt::format::ModelConfig> config =
      hetrt::format::ModelConfig::fromGguf(*file, error);
  if (!config)
    return {};
  // The tokenizer too, so a model that cannot run is refused before it is
  // compiled and cached.
  if (!hetrt::tokenizer::Tokenizer::forModel(*file, config->vocabSize, error))
    return {};
  if (contextLength > hetrt::format::kMaxContextLength) {
    error = "--context " + std::to_string(contextLength) +
            " is larger than the " +
            std::to_string(hetrt::format::kMaxContextLength) +
            " positions hetc addresses; give a smaller --context";
    return {};
  }
  if (contextLength > config->contextLength)
    hetc::cli::printMessage(
                 "%s: warning: --context %lld is longer than the %lld tokens "
                 "%s was trained for; text past that length may degrade\n",
                 tool.c_str(), static_cast<long long>(contextLength),
                 static_cast<long long>(config->contextLength), model.c_str());
  int64_t context = contextLength > 0 ? contextLength : config->contextLength;
  pipeline::CompileOptions packed;
  packed.spirv = needs.spirv;
  packed.system = needs.system;
  if (!hetrt::core::checkKvCacheFits(
          config->numLayers, context, config->numKvHeads, config->headDim,
          hetrt::format::kvElementBytesOf(pipeline::defaultKvElementType(packed)),
          model,
          "give a smaller --context (the model was trained for " +
              std::to_string(config->contextLength) + " tokens)",
          error))
    return {};
  std::optional<std::string> hash = hetrt::format::hashFile(model, error);
  if (!hash)
    return {};
  // A plan is cached by the system's content (a file may be calibrated
  // again) and the caps; entries are of this build only, so its hash of
  // them serves.
  std::string planKey;
  if (!needs.system.empty()) {
    std::string identity = needs.system, notAFile;
    if (std::optional<std::string> systemHash =
            hetrt::format::hashFile(needs.system, notAFile))
      identity = *systemHash;
    for (const std::string &cap : needs.deviceMemory)
      identity += "\n" + cap;
    for (const std::string &id : needs.computeDevices)
      identity += "\ncompute " + id;
    identity += "\nobjective " + needs.objective;
    char text[24];
    std::snprintf(text, sizeof(text), "-plan%016zx",
                  std::hash<std::string>{}(identity));
    planKey = text;
  }
  std::string name = *hash + "-ctx" + std::to_string(contextLength) +
                     (needs.spirv ? "-spirv" : "") + planKey +
                     (needs.kvPoolBlocks > 0
                          ? "-pool" + std::to_string(needs.kvPoolBlocks)
                          : "") +
                     cacheStamp() +
                     ".hetpack";
  // A read-only cache (a shared install, a read-only home) still serves the
  // packs it holds; new ones go to a per-user directory under TMPDIR.
  std::string dir = cacheDirectory();
  std::string fallback = fallbackCacheDirectory();
  // Directories whose entry is something hetc must not delete (a directory
  // with files in it): the pack is compiled elsewhere, the entry left alone.
  std::vector<std::string> blocked;
  for (const std::string &candidate : {dir, fallback}) {
    if (candidate == fallback && !ownedPrivately(fallback))
      continue;
    std::string entry = candidate + "/" + name;
    struct stat info;
    if (stat(entry.c_str(), &info) != 0)
      continue;
    // A cache entry is checked as any pack is; a damaged one (a full disk,
    // a crash while copying, an edit) is replaced, not failed on forever.
    std::string damage;
    if (validatePack(entry, *hash, context, needs, damage)) {
      // Said each time: packs in a shared temporary directory may vanish,
      // and the user may have meant the configured cache to hold them.
      if (candidate == fallback)
        hetc::cli::printMessage(
                     "%s: note: using the pack cached in %s, not in the pack "
                     "cache %s (set HETC_CACHE_DIR to choose)\n",
                     tool.c_str(), fallback.c_str(), dir.c_str());
      return entry;
    }
    hetc::cli::printMessage("%s: the cached pack is unusable and is compiled "
                         "again: %s\n", tool.c_str(), damage.c_str());
    if (std::remove(entry.c_str()) != 0 && errno != ENOENT) {
      hetc::cli::printMessage(
                   "%s: warning: %s cannot be removed (%s) and is left as it "
                   "is; remove it by hand to cache this model there again\n",
                   tool.c_str(), entry.c_str(), std::strerror(errno));
      blocked.push_back(candidate);
    }
  }
  auto isBlocked = [&](const std::string &candidate) {
    return std::find(blocked.begin(), blocked.end(), candidate) !=
           blocked.end();
  };
  std::string reason;
  if (isBlocked(dir))
    reason = "its entry for this model is in the way";
  if (!reason.empty() || !writableDirectory(dir, reason)) {
    std::string fallbackReason;
    bool usable =
        !isBlocked(fallback) && writableDirectory(fallback, fallbackReason);
    if (isBlocked(fallback))
      fallbackReason = "its entry for this model is in the way";
    if (usable && !ownedPrivately(fallback)) {
      fallbackReason = "it belongs to another user or others may write it";
      usable = false;
    }
    if (!usable) {
      error = dir + ": cannot hold compiled packs (" + reason + "), nor can " +
              fallback + " (" + fallbackReason +
              "); set HETC_CACHE_DIR to a writable directory, or compile the "
              "model once with `hetc compile MODEL -o FILE.hetpack`";
      return {};
    }
    hetc::cli::printMessage(
                 "%s: warning: the pack cache %s cannot hold packs (%s); "
                 "caching in %s instead (set HETC_CACHE_DIR to choose)\n",
                 tool.c_str(), dir.c_str(), reason.c_str(), fallback.c_str());
    dir = fallback;
  }
  std::string path = dir + "/" + name;
  if (needs.beforeCompiling && !needs.beforeCompiling(error))
    return {};
  registerAllPasses();
  pipeline::CompileOptions options;
  options.modelPath = model;
  options.outputPath = path;
  options.contextLength = contextLength;
  // The cache serves this machine only.
  options.cpuVariants = {"host"};
  options.spirv = needs.spirv;
  options.system = needs.system;
  options.deviceMemory = needs.deviceMemory;
  options.computeDevices = needs.computeDevices;
  options.objective = needs.objective;
  options.kvPoolBlocks = needs.kvPoolBlocks;
  options.progress = [&tool](const std::string &line) {
    hetc::cli::printMessage("%s: compiling: %s\n", tool.c_str(), line.c_str());
  };
  if (!pipeline::compileModel(options, error))
    return {};
  return path;
}


} // namespace hetc::cli
