// The code is loaded from an anonymous in-memory file, so a pack needs no
// extraction directory and leaves nothing behind.
#include "runtime/backends/cpu/CpuCode.h"

#include "runtime/backends/cpu/BufferCache.h"
#include "runtime/backends/cpu/ElfImage.h"

#include "runtime/core/CpuFeatures.h"
#include "runtime/format/InputFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

namespace hetrt::cpu {

namespace {

/// The address of symbol `name` in `handle` when it is of ELF symbol type
/// `type` (STT_FUNC, STT_OBJECT), and its size in bytes; null otherwise. The
/// structural check (ElfImage.h) has placed functions in code and data
/// outside it, so a symbol of the right type is safe to call or read.
const char *typedSymbol(void *handle, const char *name, unsigned type,
                        size_t &size) {
  void *address = dlsym(handle, name);
  Dl_info info;
  void *entry = nullptr;
  if (!address || !dladdr1(address, &info, &entry, RTLD_DL_SYMENT) || !entry)
    return nullptr;
  const auto *symbol = static_cast<const ElfW(Sym) *>(entry);
  if (ELF64_ST_TYPE(symbol->st_info) != type || symbol->st_value == 0)
    return nullptr;
  size = symbol->st_size;
  return static_cast<const char *>(address);
}

const char *dataSymbol(void *handle, const char *name, size_t &size) {
  return typedSymbol(handle, name, STT_OBJECT, size);
}

/// Splits the comma-separated feature list of the code's requirement symbol.
std::vector<std::string> splitFeatures(std::string_view text) {
  std::vector<std::string> features;
  while (!text.empty()) {
    size_t comma = text.find(',');
    features.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos)
      break;
    text.remove_prefix(comma + 1);
  }
  return features;
}

/// Checks the host against the features the code itself says it uses, so a
/// manifest that understates them cannot make the host fault.
bool checkRequirements(void *handle, const std::string &origin,
                       const std::vector<std::string> &claimed,
                       std::string &error, core::Failure &failure) {
  size_t size = 0;
  const char *text =
      dataSymbol(handle, format::kCodeRequiresSymbol, size);
  if (!text || size == 0 || text[size - 1] != '\0') {
    error = origin +
            " does not say which CPU features it uses (an older hetc wrote "
            "it, or the pack was altered); compile the model again with "
            "`hetc compile`";
    return false;
  }
  for (const std::string &feature : splitFeatures(text)) {
    if (core::hostSupports({feature}))
      continue;
    std::string listed;
    for (const std::string &name : claimed)
      listed += (listed.empty() ? "" : ", ") + name;
    error = origin + " uses CPU feature \"" + feature +
            "\", which this CPU lacks, though the manifest lists only [" +
            listed + "]; the manifest does not describe this code (compile "
            "the model again with `hetc compile`)";
    failure = core::Failure::Unsupported;
    return false;
  }
  return true;
}

/// Reads the code's record: its magic number and kernel ABI version.
bool readRecord(void *handle, const std::string &origin,
                std::array<int64_t, format::kCodeRecordLength> &record,
                std::string &error) {
  using namespace format;
  size_t size = 0;
  const char *bytes = dataSymbol(handle, kCodeRecordSymbol, size);
  int64_t values[kCodeRecordLength] = {};
  if (bytes && size == sizeof(values))
    std::memcpy(values, bytes, sizeof(values));
  if (values[CodeRecordMagic] != kCodeRecordMagic) {
    error = origin + " carries no record of the shapes it was compiled for "
                     "(an older hetc wrote it); compile the model again with "
                     "`hetc compile`";
    return false;
  }
  std::copy(values, values + kCodeRecordLength, record.begin());
  if (record[CodeRecordAbiVersion] != kKernelAbiVersion) {
    error = origin + " follows kernel ABI version " +
            std::to_string(record[CodeRecordAbiVersion]) +
            " but this runtime calls version " +
            std::to_string(kKernelAbiVersion) +
            "; compile the model again with this hetc";
    return false;
  }
  return true;
}

/// Reads the code's table of weight layouts (WeightLayout.h) into `layouts`
/// (the entries, without the count).
bool readWeightLayouts(void *handle, const std::string &origin,
                       std::vector<int64_t> &layouts, std::string &error) {
  using namespace format;
  size_t size = 0;
  const char *bytes = dataSymbol(handle, kWeightLayoutsSymbol, size);
  int64_t count = -1;
  if (bytes && size >= sizeof(count))
    std::memcpy(&count, bytes, sizeof(count));
  if (count < 0 || count > kMaxWeightLayouts ||
      size != sizeof(int64_t) * static_cast<size_t>(
                                    1 + count * kWeightLayoutFields)) {
    error = origin + " carries no valid table of the layouts it reads its "
                     "weights in (" + kWeightLayoutsSymbol +
            "); the pack is damaged or was altered (compile the model again "
            "with `hetc compile`)";
    return false;
  }
  layouts.resize(static_cast<size_t>(count * kWeightLayoutFields));
  if (!layouts.empty())
    std::memcpy(layouts.data(), bytes + sizeof(int64_t),
                layouts.size() * sizeof(int64_t));
  return true;
}

} // namespace

