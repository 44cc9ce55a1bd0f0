// The C API over the runtime core: argument validation, status codes, the
// per-thread error message, and the exception boundary (nothing thrown inside
// crosses into C).
#include "hetrt/hetrt.h"

#include "runtime/core/Limits.h"
#include "runtime/core/Model.h"
#include "runtime/format/InputFile.h"
#include "runtime/format/MappedFiles.h"
#include "runtime/tokenizer/ChatTemplate.h"
#include "runtime/core/Sampler.h"
#include "runtime/core/Session.h"
#include "runtime/core/ProgramSession.h"
#include "runtime/hal/Device.h"

#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <set>
#include <string>

struct hetrt_model_t {
  std::unique_ptr<hetrt::core::Model> model;
};
/// A session on the CPU or, with `spirv`, on a Vulkan device it keeps.
struct hetrt_session_t {
  std::unique_ptr<hetrt::core::Session> session;
  std::unique_ptr<hetrt::core::ProgramSession> spirv;
  std::shared_ptr<hetrt::hal::Device> device;
  /// What hetrt_session_info and hetrt_device_stats_t point into, made at
  /// creation (describe()).
  std::vector<std::string> deviceNames;
  std::vector<std::string> deviceCodes;
  std::vector<int64_t> deviceUnits;
  std::vector<hetrt::format::PlannedCode::PlannedMemory> devicePlannedMemory;
  std::string devices;
  std::string system;
  int32_t threads = 0;
  /// What hetrt_memory_space_t names point into, kept for the session's
  /// life (a set's strings never move).
  mutable std::set<std::string> memoryNames;

  std::vector<hetrt::core::MemorySpaceStats> memorySpaces() const {
    return spirv ? spirv->memorySpaces() : session->memorySpaces();
  }

  /// Fills the description of a session of `model` that was just created.
  void describe(const hetrt::core::Model &model) {
    const hetrt::format::Manifest &manifest = model.manifest();
    if (spirv) {
      for (const hetrt::core::ProgramRunner::DeviceStats &stats :
           spirv->deviceStats()) {
        deviceNames.push_back(stats.name);
        deviceCodes.push_back(stats.code);
        int64_t units = 0;
        hetrt::format::PlannedCode::PlannedMemory planned;
        if (manifest.plan && !device) {
          for (const auto &[id, count] : manifest.plan->units)
            if (id == spirv->planDeviceName(stats.name))
              units = count;
          for (const auto &use : manifest.plan->memory)
            if (use.device == spirv->planDeviceName(stats.name))
              planned = use;
        }
        deviceUnits.push_back(units);
        devicePlannedMemory.push_back(planned);
      }
      devices = spirv->deviceName();
      if (manifest.plan && !device)
        system = manifest.plan->system;
    } else {
      deviceNames = {"cpu0"};
      deviceCodes = {"x86 " + model.code().variantName()};
      deviceUnits = {0};
      devicePlannedMemory = {{}};
      devices = "cpu0";
      threads = static_cast<int32_t>(session->numThreads());
    }
  }

  bool prefill(const std::vector<int32_t> &ids, std::string &error) {
    return spirv ? spirv->prefill(ids, error) : session->prefill(ids, error);
  }
  bool decode(int32_t id, std::string &error) {
    return spirv ? spirv->decode(id, error) : session->decode(id, error);
  }
  bool prefill(int32_t sequence, const std::vector<int32_t> &ids,
               std::string &error) {
    return spirv ? spirv->prefill(sequence, ids, error)
                 : session->prefill(sequence, ids, error);
  }
  bool decode(int32_t sequence, int32_t id, std::string &error) {
    return spirv ? spirv->decode(sequence, id, error)
                 : session->decode(sequence, id, error);
  }
  /// The sequences and their blocks, wherever the session runs.
  hetrt::core::KvCache &kv() {
    return spirv ? spirv->kvCache() : session->kvCache();
  }
  const float *logits() const {
    return spirv ? spirv->logits() : session->logits();
  }
  void reset() {
    if (spirv)
      spirv->reset();
    else
      session->reset();
  }
};
struct hetrt_buffer_t {
  std::shared_ptr<hetrt::hal::Buffer> buffer;
};
struct hetrt_queue_t {
  std::unique_ptr<hetrt::hal::Queue> queue;
  /// The device it runs on, which dispatched executables must be on.
  std::shared_ptr<hetrt::hal::Device> device;
};
struct hetrt_executable_t {
  std::shared_ptr<hetrt::hal::Executable> executable;
  std::shared_ptr<hetrt::hal::Device> device;
};
struct hetrt_event_t {
  std::shared_ptr<hetrt::hal::Event> event;
};
struct hetrt_sampler_t {
  explicit hetrt_sampler_t(const hetrt::core::SamplingParams &params)
      : sampler(params) {}
  hetrt::core::Sampler sampler;
  std::vector<int32_t> history;
};

