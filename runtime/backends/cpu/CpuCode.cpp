// The code is loaded from an anonymous in-memory file, so a pack needs no
// extraction directory and leaves nothing behind.
#include "runtime/backends/cpu/CpuCode.h"

#include "runtime/backends/cpu/BufferCache.h"

#include "runtime/core/CpuFeatures.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace hetrt::cpu {

namespace {

/// Reads the code's record and compares it with the manifest.
bool checkRecord(void *handle, const format::PackFile &pack,
                 const format::Manifest &manifest,
                 const format::CodeVariant &variant,
                 std::array<int64_t, format::kCodeRecordLength> &record,
                 std::string &error) {
  using namespace format;
  const std::string origin =
      pack.path() + ": the code of variant \"" + variant.name + "\"";
  const auto *values =
      static_cast<const int64_t *>(dlsym(handle, kCodeRecordSymbol));
  if (!values || values[CodeRecordMagic] != kCodeRecordMagic) {
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
      {"model.context_length", manifest.contextLength, CodeRecordContextLength},
      {"model.kv_element_type (bytes)", manifest.kvElementBytes(),
       CodeRecordKvElementBytes},
  };
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
  loaded->fd_ = memfd_create("hetc-model-code", MFD_CLOEXEC);
  if (loaded->fd_ < 0) {
    error = std::string("cannot create an in-memory file for the model code: ") +
            std::strerror(errno);
    failure = core::Failure::Unavailable;
    return nullptr;
  }
  size_t written = 0;
  while (written < code->size()) {
    ssize_t n = ::write(loaded->fd_, code->data() + written,
                        code->size() - written);
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
    error = pack.path() + ": cannot load the code of variant \"" +
            chosen->name + "\": " + dlerror();
    return nullptr;
  }
  if (!checkRecord(loaded->handle_, pack, manifest, *chosen,
                   loaded->record_, error))
    return nullptr;
  // Code generated with routed allocations exports a table for the buffer
  // allocator; older code without it keeps the C library's.
  if (void *table = dlsym(loaded->handle_, "hetc_buffer_allocator")) {
    auto *slots = static_cast<void **>(table);
    slots[0] = reinterpret_cast<void *>(&allocateBuffer);
    slots[1] = reinterpret_cast<void *>(&releaseBuffer);
  }
  auto resolve = [&](const std::string &symbol) -> EntryFunction {
    void *address = dlsym(loaded->handle_, symbol.c_str());
    if (!address)
      error = pack.path() + ": the code lacks entry point \"" + symbol + "\"";
    return reinterpret_cast<EntryFunction>(address);
  };
  loaded->prefill_ = resolve(manifest.prefillSymbol);
  loaded->decode_ = resolve(manifest.decodeSymbol);
  if (!loaded->prefill_ || !loaded->decode_)
    return nullptr;
  return loaded;
}

CpuCode::~CpuCode() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

} // namespace hetrt::cpu