bool checkModelHash(const std::array<int64_t, format::kCodeRecordLength> &record,
                    const std::string &origin, const std::string &weightsHash,
                    std::string &error) {
  using namespace format;
  if (static_cast<uint64_t>(record[CodeRecordModelHash]) ==
      std::strtoull(weightsHash.c_str(), nullptr, 16))
    return true;
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(record[CodeRecordModelHash]));
  error = origin + " was compiled for the model with content hash " + text +
          ", not the " + format::printable(weightsHash) +
          " the manifest names; the code belongs to another model (compile "
          "the model again with `hetc compile`)";
  return false;
}

namespace {

/// Compares the code's record with the manifest.
bool checkRecord(const std::array<int64_t, format::kCodeRecordLength> &record,
                 const format::PackFile &pack,
                 const format::Manifest &manifest,
                 const format::CodeVariant &variant, std::string &error) {
  using namespace format;
  const std::string origin =
      pack.path() + ": the code of variant \"" + variant.name + "\"";
  struct Field {
    const char *name;
    int64_t manifestValue;
    CodeRecordField field;
  };
  const Field fields[] = {
      {"model.vocab_size", manifest.vocabSize, CodeRecordVocabSize},
      {"model.layers", manifest.numLayers, CodeRecordNumLayers},
      {"model.kv_heads", manifest.numKvHeads, CodeRecordNumKvHeads},
      {"model.head_dim", manifest.headDim, CodeRecordHeadDim},
      {"model.kv_block_size", manifest.kvBlockSize, CodeRecordKvBlockSize},
      {"the KV slots (model.context_length, or model.kv_block_size times "
       "model.kv_pool_blocks)",
       manifest.kvSlots(), CodeRecordContextLength},
      {"model.kv_element_type (bytes)", manifest.kvElementBytes(),
       CodeRecordKvElementBytes},
  };
  if (!checkModelHash(record, origin, manifest.weightsHash, error))
    return false;
  for (const Field &f : fields) {
    if (f.manifestValue == record[f.field])
      continue;
    error = pack.path() + ": manifest field \"" + f.name + "\" is " +
            std::to_string(f.manifestValue) + " but the code of variant \"" +
            variant.name + "\" was compiled for " +
            std::to_string(record[f.field]) +
            "; the manifest does not describe this code (compile the model "
            "again with `hetc compile`)";
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<CodeImage> CodeImage::load(std::string_view image,
                                           const std::string &origin,
                                           const std::vector<std::string> &claimed,
                                           std::string &error,
                                           core::Failure &failure) {
  failure = core::Failure::InvalidInput;
  std::string why;
  if (!checkElfImage(image, why)) {
    error = origin + " " + why +
            "; the pack is damaged or was altered (compile the model again "
            "with `hetc compile`)";
    return nullptr;
  }
  std::unique_ptr<CodeImage> loaded(new CodeImage());
  loaded->fd_ = memfd_create("hetc-model-code", MFD_CLOEXEC);
  if (loaded->fd_ < 0) {
    error = std::string("cannot create an in-memory file for the model code: ") +
            std::strerror(errno);
    failure = core::Failure::Unavailable;
    return nullptr;
  }
  size_t written = 0;
  while (written < image.size()) {
    ssize_t n = ::write(loaded->fd_, image.data() + written,
                        image.size() - written);
    if (n <= 0) {
      error = std::string("cannot write the model code: ") +
              std::strerror(errno);
      failure = core::Failure::Unavailable;
      return nullptr;
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(loaded->fd_);
  loaded->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!loaded->handle_) {
    error = origin + " cannot be loaded: " + dlerror();
    return nullptr;
  }
  if (!readRecord(loaded->handle_, origin, loaded->record_, error) ||
      !readWeightLayouts(loaded->handle_, origin, loaded->weightLayouts_,
                         error) ||
      !checkRequirements(loaded->handle_, origin, claimed, error, failure))
    return nullptr;
  // Code generated with routed allocations exports a table for the buffer
  // allocator; older code without it keeps the C library's.
  size_t tableSize = 0;
  if (const char *table = dataSymbol(loaded->handle_, "hetc_buffer_allocator",
                                     tableSize);
      table && tableSize >= 2 * sizeof(void *)) {
    auto *slots = reinterpret_cast<void **>(const_cast<char *>(table));
    slots[0] = reinterpret_cast<void *>(&allocateBuffer);
    slots[1] = reinterpret_cast<void *>(&releaseBuffer);
  }
  return loaded;
}

EntryFunction CodeImage::function(const std::string &name) const {
  size_t size = 0;
  const void *address = typedSymbol(handle_, name.c_str(), STT_FUNC, size);
  return reinterpret_cast<EntryFunction>(const_cast<void *>(address));
}

const char *CodeImage::data(const std::string &name, size_t &size) const {
  return dataSymbol(handle_, name.c_str(), size);
}

CodeImage::~CodeImage() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

std::unique_ptr<CpuCode> CpuCode::load(const format::PackFile &pack,
                                       const format::Manifest &manifest,
                                       std::string &error,
                                       core::Failure &failure) {
  failure = core::Failure::InvalidInput;
  const format::CodeVariant *chosen = nullptr;
  for (const format::CodeVariant &variant : manifest.variants) {
    if (core::hostSupports(variant.requires_)) {
      chosen = &variant;
      break;
    }
  }
  if (!chosen) {
    error = pack.path() + ": none of the pack's code variants runs on this CPU "
                          "(compile the model on, or for, this machine)";
    failure = core::Failure::Unsupported;
    return nullptr;
  }
  const std::string_view *code = pack.section(chosen->section);
  if (!code) {
    error = pack.path() + ": the manifest names section \"" + chosen->section +
            "\" for variant \"" + chosen->name + "\" but the pack lacks it";
    return nullptr;
  }
  std::unique_ptr<CpuCode> loaded(new CpuCode());
  loaded->variant_ = chosen->name;
  const std::string origin =
      pack.path() + ": the code of variant \"" + chosen->name + "\"";
  loaded->image_ =
      CodeImage::load(*code, origin, chosen->requires_, error, failure);
  if (!loaded->image_ ||
      !checkRecord(loaded->image_->record(), pack, manifest, *chosen, error))
    return nullptr;
  auto resolve = [&](const std::string &symbol) -> EntryFunction {
    EntryFunction function = loaded->image_->function(symbol);
    if (!function)
      error = origin + " lacks entry point \"" + symbol +
              "\"; the pack is damaged or was altered (compile the model "
              "again with `hetc compile`)";
    return function;
  };
  loaded->prefill_ = resolve(manifest.prefillSymbol);
  loaded->decode_ = resolve(manifest.decodeSymbol);
  if (!loaded->prefill_ || !loaded->decode_)
    return nullptr;
  // Paged code decodes batches of sequences too.
  if (manifest.kvBlockSize > 0) {
    loaded->decodeBatch_ = resolve(format::kDecodeBatchEntrySymbol);
    if (!loaded->decodeBatch_)
      return nullptr;
  }
  return loaded;
}

} // namespace hetrt::cpu