namespace {
thread_local std::string lastError;

hetrt_status_t fail(hetrt_status_t status, std::string message) {
  lastError = std::move(message);
  return status;
}

/// The device at `index`, or null with the failure recorded.
std::shared_ptr<hetrt::hal::Device> deviceAt(int32_t index, const char *call) {
  std::vector<std::shared_ptr<hetrt::hal::Device>> devices =
      hetrt::hal::enumerateDevices();
  if (index < 0 || static_cast<size_t>(index) >= devices.size()) {
    fail(HETRT_INVALID_ARGUMENT, std::string(call) + ": device " +
                                     std::to_string(index) +
                                     " is outside [0, " +
                                     std::to_string(devices.size()) + ")");
    return nullptr;
  }
  return devices[index];
}

/// Runs `body`, turning exceptions into statuses.
template <typename Body> hetrt_status_t guarded(Body body) {
  try {
    lastError.clear();
    return body();
  } catch (const std::bad_alloc &) {
    return fail(HETRT_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception &error) {
    return fail(HETRT_INTERNAL, std::string("internal error: ") + error.what());
  } catch (...) {
    return fail(HETRT_INTERNAL, "internal error");
  }
}

hetrt_status_t statusOf(hetrt::core::Failure failure) {
  switch (failure) {
  case hetrt::core::Failure::InvalidInput:
    return HETRT_INVALID_ARGUMENT;
  case hetrt::core::Failure::Io:
    return HETRT_IO;
  case hetrt::core::Failure::Unsupported:
    return HETRT_UNSUPPORTED;
  case hetrt::core::Failure::OutOfMemory:
    return HETRT_OUT_OF_MEMORY;
  case hetrt::core::Failure::Unavailable:
    return HETRT_UNAVAILABLE;
  }
  return HETRT_INTERNAL;
}
} // namespace

extern "C" {

const char *hetrt_last_error_message(void) { return lastError.c_str(); }

int hetrt_api_version(void) { return HETRT_API_VERSION; }

void hetrt_install_mapped_file_fault_handler(const char *program) {
  hetrt::format::installMappedFileFaultHandler(program ? program : "hetrt");
}

hetrt_status_t hetrt_device_count(int32_t *out_count) {
  if (!out_count)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_device_count: NULL argument");
  return guarded([&] {
    *out_count = static_cast<int32_t>(hetrt::hal::enumerateDevices().size());
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_info(int32_t device_index,
                                 hetrt_device_info_t *out_info) {
  if (!out_info)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_device_info: NULL argument");
  *out_info = {};
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_device_info");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    // The registry keeps the devices, and so these strings, for the process.
    const hetrt::hal::DeviceInfo &info = device->info();
    *out_info = {info.name.c_str(), info.kind.c_str(), info.description.c_str(),
                 static_cast<int32_t>(info.memories.size())};
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_memory_info(int32_t device_index,
                                        int32_t memory_index,
                                        hetrt_memory_info_t *out_info) {
  if (!out_info)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_device_memory_info: NULL argument");
  *out_info = {};
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_device_memory_info");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    const hetrt::hal::DeviceInfo &info = device->info();
    if (memory_index < 0 ||
        static_cast<size_t>(memory_index) >= info.memories.size())
      return fail(HETRT_INVALID_ARGUMENT,
                  "hetrt_device_memory_info: " + info.name + " has " +
                      std::to_string(info.memories.size()) +
                      " memory spaces; " + std::to_string(memory_index) +
                      " is outside them");
    const hetrt::hal::MemorySpaceInfo &memory = info.memories[memory_index];
    *out_info = {memory.name.c_str(), memory.capacityBytes,
                 memory.hostVisible ? 1 : 0};
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_unavailable_count(int32_t *out_count) {
  if (!out_count)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_device_unavailable_count: NULL argument");
  return guarded([&] {
    *out_count =
        static_cast<int32_t>(hetrt::hal::unavailableBackEnds().size());
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_unavailable_reason(int32_t index,
                                               const char **out_reason) {
  if (!out_reason)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_device_unavailable_reason: NULL argument");
  *out_reason = nullptr;
  return guarded([&] {
    const std::vector<std::string> &reasons = hetrt::hal::unavailableBackEnds();
    if (index < 0 || static_cast<size_t>(index) >= reasons.size())
      return fail(HETRT_INVALID_ARGUMENT,
                  "hetrt_device_unavailable_reason: " + std::to_string(index) +
                      " is outside [0, " + std::to_string(reasons.size()) +
                      ")");
    *out_reason = reasons[index].c_str();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_spirv_info(int32_t device_index,
                                       hetrt_spirv_info_t *out_info) {
  if (!out_info)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_device_spirv_info: NULL argument");
  *out_info = {};
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_device_spirv_info");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    const hetrt::hal::SpirvSupport &spirv = device->info().spirv;
    *out_info = {spirv.version, spirv.subgroupSize,
                 static_cast<int32_t>(spirv.capabilities.size())};
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_device_spirv_capability(int32_t device_index,
                                             int32_t capability_index,
                                             const char **out_name) {
  if (!out_name)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_device_spirv_capability: NULL argument");
  *out_name = nullptr;
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_device_spirv_capability");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    const std::vector<std::string> &names = device->info().spirv.capabilities;
    if (capability_index < 0 ||
        static_cast<size_t>(capability_index) >= names.size())
      return fail(HETRT_INVALID_ARGUMENT,
                  "hetrt_device_spirv_capability: capability " +
                      std::to_string(capability_index) + " is outside [0, " +
                      std::to_string(names.size()) + ")");
    *out_name = names[capability_index].c_str();
    return HETRT_OK;
  });
}

} // extern "C"

namespace {

/// OK, or the error's status with its message.
hetrt_status_t statusOfResult(bool ok, const hetrt::hal::Error &error,
                              const char *call) {
  if (ok)
    return HETRT_OK;
  return fail(statusOf(error.kind), std::string(call) + ": " + error.message);
}

} // namespace

extern "C" {

hetrt_status_t hetrt_buffer_create(int32_t device_index, int32_t memory_index,
                                   uint64_t size, hetrt_buffer_t **out_buffer) {
  if (!out_buffer)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_buffer_create: NULL argument");
  *out_buffer = nullptr;
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_buffer_create");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    hetrt::hal::Error error;
    std::shared_ptr<hetrt::hal::Buffer> buffer =
        device->allocate(memory_index, size, error);
    if (!buffer)
      return statusOfResult(false, error, "hetrt_buffer_create");
    *out_buffer = new hetrt_buffer_t{std::move(buffer)};
    return HETRT_OK;
  });
}

void hetrt_buffer_release(hetrt_buffer_t *buffer) { delete buffer; }

void *hetrt_buffer_host_pointer(hetrt_buffer_t *buffer) {
  return buffer ? buffer->buffer->hostPointer() : nullptr;
}

hetrt_status_t hetrt_queue_create(int32_t device_index,
                                  hetrt_queue_t **out_queue) {
  if (!out_queue)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_create: NULL argument");
  *out_queue = nullptr;
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_queue_create");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    hetrt::hal::Error error;
    std::unique_ptr<hetrt::hal::Queue> queue = device->createQueue(error);
    if (!queue)
      return statusOfResult(false, error, "hetrt_queue_create");
    *out_queue = new hetrt_queue_t{std::move(queue), std::move(device)};
    return HETRT_OK;
  });
}

void hetrt_queue_release(hetrt_queue_t *queue) { delete queue; }

hetrt_status_t hetrt_queue_fill(hetrt_queue_t *queue, hetrt_buffer_t *buffer,
                                uint64_t offset, uint64_t size,
                                uint32_t pattern, int32_t pattern_bytes) {
  if (!queue || !buffer)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_fill: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->fill(*buffer->buffer, offset, size, pattern,
                                 pattern_bytes, error);
    return statusOfResult(ok, error, "hetrt_queue_fill");
  });
}

hetrt_status_t hetrt_queue_copy(hetrt_queue_t *queue, hetrt_buffer_t *source,
                                uint64_t source_offset, hetrt_buffer_t *target,
                                uint64_t target_offset, uint64_t size) {
  if (!queue || !source || !target)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_copy: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->copy(*source->buffer, source_offset,
                                 *target->buffer, target_offset, size, error);
    return statusOfResult(ok, error, "hetrt_queue_copy");
  });
}

hetrt_status_t hetrt_executable_load(int32_t device_index,
                                     hetrt_executable_format_t format,
                                     const void *code, size_t code_size,
                                     const hetrt_kernel_signature_t *kernels,
                                     size_t kernel_count,
                                     hetrt_executable_t **out_executable) {
  if (!out_executable)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_executable_load: out_executable is NULL");
  *out_executable = nullptr;
  if (!code || code_size == 0 || (!kernels && kernel_count))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_executable_load: needs code and its kernels");
  if (format != HETRT_EXECUTABLE_SPIRV &&
      format != HETRT_EXECUTABLE_X86_SHARED_OBJECT)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_executable_load: format " +
                    std::to_string(static_cast<int>(format)) +
                    " is neither HETRT_EXECUTABLE_SPIRV nor "
                    "HETRT_EXECUTABLE_X86_SHARED_OBJECT");
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_executable_load");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    std::vector<hetrt::hal::KernelSignature> signatures;
    for (size_t k = 0; k < kernel_count; ++k) {
      if (!kernels[k].entry_point)
        return fail(HETRT_INVALID_ARGUMENT,
                    "hetrt_executable_load: kernel " + std::to_string(k) +
                        " has no entry point");
      signatures.push_back({kernels[k].entry_point, kernels[k].bindings,
                            kernels[k].push_constant_bytes});
    }
    hetrt::hal::Error error;
    std::shared_ptr<hetrt::hal::Executable> executable = device->loadExecutable(
        format == HETRT_EXECUTABLE_SPIRV
            ? hetrt::hal::ExecutableFormat::SpirV
            : hetrt::hal::ExecutableFormat::X86SharedObject,
        std::string(static_cast<const char *>(code), code_size),
        std::move(signatures), error);
    if (!executable)
      return statusOfResult(false, error, "hetrt_executable_load");
    *out_executable =
        new hetrt_executable_t{std::move(executable), std::move(device)};
    return HETRT_OK;
  });
}

void hetrt_executable_release(hetrt_executable_t *executable) {
  delete executable;
}

hetrt_status_t hetrt_queue_dispatch(hetrt_queue_t *queue,
                                    hetrt_executable_t *executable,
                                    int32_t kernel_index,
                                    const uint32_t groups[3],
                                    hetrt_buffer_t *const *bindings,
                                    size_t binding_count,
                                    const void *push_constants,
                                    size_t push_constant_bytes) {
  if (!queue || !executable || !groups || (!bindings && binding_count) ||
      (!push_constants && push_constant_bytes))
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_dispatch: NULL argument");
  if (queue->device != executable->device)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_queue_dispatch: the executable was loaded on " +
                    executable->device->info().name + ", the queue runs on " +
                    queue->device->info().name +
                    "; load it on the queue's device");
  const auto &kernels = executable->executable->kernels();
  if (kernel_index < 0 || static_cast<size_t>(kernel_index) >= kernels.size())
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_queue_dispatch: kernel " +
                    std::to_string(kernel_index) + " is outside [0, " +
                    std::to_string(kernels.size()) + ")");
  return guarded([&] {
    std::vector<hetrt::hal::Buffer *> buffers;
    for (size_t b = 0; b < binding_count; ++b) {
      if (!bindings[b])
        return fail(HETRT_INVALID_ARGUMENT,
                    "hetrt_queue_dispatch: binding " + std::to_string(b) +
                        " is NULL");
      buffers.push_back(bindings[b]->buffer.get());
    }
    hetrt::hal::Error error;
    bool ok = queue->queue->dispatch(
        *executable->executable, kernel_index, groups, buffers,
        std::string(static_cast<const char *>(push_constants),
                    push_constant_bytes),
        error);
    return statusOfResult(ok, error, "hetrt_queue_dispatch");
  });
}

