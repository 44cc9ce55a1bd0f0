// libFuzzer target for everything the runtime derives from an untrusted pack
// before it runs code: the container (header, section table, checksums), the
// manifest and the sizes checked against memory. An input that starts with
// the pack magic is read as a pack image; one that starts with the ELF magic
// is model code, checked as the CPU back end checks it before the loader
// maps it; any other input is a manifest, wrapped into a pack with valid
// checksums so that mutations reach the manifest's parser (and the device
// program's, which reads JSON too) instead of stopping at a checksum.
#include "runtime/backends/cpu/ElfImage.h"
#include "runtime/core/Limits.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/Pack.h"
#include "runtime/format/ProgramJson.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

void checkManifest(const std::string &text) {
  std::string error;
  std::optional<hetrt::format::Manifest> manifest =
      hetrt::format::Manifest::fromJson(text, "fuzz.hetpack", error);
  if (!manifest)
    return;
  // A parsed manifest's sizes are what the runtime multiplies before it
  // allocates: the checked product must never overflow silently.
  (void)hetrt::core::kvCacheBytes(manifest->numLayers, manifest->contextLength,
                                  manifest->numKvHeads, manifest->headDim, 4);
  (void)hetrt::core::checkKvCacheFits(manifest->numLayers,
                                      manifest->contextLength,
                                      manifest->numKvHeads, manifest->headDim,
                                      4, "fuzz.hetpack", "fix", error);
  (void)manifest->toJson();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string rest(reinterpret_cast<const char *>(data), size);
  std::string error;
  if (rest.compare(0, 4, "\x7f" "ELF") == 0)
    return hetrt::cpu::checkElfImage(rest, error) && error == "x" ? 1 : 0;
  if (rest.compare(0, 8, "HETCPACK") != 0) {
    hetrt::format::PackWriter writer;
    writer.addSection("manifest.json",
                      std::vector<char>(rest.begin(), rest.end()));
    rest = writer.image();
  }
  std::unique_ptr<hetrt::format::PackFile> pack =
      hetrt::format::PackFile::fromBytes(rest, "fuzz.hetpack", error);
  if (!pack)
    return 0;
  // Every section the reader accepted lies inside the image.
  size_t checksum = 0;
  for (const std::string &name : pack->sectionNames()) {
    const std::string_view *bytes = pack->section(name);
    if (!bytes->empty())
      checksum += static_cast<unsigned char>((*bytes)[0]) +
                  static_cast<unsigned char>(bytes->back());
  }
  for (const std::string &name : pack->sectionNames())
    if (name.rfind("code/", 0) == 0)
      (void)hetrt::cpu::checkElfImage(*pack->section(name), error);
  if (const std::string_view *manifest = pack->section("manifest.json")) {
    checkManifest(std::string(*manifest));
    // The same bytes as a device program: its reader takes JSON as well.
    (void)hetrt::format::programFromJson(std::string(*manifest), "fuzz.json",
                                         error);
  }
  for (const std::string &name : pack->sectionNames())
    if (name.rfind("program/", 0) == 0)
      (void)hetrt::format::programFromJson(std::string(*pack->section(name)),
                                           name, error);
  return checksum == 0xdeadbeef ? 1 : 0;
}
