// `hetc cache list|clear`: the packs `hetc run` and `hetc bench` compiled for
// GGUF models, one per model content, context and build of hetc.
#include "Commands.h"
#include "PackCache.h"

#include "runtime/core/Limits.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace hetc::cli {

namespace {

struct CacheFlags {
  bool staleOnly = false;
  /// A word that names neither action, kept to name it in the message.
  std::string unknownAction;
};

struct Entry {
  std::filesystem::path path;
  uint64_t bytes = 0;
  /// Written by another build of hetc: never used again.
  bool stale = false;
  /// A temporary file a compile left (interrupted, or still writing).
  bool partial = false;
};

std::vector<Entry> entries(const std::string &directory, std::string &error) {
  std::vector<Entry> found;
  std::error_code ec;
  std::filesystem::directory_iterator listing(directory, ec);
  // A cache that was never made is empty; one that cannot be read is an
  // error, not an empty list.
  if (ec && ec != std::errc::no_such_file_or_directory)
    error = directory + ": cannot read the pack cache: " + ec.message() +
            " (set HETC_CACHE_DIR to a directory you can read)";
  for (const auto &item : listing) {
    std::string name = item.path().filename().string();
    // Only names the cache gives its entries (PackCache.cpp: the model's
    // hash, the context, the build): a pack a user keeps in the same
    // directory is never listed or removed.
    static const std::regex kEntryName(
        "[0-9a-f]{16}-ctx[0-9]+(-spirv)?-hetc[^/]*\\.hetpack(\\.partial-[A-Za-z0-9]+)?");
    std::smatch parts;
    if (!std::regex_match(name, parts, kEntryName) ||
        !item.is_regular_file(ec))
      continue;
    bool partial = parts[1].matched;
    Entry entry;
    entry.path = item.path();
    entry.bytes = item.file_size(ec);
    entry.partial = partial;
    entry.stale = partial || name.find(cacheStamp() + ".hetpack") ==
                                 std::string::npos;
    found.push_back(entry);
  }
  std::sort(found.begin(), found.end(),
            [](const Entry &a, const Entry &b) { return a.path < b.path; });
  return found;
}

/// The model a cached pack was compiled from, from its manifest.
std::string modelOf(const Entry &entry) {
  if (entry.partial)
    return "(unfinished)";
  std::string error;
  std::unique_ptr<hetrt::format::PackFile> pack =
      hetrt::format::PackFile::open(entry.path.string(), error);
  const std::string_view *text = pack ? pack->section("manifest.json") : nullptr;
  if (!text)
    return "(damaged)";
  std::optional<hetrt::format::Manifest> manifest =
      hetrt::format::Manifest::fromJson(std::string(*text), "", error);
  if (!manifest)
    return "(damaged)";
  return manifest->weightsPath + ", context " +
         std::to_string(manifest->contextLength);
}

} // namespace

Action registerCacheCommand(CLI::App &app) {
  auto flags = std::make_shared<CacheFlags>();
  CLI::App *command = app.add_subcommand(
      "cache", "List or clear the packs compiled for GGUF models (in "
               "$HETC_CACHE_DIR, else ~/.cache/hetc)");
  command->add_option("action", flags->unknownAction, "list or clear");
  CLI::App *list = command->add_subcommand(
      "list", "Print the cache's directory, each pack with its model and size, "
              "and the total");
  CLI::App *clear =
      command->add_subcommand("clear", "Remove the cached packs");
  clear->add_flag("--stale", flags->staleOnly,
                  "Remove only packs other builds of hetc wrote, and unfinished "
                  "ones");
  return [command, list, clear, flags]() -> int {
    if (!*command)
      return -1;
    // "cache clear list" selects both; one action at a time.
    if (*list && *clear) {
      std::cerr << "hetc cache: list and clear are given together; give one "
                   "action, `hetc cache list` or `hetc cache clear [--stale]`\n";
      return 2;
    }
    if ((!*list && !*clear) || !flags->unknownAction.empty()) {
      std::cerr << "hetc cache: "
                << (flags->unknownAction.empty()
                        ? std::string("no action given")
                        : "unknown action \"" + flags->unknownAction + "\"")
                << "; use `hetc cache list` or `hetc cache clear [--stale]`\n";
      return 2;
    }
    std::string directory = cacheDirectory();
    std::string error;
    std::vector<Entry> found = entries(directory, error);
    if (!error.empty()) {
      std::cerr << "hetc cache: " << error << "\n";
      return 1;
    }
    uint64_t total = 0;
    if (*list) {
      std::printf("pack cache: %s\n", directory.c_str());
      for (const Entry &entry : found) {
        total += entry.bytes;
        std::printf("  %s  %s  %s%s\n", entry.path.filename().c_str(),
                    hetrt::core::formatBytes(entry.bytes).c_str(),
                    modelOf(entry).c_str(), entry.stale ? "  [stale]" : "");
      }
      std::printf("%zu packs, %s\n", found.size(),
                  hetrt::core::formatBytes(total).c_str());
      return 0;
    }
    (void)clear;
    size_t removed = 0;
    for (const Entry &entry : found) {
      if (flags->staleOnly && !entry.stale)
        continue;
      std::error_code ec;
      if (!std::filesystem::remove(entry.path, ec) || ec) {
        std::cerr << "hetc cache: " << entry.path.string()
                  << ": cannot remove: " << ec.message() << "\n";
        return 1;
      }
      ++removed;
      total += entry.bytes;
    }
    std::printf("removed %zu packs (%s) from %s\n", removed,
                hetrt::core::formatBytes(total).c_str(), directory.c_str());
    return 0;
  };
}

} // namespace hetc::cli