hetrt_status_t hetrt_queue_write(hetrt_queue_t *queue, const void *host,
                                 hetrt_buffer_t *target, uint64_t target_offset,
                                 uint64_t size) {
  if (!queue || !target)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_write: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->write(host, *target->buffer, target_offset, size,
                                  error);
    return statusOfResult(ok, error, "hetrt_queue_write");
  });
}

hetrt_status_t hetrt_queue_read(hetrt_queue_t *queue, hetrt_buffer_t *source,
                                uint64_t source_offset, void *host,
                                uint64_t size) {
  if (!queue || !source)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_read: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->read(*source->buffer, source_offset, host, size,
                                 error);
    return statusOfResult(ok, error, "hetrt_queue_read");
  });
}

hetrt_status_t hetrt_queue_wait(hetrt_queue_t *queue, hetrt_event_t *event,
                                uint64_t value) {
  if (!queue || !event)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_wait: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->wait(*event->event, value, error);
    return statusOfResult(ok, error, "hetrt_queue_wait");
  });
}

hetrt_status_t hetrt_queue_signal(hetrt_queue_t *queue, hetrt_event_t *event,
                                  uint64_t value) {
  if (!queue || !event)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_signal: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->signal(*event->event, value, error);
    return statusOfResult(ok, error, "hetrt_queue_signal");
  });
}

hetrt_status_t hetrt_queue_finish(hetrt_queue_t *queue) {
  if (!queue)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_queue_finish: NULL argument");
  return guarded([&] {
    hetrt::hal::Error error;
    bool ok = queue->queue->finish(error);
    return statusOfResult(ok, error, "hetrt_queue_finish");
  });
}

hetrt_status_t hetrt_event_create(int32_t device_index, uint64_t initial_value,
                                  hetrt_event_t **out_event) {
  if (!out_event)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_event_create: NULL argument");
  *out_event = nullptr;
  return guarded([&] {
    auto device = deviceAt(device_index, "hetrt_event_create");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    hetrt::hal::Error error;
    std::shared_ptr<hetrt::hal::Event> event =
        device->createEvent(initial_value, error);
    if (!event)
      return statusOfResult(false, error, "hetrt_event_create");
    *out_event = new hetrt_event_t{std::move(event)};
    return HETRT_OK;
  });
}

void hetrt_event_release(hetrt_event_t *event) { delete event; }

hetrt_status_t hetrt_event_value(const hetrt_event_t *event,
                                 uint64_t *out_value) {
  if (!event || !out_value)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_event_value: NULL argument");
  *out_value = event->event->value();
  return HETRT_OK;
}

hetrt_status_t hetrt_event_signal(hetrt_event_t *event, uint64_t value) {
  if (!event)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_event_signal: NULL argument");
  event->event->signal(value);
  return HETRT_OK;
}

hetrt_status_t hetrt_event_wait(hetrt_event_t *event, uint64_t value,
                                uint64_t timeout_ns, int *out_reached) {
  if (!event || !out_reached)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_event_wait: NULL argument");
  *out_reached = 0;
  return guarded([&] {
    bool reached = event->event->hostWait(value, timeout_ns);
    if (const hetrt::hal::Error *failure = event->event->failure())
      return fail(statusOf(failure->kind),
                  "hetrt_event_wait: the queue that signals the event failed: " +
                      failure->message);
    *out_reached = reached ? 1 : 0;
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_model_open(const char *pack_path, const char *weights_path,
                                hetrt_model_t **out_model) {
  if (!out_model)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_open: out_model is NULL");
  *out_model = nullptr;
  if (!pack_path)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_open: pack_path is NULL");
  return guarded([&] {
    std::string error;
    hetrt::core::Failure failure;
    auto model = hetrt::core::Model::load(
        pack_path, weights_path ? weights_path : "", error, failure);
    if (!model)
      return fail(statusOf(failure), error);
    *out_model = new hetrt_model_t{std::move(model)};
    return HETRT_OK;
  });
}

void hetrt_model_release(hetrt_model_t *model) { delete model; }

hetrt_status_t hetrt_model_info(const hetrt_model_t *model,
                                int32_t *out_vocab_size,
                                int32_t *out_context_length) {
  if (!model || !out_vocab_size || !out_context_length)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_info: NULL argument");
  const hetrt::format::Manifest &manifest = model->model->manifest();
  *out_vocab_size = static_cast<int32_t>(manifest.vocabSize);
  *out_context_length = static_cast<int32_t>(manifest.contextLength);
  return HETRT_OK;
}

hetrt_status_t hetrt_model_kv_cache_info(const hetrt_model_t *model,
                                         hetrt_kv_cache_info_t *out_info) {
  if (!model || !out_info)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_kv_cache_info: NULL argument");
  const hetrt::format::Manifest &manifest = model->model->manifest();
  // Model::open checked that the product fits.
  std::optional<uint64_t> bytes = hetrt::core::kvCacheBytes(
      manifest.numLayers, manifest.kvSlots(), manifest.numKvHeads,
      manifest.headDim, manifest.kvElementBytes());
  *out_info = {manifest.kvElementType.c_str(),
               static_cast<int32_t>(manifest.kvElementBytes()),
               bytes.value_or(0)};
  return HETRT_OK;
}

hetrt_status_t hetrt_model_is_end_of_generation(const hetrt_model_t *model,
                                                int32_t id, int *out_is_end) {
  if (!model || !out_is_end)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_is_end_of_generation: NULL argument");
  *out_is_end = 0;
  const hetrt::tokenizer::Tokenizer &tokenizer = model->model->tokenizer();
  if (id < 0 || id >= tokenizer.vocabSize())
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_is_end_of_generation: token id " +
                    std::to_string(id) + " is outside the vocabulary [0, " +
                    std::to_string(tokenizer.vocabSize()) + ")");
  *out_is_end = tokenizer.isEndOfGeneration(id) ? 1 : 0;
  return HETRT_OK;
}

hetrt_status_t hetrt_model_max_text_bytes(const hetrt_model_t *model,
                                          uint64_t max_tokens,
                                          uint64_t *out_bytes) {
  if (!model || !out_bytes)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_max_text_bytes: NULL argument");
  *out_bytes = 0;
  return guarded([&] {
    *out_bytes = model->model->tokenizer().maxTextBytesFor(max_tokens);
    return HETRT_OK;
  });
}

namespace {

/// Writes `text` to out_text when capacity holds it, and its length to
/// out_length either way (so a caller can size a second call).
hetrt_status_t copyText(const char *function, const std::string &text,
                        char *out_text, size_t capacity, size_t *out_length) {
  *out_length = text.size();
  if (text.size() > capacity)
    return fail(HETRT_INVALID_ARGUMENT,
                std::string(function) + ": " + std::to_string(text.size()) +
                    " bytes do not fit in a capacity of " +
                    std::to_string(capacity));
  std::memcpy(out_text, text.data(), text.size());
  return HETRT_OK;
}

hetrt_status_t tokenize(const char *function, const hetrt_model_t *model,
                        const char *text, size_t text_length, int add_special,
                        int parse_special, int32_t *out_ids, size_t capacity,
                        size_t *out_count) {
  if (!out_count)
    return fail(HETRT_INVALID_ARGUMENT,
                std::string(function) + ": out_count is NULL");
  *out_count = 0;
  if (!model || (!text && text_length) || (!out_ids && capacity))
    return fail(HETRT_INVALID_ARGUMENT,
                std::string(function) + ": NULL argument");
  return guarded([&] {
    std::vector<int32_t> ids = model->model->tokenizer().encode(
        std::string_view(text ? text : "", text_length), add_special != 0,
        parse_special != 0);
    *out_count = ids.size();
    if (ids.size() > capacity)
      return fail(HETRT_INVALID_ARGUMENT,
                  std::string(function) + ": " + std::to_string(ids.size()) +
                      " ids do not fit in a capacity of " +
                      std::to_string(capacity));
    std::copy(ids.begin(), ids.end(), out_ids);
    return HETRT_OK;
  });
}

} // namespace

hetrt_status_t hetrt_model_tokenize(const hetrt_model_t *model,
                                    const char *text, size_t text_length,
                                    int add_special, int32_t *out_ids,
                                    size_t capacity, size_t *out_count) {
  return tokenize("hetrt_model_tokenize", model, text, text_length,
                  add_special, /*parse_special=*/0, out_ids, capacity,
                  out_count);
}

hetrt_status_t hetrt_model_tokenize_special(const hetrt_model_t *model,
                                            const char *text,
                                            size_t text_length,
                                            int add_special, int parse_special,
                                            int32_t *out_ids, size_t capacity,
                                            size_t *out_count) {
  return tokenize("hetrt_model_tokenize_special", model, text, text_length,
                  add_special, parse_special, out_ids, capacity, out_count);
}

hetrt_status_t hetrt_chat_template_name(int32_t index, const char **out_name) {
  if (!out_name)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_chat_template_name: out_name is NULL");
  *out_name = nullptr;
  const std::vector<std::string> &names =
      hetrt::tokenizer::chatTemplateNames();
  if (index < 0 || static_cast<size_t>(index) >= names.size())
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_chat_template_name: index " + std::to_string(index) +
                    " is not one of the " + std::to_string(names.size()) +
                    " families' (0 to " + std::to_string(names.size() - 1) + ")");
  *out_name = names[index].c_str();
  return HETRT_OK;
}

hetrt_status_t hetrt_model_chat_template(const hetrt_model_t *model,
                                         const char **out_name) {
  if (!out_name)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_chat_template: out_name is NULL");
  *out_name = "";
  if (!model)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_chat_template: NULL model");
  return guarded([&] {
    const hetrt::format::GgufFile &weights = model->model->weights();
    const hetrt::format::GgufValue *value =
        weights.find("tokenizer.chat_template");
    std::optional<std::string_view> jinja =
        value ? value->asString() : std::nullopt;
    if (!jinja)
      return HETRT_OK;
    std::optional<hetrt::tokenizer::ChatTemplate> family =
        hetrt::tokenizer::detectChatTemplate(std::string(*jinja));
    if (!family) {
      std::string names;
      for (const std::string &name : hetrt::tokenizer::chatTemplateNames())
        names += (names.empty() ? "" : ", ") + name;
      return fail(HETRT_UNSUPPORTED,
                  weights.path() +
                      ": tokenizer.chat_template is of no family hetc "
                      "knows; choose one of " +
                      names + " (hetc: --chat-template)");
    }
    *out_name = hetrt::tokenizer::chatTemplateNames()[static_cast<size_t>(
                                                          *family)]
                    .c_str();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_model_render_chat(const hetrt_model_t *model,
                                       const char *template_name,
                                       const hetrt_chat_message_t *messages,
                                       size_t count, int add_assistant,
                                       char *out_text, size_t capacity,
                                       size_t *out_length) {
  if (!out_length)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_render_chat: out_length is NULL");
  *out_length = 0;
  if (!model || !template_name || (!messages && count) ||
      (!out_text && capacity))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_render_chat: NULL argument");
  return guarded([&] {
    std::string error;
    std::optional<hetrt::tokenizer::ChatTemplate> family =
        hetrt::tokenizer::chatTemplateNamed(template_name, error);
    if (!family)
      return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_render_chat: " + error);
    std::vector<hetrt::tokenizer::ChatMessage> conversation;
    for (size_t m = 0; m < count; ++m) {
      if (!messages[m].role || !messages[m].content)
        return fail(HETRT_INVALID_ARGUMENT,
                    "hetrt_model_render_chat: message " + std::to_string(m) +
                        " has a NULL role or content");
      conversation.push_back({messages[m].role, messages[m].content});
    }
    const hetrt::tokenizer::Tokenizer &tokenizer = model->model->tokenizer();
    auto special = [&](int32_t id) {
      return id >= 0 ? tokenizer.decodeToken(id, /*renderSpecial=*/true)
                     : std::string();
    };
    std::optional<std::string> text = hetrt::tokenizer::renderChat(
        *family, conversation, add_assistant != 0, special(tokenizer.bos()),
        special(tokenizer.eos()), error);
    if (!text)
      return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_render_chat: " + error);
    return copyText("hetrt_model_render_chat", *text, out_text, capacity,
                    out_length);
  });
}

hetrt_status_t hetrt_model_detokenize(const hetrt_model_t *model,
                                      const int32_t *ids, size_t count,
                                      char *out_text, size_t capacity,
                                      size_t *out_length) {
  if (!out_length)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_detokenize: out_length is NULL");
  *out_length = 0;
  if (!model || (!ids && count) || (!out_text && capacity))
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_detokenize: NULL argument");
  return guarded([&] {
    const hetrt::tokenizer::Tokenizer &tokenizer = model->model->tokenizer();
    std::vector<int32_t> list(ids, ids + count);
    for (int32_t id : list)
      if (id < 0 || id >= tokenizer.vocabSize())
        return fail(HETRT_INVALID_ARGUMENT,
                    "hetrt_model_detokenize: id " + std::to_string(id) +
                        " is outside the vocabulary");
    std::string text = tokenizer.decode(list);
    return copyText("hetrt_model_detokenize", text, out_text, capacity,
                    out_length);
  });
}

hetrt_status_t hetrt_model_token_piece(const hetrt_model_t *model, int32_t id,
                                       char *out_text, size_t capacity,
                                       size_t *out_length) {
  if (!out_length)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_token_piece: out_length is NULL");
  *out_length = 0;
  if (!model || (!out_text && capacity))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_token_piece: NULL argument");
  return guarded([&] {
    const hetrt::tokenizer::Tokenizer &tokenizer = model->model->tokenizer();
    if (id < 0 || id >= tokenizer.vocabSize())
      return fail(HETRT_INVALID_ARGUMENT,
                  "hetrt_model_token_piece: id " + std::to_string(id) +
                      " is outside the vocabulary");
    std::string piece = tokenizer.decodeToken(id);
    return copyText("hetrt_model_token_piece", piece, out_text, capacity,
                    out_length);
  });
}

hetrt_status_t hetrt_model_describe(const hetrt_model_t *model,
                                    hetrt_model_description_t *out) {
  if (!out)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_describe: NULL argument");
  *out = {};
  if (!model)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_model_describe: NULL model");
  const hetrt::core::Model &loaded = *model->model;
  const hetrt::format::Manifest &manifest = loaded.manifest();
  // The model owns these strings for its life.
  *out = {manifest.architecture.c_str(),
          loaded.weights().path().c_str(),
          loaded.pack().path().c_str(),
          loaded.code().variantName().c_str(),
          manifest.plan ? manifest.plan->system.c_str() : "",
          static_cast<int32_t>(manifest.vocabSize),
          static_cast<int32_t>(manifest.contextLength),
          manifest.spirv ? 1 : 0};
  return HETRT_OK;
}

hetrt_status_t hetrt_model_planned_decode_seconds(const hetrt_model_t *model,
                                                  int64_t context,
                                                  double *out_seconds) {
  if (!model || !out_seconds || context < 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_model_planned_decode_seconds: needs a model, a context "
                "of 0 or more and out_seconds");
  const auto &plan = model->model->manifest().plan;
  if (!plan || plan->plannedContext <= 0)
    return fail(HETRT_UNSUPPORTED,
                model->model->pack().path() +
                    ": the pack holds no plan with predictions; compile it "
                    "with `hetc compile --system SYSTEM`");
  double empty = plan->emptyCacheDecodeSecondsPerStep;
  *out_seconds = empty + (plan->decodeSecondsPerStep - empty) *
                             static_cast<double>(context) /
                             static_cast<double>(plan->plannedContext);
  return HETRT_OK;
}

hetrt_status_t hetrt_session_create(const hetrt_model_t *model,
                                    int32_t num_threads,
                                    hetrt_session_t **out_session) {
  if (!out_session)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create: out_session is NULL");
  *out_session = nullptr;
  if (!model || num_threads < 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create: needs a model and num_threads >= 0");
  return guarded([&] {
    std::string error;
    hetrt::core::Failure failure;
    std::unique_ptr<hetrt::core::Session> session =
        hetrt::core::Session::create(*model->model, num_threads, error,
                                     failure);
    if (!session)
      return fail(statusOf(failure), error);
    *out_session = new hetrt_session_t();
    (*out_session)->session = std::move(session);
    (*out_session)->describe(*model->model);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_create_on_device(const hetrt_model_t *model,
                                              int32_t device_index,
                                              int32_t num_threads,
                                              hetrt_session_t **out_session) {
  if (!out_session)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create_on_device: out_session is NULL");
  *out_session = nullptr;
  if (!model || num_threads < 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create_on_device: needs a model and "
                "num_threads >= 0");
  return guarded([&] {
    std::shared_ptr<hetrt::hal::Device> device =
        deviceAt(device_index, "hetrt_session_create_on_device");
    if (!device)
      return HETRT_INVALID_ARGUMENT;
    if (device->info().kind == "cpu")
      return hetrt_session_create(model, num_threads, out_session);
    std::string error;
    hetrt::core::Failure failure = hetrt::core::Failure::InvalidInput;
    std::unique_ptr<hetrt::core::ProgramSession> spirv =
        hetrt::core::ProgramSession::create(*model->model, *device, error,
                                            failure);
    if (!spirv)
      return fail(statusOf(failure), error);
    *out_session = new hetrt_session_t();
    (*out_session)->spirv = std::move(spirv);
    (*out_session)->device = std::move(device);
    (*out_session)->describe(*model->model);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_create_planned(const hetrt_model_t *model,
                                            hetrt_session_t **out_session) {
  if (!out_session)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create_planned: out_session is NULL");
  *out_session = nullptr;
  if (!model)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_create_planned: needs a model");
  return guarded([&] {
    std::vector<std::shared_ptr<hetrt::hal::Device>> devices =
        hetrt::hal::enumerateDevices();
    std::string error;
    hetrt::core::Failure failure = hetrt::core::Failure::InvalidInput;
    std::unique_ptr<hetrt::core::ProgramSession> planned =
        hetrt::core::ProgramSession::createPlanned(*model->model, devices,
                                                   error, failure);
    if (!planned)
      return fail(statusOf(failure), error);
    *out_session = new hetrt_session_t();
    (*out_session)->spirv = std::move(planned);
    (*out_session)->describe(*model->model);
    return HETRT_OK;
  });
}

size_t hetrt_session_device_count(const hetrt_session_t *session) {
  if (!session)
    return 0;
  return session->spirv ? session->spirv->deviceStats().size() : 1;
}

hetrt_status_t hetrt_session_device_stats(const hetrt_session_t *session,
                                          size_t index,
                                          hetrt_device_stats_t *out_stats) {
  if (!session || !out_stats ||
      index >= hetrt_session_device_count(session))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_device_stats: needs a session, an index below "
                "hetrt_session_device_count and out_stats");
  uint64_t dispatches = 0, bytesIn = 0, bytesOut = 0;
  if (session->spirv) {
    hetrt::core::ProgramRunner::DeviceStats stats =
        session->spirv->deviceStats().at(index);
    dispatches = stats.dispatches;
    bytesIn = stats.bytesIn;
    bytesOut = stats.bytesOut;
  }
  *out_stats = {session->deviceNames[index].c_str(), dispatches, bytesIn,
                bytesOut, session->deviceCodes[index].c_str(),
                session->deviceUnits[index]};
  return HETRT_OK;
}

hetrt_status_t hetrt_session_device_memory(const hetrt_session_t *session,
                                           size_t index,
                                           hetrt_device_memory_t *out_memory) {
  if (!session || !out_memory ||
      index >= hetrt_session_device_count(session))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_device_memory: needs a session, an index "
                "below hetrt_session_device_count and out_memory");
  *out_memory = {};
  if (session->spirv) {
    hetrt::core::ProgramRunner::DeviceStats stats =
        session->spirv->deviceStats().at(index);
    const auto &planned = session->devicePlannedMemory.at(index);
    *out_memory = {stats.weightBytes,       stats.kvCacheBytes,
                   stats.streamBufferBytes, stats.workBytes,
                   stats.streamedBytes,     stats.streamNanoseconds,
                   stats.streamWaitNanoseconds, stats.steps,
                   planned.weightBytes,     planned.kvCacheBytes,
                   planned.streamBufferBytes, planned.workBytes,
                   planned.capacityBytes};
  } else if (session->session) {
    hetrt::core::KvUsage usage = session->session->kvUsage();
    out_memory->kv_cache_bytes =
        static_cast<uint64_t>(usage.blocks * usage.blockBytes);
  }
  return HETRT_OK;
}

hetrt_status_t hetrt_session_memory_space_count(const hetrt_session_t *session,
                                               size_t *out_count) {
  if (!session || !out_count)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_memory_space_count: NULL argument");
  *out_count = session->memorySpaces().size();
  return HETRT_OK;
}

hetrt_status_t hetrt_session_memory_space(const hetrt_session_t *session,
                                         size_t index,
                                         hetrt_memory_space_t *out_space) {
  if (!session || !out_space)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_memory_space: NULL argument");
  std::vector<hetrt::core::MemorySpaceStats> spaces = session->memorySpaces();
  if (index >= spaces.size())
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_memory_space: index " + std::to_string(index) +
                    " is not below the session's " +
                    std::to_string(spaces.size()) + " memory spaces");
  const hetrt::core::MemorySpaceStats &space = spaces[index];
  using hetrt::core::MemoryRole;
  *out_space = {session->memoryNames.insert(space.name).first->c_str(),
                session->memoryNames.insert(space.device).first->c_str(),
                space.capacityBytes,
                space.budgetBytes,
                space.held(MemoryRole::Weights),
                space.held(MemoryRole::KvCache),
                space.held(MemoryRole::StreamBuffers),
                space.held(MemoryRole::Work),
                space.held(MemoryRole::KvTier),
                space.peakBytes,
                space.migrationsIn,
                space.migrationsOut,
                space.bytesIn,
                space.bytesOut,
                space.waitNanoseconds};
  return HETRT_OK;
}

hetrt_status_t hetrt_session_info(const hetrt_session_t *session,
                                  hetrt_session_info_t *out_info) {
  if (!out_info)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_session_info: NULL argument");
  *out_info = {};
  if (!session)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_session_info: NULL session");
  *out_info = {session->devices.c_str(), session->system.c_str(),
               session->threads};
  return HETRT_OK;
}

void hetrt_session_release(hetrt_session_t *session) { delete session; }

hetrt_status_t hetrt_session_set_fixed_threads(hetrt_session_t *session,
                                               int fixed) {
  if (!session)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_set_fixed_threads: NULL session");
  if (session->session)
    session->session->setDecodeThreadChoice(fixed == 0);
  return HETRT_OK;
}

hetrt_status_t hetrt_session_prefill(hetrt_session_t *session,
                                     const int32_t *ids, size_t count,
                                     const float **out_logits) {
  if (!out_logits)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_prefill: out_logits is NULL");
  *out_logits = nullptr;
  if (!session || !ids || count == 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_prefill: needs a session and at least one id");
  return guarded([&] {
    std::string error;
    if (!session->prefill(std::vector<int32_t>(ids, ids + count), error))
      return fail(HETRT_INVALID_ARGUMENT, error);
    *out_logits = session->logits();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_decode(hetrt_session_t *session, int32_t id,
                                    const float **out_logits) {
  if (!out_logits)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_session_decode: out_logits is NULL");
  *out_logits = nullptr;
  if (!session)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_session_decode: session is NULL");
  return guarded([&] {
    std::string error;
    if (!session->decode(id, error))
      return fail(HETRT_INVALID_ARGUMENT, error);
    *out_logits = session->logits();
    return HETRT_OK;
  });
}

void hetrt_session_reset(hetrt_session_t *session) {
  if (session)
    session->reset();
}

namespace {

/// The KV cache of `session` (on any device), or null with the failure
/// recorded.
hetrt::core::KvCache *kvCacheOf(const hetrt_session_t *session,
                                const char *call, hetrt_status_t &status) {
  if (!session) {
    status = fail(HETRT_INVALID_ARGUMENT, std::string(call) + ": session is NULL");
    return nullptr;
  }
  return &const_cast<hetrt_session_t *>(session)->kv();
}

/// A failed run of `kv`'s session, with the status of its kind.
hetrt_status_t runFailure(const hetrt::core::KvCache &kv,
                          const std::string &error) {
  return fail(statusOf(kv.lastFailure()), error);
}

} // namespace

hetrt_status_t hetrt_session_sequence_create(hetrt_session_t *session,
                                             int32_t *out_sequence) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_create", status);
  if (!kv)
    return status;
  if (!out_sequence)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_create: out_sequence is NULL");
  return guarded([&] {
    *out_sequence = kv->createSequence();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_sequence_fork(hetrt_session_t *session,
                                           int32_t from, int64_t tokens,
                                           int32_t *out_sequence) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_fork", status);
  if (!kv)
    return status;
  if (!out_sequence)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_fork: out_sequence is NULL");
  return guarded([&] {
    std::string error;
    if (!kv->forkSequence(from, tokens, *out_sequence, error))
      return fail(HETRT_INVALID_ARGUMENT, error);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_sequence_remove(hetrt_session_t *session,
                                             int32_t sequence) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_remove", status);
  if (!kv)
    return status;
  return guarded([&] {
    std::string error;
    if (!kv->removeSequence(sequence, error))
      return fail(HETRT_INVALID_ARGUMENT, error);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_sequence_prefill(hetrt_session_t *session,
                                              int32_t sequence,
                                              const int32_t *ids, size_t count,
                                              const float **out_logits) {
  if (!out_logits)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_prefill: out_logits is NULL");
  *out_logits = nullptr;
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_prefill", status);
  if (!kv)
    return status;
  if (!ids || count == 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_prefill: needs at least one id");
  return guarded([&] {
    std::string error;
    if (!session->prefill(sequence, std::vector<int32_t>(ids, ids + count),
                          error))
      return runFailure(*kv, error);
    *out_logits = session->logits();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_sequence_decode(hetrt_session_t *session,
                                             int32_t sequence, int32_t id,
                                             const float **out_logits) {
  if (!out_logits)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_decode: out_logits is NULL");
  *out_logits = nullptr;
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_decode", status);
  if (!kv)
    return status;
  return guarded([&] {
    std::string error;
    if (!session->decode(sequence, id, error))
      return runFailure(*kv, error);
    *out_logits = session->logits();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_decode_batch(hetrt_session_t *session,
                                          const int32_t *sequences,
                                          const int32_t *ids, size_t count,
                                          const float **out_logits) {
  if (!out_logits)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_decode_batch: out_logits is NULL");
  *out_logits = nullptr;
  if (!session)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_decode_batch: NULL session");
  if (!sequences || !ids || count == 0)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_decode_batch: needs at least one sequence and "
                "its id");
  return guarded([&] {
    std::string error;
    std::vector<int32_t> members(sequences, sequences + count);
    std::vector<int32_t> tokens(ids, ids + count);
    if (session->spirv) {
      if (!session->spirv->decodeBatch(members, tokens, error))
        return session->spirv->maxBatch() == 0
                   ? fail(HETRT_UNSUPPORTED,
                          "hetrt_session_decode_batch: " + error)
                   : runFailure(session->spirv->kvCache(), error);
      *out_logits = session->spirv->logits();
      return HETRT_OK;
    }
    if (!session->session->decodeBatch(members, tokens, error))
      return runFailure(session->session->kvCache(), error);
    *out_logits = session->session->logits();
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_max_batch(const hetrt_session_t *session,
                                       int64_t *out_count) {
  if (!out_count)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_max_batch: out_count is NULL");
  *out_count = 0;
  if (!session)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_session_max_batch: NULL session");
  *out_count = session->spirv ? session->spirv->maxBatch()
                              : std::numeric_limits<int32_t>::max();
  return HETRT_OK;
}

hetrt_status_t hetrt_session_sequence_position(const hetrt_session_t *session,
                                               int32_t sequence,
                                               int64_t *out_position) {
  hetrt_status_t status = HETRT_OK;
  const hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_sequence_position", status);
  if (!kv)
    return status;
  if (!out_position)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_position: out_position is NULL");
  if (!kv->hasSequence(sequence))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_sequence_position: there is no sequence " +
                    std::to_string(sequence));
  *out_position = kv->position(sequence);
  return HETRT_OK;
}

hetrt_status_t hetrt_session_kv_stats(const hetrt_session_t *session,
                                      hetrt_kv_stats_t *out_stats) {
  hetrt_status_t status = HETRT_OK;
  const hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_kv_stats", status);
  if (!kv)
    return status;
  if (!out_stats)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_kv_stats: out_stats is NULL");
  hetrt::core::KvUsage usage = kv->usage();
  *out_stats = {usage.blockSize,      usage.blocks,
                usage.freeBlocks,     usage.sharedBlocks,
                usage.copiedBlocks,   usage.cachedBlocks,
                usage.evictedBlocks,  usage.reusedTokens,
                usage.blockBytes,     usage.swaps.toHost,
                usage.swaps.fromHost, usage.swaps.toDisk,
                usage.swaps.fromDisk,  usage.swaps.hostBytes,
                usage.swaps.diskBytes,
                usage.hostBudgetBlocks >= INT64_MAX / 4 ? -1
                                                        : usage.hostBudgetBlocks,
                usage.diskBudgetBlocks,
                usage.tiersInt8 ? 1 : 0,
                usage.tierBlockBytes};
  return HETRT_OK;
}

hetrt_status_t hetrt_session_set_kv_tier_format(hetrt_session_t *session,
                                                const char *format) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_set_kv_tier_format", status);
  if (!kv)
    return status;
  std::string name = format ? format : "";
  if (name != "exact" && name != "int8")
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_set_kv_tier_format: format \"" +
                    hetrt::format::printable(name) +
                    "\" is not one of exact, int8");
  return guarded([&] {
    std::string error;
    if (!kv->setTierFormat(name == "int8" ? hetrt::core::KvTierFormat::Int8
                                             : hetrt::core::KvTierFormat::Exact,
                              error))
      return fail(HETRT_INVALID_ARGUMENT,
                  "hetrt_session_set_kv_tier_format: " + error);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_set_kv_budget(hetrt_session_t *session,
                                           const char *space, uint64_t bytes,
                                           const char *directory) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_set_kv_budget", status);
  if (!kv)
    return status;
  if (!space)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_session_set_kv_budget: space is NULL");
  return guarded([&] {
    std::string error;
    if (!kv->setBudget(space, bytes, error, directory ? directory : ""))
      return fail(HETRT_INVALID_ARGUMENT, error);
    return HETRT_OK;
  });
}

hetrt_status_t hetrt_session_set_prefix_caching(hetrt_session_t *session,
                                                int enabled) {
  hetrt_status_t status = HETRT_OK;
  hetrt::core::KvCache *kv =
      kvCacheOf(session, "hetrt_session_set_prefix_caching", status);
  if (!kv)
    return status;
  kv->setPrefixCaching(enabled != 0);
  return HETRT_OK;
}

hetrt_status_t hetrt_sampler_create(const hetrt_sampling_params_t *params,
                                    hetrt_sampler_t **out_sampler) {
  if (!out_sampler)
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_sampler_create: out_sampler is NULL");
  *out_sampler = nullptr;
  if (!params || !(params->temperature >= 0) || params->top_k < 0 ||
      !(params->top_p >= 0 && params->top_p <= 1) ||
      !(params->repetition_penalty > 0))
    return fail(HETRT_INVALID_ARGUMENT,
                "hetrt_sampler_create: needs temperature >= 0, top_k >= 0, "
                "0 <= top_p <= 1 (0 keeps the most likely token, as in "
                "llama.cpp) and repetition_penalty > 0");
  return guarded([&] {
    hetrt::core::SamplingParams core;
    core.temperature = params->temperature;
    core.topK = params->top_k;
    core.topP = params->top_p;
    core.repetitionPenalty = params->repetition_penalty;
    core.seed = params->seed;
    *out_sampler = new hetrt_sampler_t(core);
    return HETRT_OK;
  });
}

void hetrt_sampler_release(hetrt_sampler_t *sampler) { delete sampler; }

hetrt_status_t hetrt_sampler_sample(hetrt_sampler_t *sampler,
                                    const float *logits, int32_t vocab_size,
                                    const int32_t *history,
                                    size_t history_count, int32_t *out_id) {
  if (!out_id)
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_sampler_sample: out_id is NULL");
  *out_id = 0;
  if (!sampler || !logits || vocab_size <= 0 || (!history && history_count))
    return fail(HETRT_INVALID_ARGUMENT, "hetrt_sampler_sample: bad argument");
  return guarded([&] {
    sampler->history.assign(history, history + history_count);
    *out_id = sampler->sampler.sample(logits, vocab_size, sampler->history);
    return HETRT_OK;
  });
}

} // extern "C"
