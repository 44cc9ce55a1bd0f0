// libhetrt's thin, header-only C++ wrapper over its C API (hetrt.h): handles
// that release themselves, strings and vectors instead of buffers and
// counts, and each failure as a Status holding the status code and the
// library's message. It adds no behavior: what a C++ program does through
// it, a C program does through hetrt.h. `hetc run`, `bench` and `calibrate`
// are built on it, so embedders get what the command line gets.
#ifndef HETRT_HETRT_HPP
#define HETRT_HETRT_HPP

#include "hetrt/hetrt.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hetrt::api {

/// A call's outcome: HETRT_OK, or the status with hetrt_last_error_message().
struct Status {
  hetrt_status_t code = HETRT_OK;
  std::string message;
  bool ok() const { return code == HETRT_OK; }
};

namespace detail {

/// Records `code` (and the library's message when it failed) in `status`.
inline bool check(hetrt_status_t code, Status &status) {
  status.code = code;
  status.message = code == HETRT_OK ? "" : hetrt_last_error_message();
  return code == HETRT_OK;
}

template <typename T, void (*Release)(T *)> struct Releaser {
  void operator()(T *handle) const { Release(handle); }
};

} // namespace detail

struct MemoryInfo {
  std::string name;
  uint64_t capacityBytes = 0;
  bool hostVisible = false;
};

/// The SPIR-V a device runs: version as major * 100 + minor (0: none).
struct SpirvInfo {
  int32_t version = 0;
  uint32_t subgroupSize = 0;
  std::vector<std::string> capabilities;
};

struct DeviceInfo {
  /// The index the _on_device calls take.
  int32_t index = 0;
  std::string name;
  std::string kind;
  std::string description;
  std::vector<MemoryInfo> memories;
  SpirvInfo spirv;
};

/// Why each back end that found no device is unavailable.
inline bool listUnavailable(std::vector<std::string> &reasons,
                            Status &status) {
  reasons.clear();
  int32_t count = 0;
  if (!detail::check(hetrt_device_unavailable_count(&count), status))
    return false;
  for (int32_t r = 0; r < count; ++r) {
    const char *reason = nullptr;
    if (!detail::check(hetrt_device_unavailable_reason(r, &reason), status))
      return false;
    reasons.push_back(reason);
  }
  return true;
}

/// The devices of this machine, in the runtime's order (the CPU first).
inline bool listDevices(std::vector<DeviceInfo> &devices, Status &status) {
  devices.clear();
  int32_t count = 0;
  if (!detail::check(hetrt_device_count(&count), status))
    return false;
  for (int32_t d = 0; d < count; ++d) {
    hetrt_device_info_t info;
    hetrt_spirv_info_t spirv;
    if (!detail::check(hetrt_device_info(d, &info), status) ||
        !detail::check(hetrt_device_spirv_info(d, &spirv), status))
      return false;
    DeviceInfo device;
    device.index = d;
    device.name = info.name;
    device.kind = info.kind;
    device.description = info.description;
    for (int32_t m = 0; m < info.memory_count; ++m) {
      hetrt_memory_info_t memory;
      if (!detail::check(hetrt_device_memory_info(d, m, &memory), status))
        return false;
      device.memories.push_back(
          {memory.name, memory.capacity_bytes, memory.host_visible != 0});
    }
    device.spirv.version = spirv.version;
    device.spirv.subgroupSize = spirv.subgroup_size;
    for (int32_t c = 0; c < spirv.capability_count; ++c) {
      const char *name = nullptr;
      if (!detail::check(hetrt_device_spirv_capability(d, c, &name), status))
        return false;
      device.spirv.capabilities.push_back(name);
    }
    devices.push_back(std::move(device));
  }
  return true;
}

/// Memory in one of a device's spaces (hetrt_buffer_t).
class Buffer {
public:
  static std::unique_ptr<Buffer> create(int32_t device, int32_t memory,
                                        uint64_t size, Status &status) {
    hetrt_buffer_t *handle = nullptr;
    if (!detail::check(hetrt_buffer_create(device, memory, size, &handle),
                       status))
      return nullptr;
    return std::unique_ptr<Buffer>(new Buffer(handle, size));
  }
  hetrt_buffer_t *handle() const { return handle_.get(); }
  uint64_t size() const { return size_; }
  /// The bytes of a buffer in a host-visible space, else null.
  void *hostPointer() const { return hetrt_buffer_host_pointer(handle()); }

private:
  Buffer(hetrt_buffer_t *handle, uint64_t size) : handle_(handle), size_(size) {}
  std::unique_ptr<hetrt_buffer_t,
                  detail::Releaser<hetrt_buffer_t, hetrt_buffer_release>>
      handle_;
  uint64_t size_;
};

struct KernelSignature {
  std::string entryPoint;
  int32_t bindings = 0;
  uint32_t pushConstantBytes = 0;
};

/// Code loaded on a device (hetrt_executable_t).
class Executable {
public:
  static std::unique_ptr<Executable>
  load(int32_t device, hetrt_executable_format_t format,
       const std::string &code, const std::vector<KernelSignature> &kernels,
       Status &status) {
    std::vector<hetrt_kernel_signature_t> signatures;
    for (const KernelSignature &kernel : kernels)
      signatures.push_back({kernel.entryPoint.c_str(), kernel.bindings,
                            kernel.pushConstantBytes});
    hetrt_executable_t *handle = nullptr;
    if (!detail::check(hetrt_executable_load(device, format, code.data(),
                                             code.size(), signatures.data(),
                                             signatures.size(), &handle),
                       status))
      return nullptr;
    std::unique_ptr<Executable> executable(new Executable(handle));
    for (const KernelSignature &kernel : kernels)
      executable->entryPoints_.push_back(kernel.entryPoint);
    return executable;
  }
  hetrt_executable_t *handle() const { return handle_.get(); }
  /// The index of the kernel with `entryPoint`, or -1.
  int32_t kernelIndex(const std::string &entryPoint) const {
    for (size_t k = 0; k < entryPoints_.size(); ++k)
      if (entryPoints_[k] == entryPoint)
        return static_cast<int32_t>(k);
    return -1;
  }

private:
  explicit Executable(hetrt_executable_t *handle) : handle_(handle) {}
  std::unique_ptr<hetrt_executable_t,
                  detail::Releaser<hetrt_executable_t, hetrt_executable_release>>
      handle_;
  std::vector<std::string> entryPoints_;
};

/// An in-order stream of work on one device (hetrt_queue_t). Buffers,
/// executables and host memory must outlive the work (finish()).
class Queue {
public:
  static std::unique_ptr<Queue> create(int32_t device, Status &status) {
    hetrt_queue_t *handle = nullptr;
    if (!detail::check(hetrt_queue_create(device, &handle), status))
      return nullptr;
    return std::unique_ptr<Queue>(new Queue(handle));
  }
  bool fill(Buffer &buffer, uint64_t offset, uint64_t size, uint32_t pattern,
            int32_t patternBytes, Status &status) {
    return detail::check(hetrt_queue_fill(handle_.get(), buffer.handle(),
                                          offset, size, pattern, patternBytes),
                         status);
  }
  bool copy(Buffer &source, uint64_t sourceOffset, Buffer &target,
            uint64_t targetOffset, uint64_t size, Status &status) {
    return detail::check(hetrt_queue_copy(handle_.get(), source.handle(),
                                          sourceOffset, target.handle(),
                                          targetOffset, size),
                         status);
  }
  bool write(const void *host, Buffer &target, uint64_t targetOffset,
             uint64_t size, Status &status) {
    return detail::check(hetrt_queue_write(handle_.get(), host,
                                           target.handle(), targetOffset, size),
                         status);
  }
  bool read(Buffer &source, uint64_t sourceOffset, void *host, uint64_t size,
            Status &status) {
    return detail::check(hetrt_queue_read(handle_.get(), source.handle(),
                                          sourceOffset, host, size),
                         status);
  }
  bool dispatch(Executable &executable, int32_t kernel,
                const uint32_t groups[3], const std::vector<Buffer *> &bindings,
                const std::string &pushConstants, Status &status) {
    std::vector<hetrt_buffer_t *> handles;
    for (Buffer *buffer : bindings)
      handles.push_back(buffer ? buffer->handle() : nullptr);
    return detail::check(
        hetrt_queue_dispatch(handle_.get(), executable.handle(), kernel, groups,
                             handles.data(), handles.size(),
                             pushConstants.data(), pushConstants.size()),
        status);
  }
  /// Blocks until the queue's work is done; its first failure, if any.
  bool finish(Status &status) {
    return detail::check(hetrt_queue_finish(handle_.get()), status);
  }

private:
  explicit Queue(hetrt_queue_t *handle) : handle_(handle) {}
  std::unique_ptr<hetrt_queue_t,
                  detail::Releaser<hetrt_queue_t, hetrt_queue_release>>
      handle_;
};

/// A compiled model (hetrt_model_open); shared by sessions on any thread.
class Model {
public:
  /// Opens the pack with the weights at `weights` ("": the path the pack
  /// records); null with `status` on failure.
  static std::unique_ptr<Model> open(const std::string &pack,
                                     const std::string &weights,
                                     Status &status) {
    hetrt_model_t *handle = nullptr;
    if (!detail::check(hetrt_model_open(pack.c_str(),
                                        weights.empty() ? nullptr
                                                        : weights.c_str(),
                                        &handle),
                       status))
      return nullptr;
    std::unique_ptr<Model> model(new Model(handle));
    if (!detail::check(hetrt_model_describe(handle, &model->description_),
                       status))
      return nullptr;
    return model;
  }

  hetrt_model_t *handle() const { return handle_.get(); }
  /// Valid while the model lives.
  const hetrt_model_description_t &description() const { return description_; }
  int32_t vocabSize() const { return description_.vocab_size; }
  int32_t contextLength() const { return description_.context_length; }
  /// The plan's predicted decode step with `context` positions cached
  /// (hetrt_model_planned_decode_seconds).
  bool plannedDecodeSeconds(int64_t context, double &seconds,
                            Status &status) const {
    return detail::check(
        hetrt_model_planned_decode_seconds(handle(), context, &seconds),
        status);
  }
  /// The KV cache each session allocates.
  bool kvCacheInfo(hetrt_kv_cache_info_t &info, Status &status) const {
    return detail::check(hetrt_model_kv_cache_info(handle(), &info), status);
  }

  bool maxTextBytes(uint64_t tokens, uint64_t &bytes, Status &status) const {
    return detail::check(
        hetrt_model_max_text_bytes(handle(), tokens, &bytes), status);
  }
  bool tokenize(const std::string &text, bool addSpecial,
                std::vector<int32_t> &ids, Status &status) const {
    // Bytes bound the ids; a second call only when the guess is short.
    ids.assign(text.size() + 2, 0);
    size_t count = 0;
    hetrt_status_t code =
        hetrt_model_tokenize(handle(), text.data(), text.size(), addSpecial,
                             ids.data(), ids.size(), &count);
    if (code == HETRT_INVALID_ARGUMENT && count > ids.size()) {
      ids.assign(count, 0);
      code = hetrt_model_tokenize(handle(), text.data(), text.size(),
                                  addSpecial, ids.data(), ids.size(), &count);
    }
    if (!detail::check(code, status))
      return false;
    ids.resize(count);
    return true;
  }
  bool detokenize(const std::vector<int32_t> &ids, std::string &text,
                  Status &status) const {
    size_t length = 0;
    hetrt_status_t code = hetrt_model_detokenize(handle(), ids.data(),
                                                 ids.size(), nullptr, 0,
                                                 &length);
    if (code != HETRT_OK && length == 0)
      return detail::check(code, status);
    text.assign(length, '\0');
    return detail::check(hetrt_model_detokenize(handle(), ids.data(),
                                                ids.size(), text.data(),
                                                text.size(), &length),
                         status);
  }
  /// One id's text as it continues a sequence.
  bool tokenPiece(int32_t id, std::string &piece, Status &status) const {
    char buffer[64];
    size_t length = 0;
    hetrt_status_t code =
        hetrt_model_token_piece(handle(), id, buffer, sizeof buffer, &length);
    if (code == HETRT_OK) {
      piece.assign(buffer, length);
      return detail::check(code, status);
    }
    if (length <= sizeof buffer)
      return detail::check(code, status);
    piece.assign(length, '\0');
    return detail::check(hetrt_model_token_piece(handle(), id, piece.data(),
                                                 piece.size(), &length),
                         status);
  }
  /// Tokenizes with the vocabulary's control tokens in the text recognized
  /// (a rendered chat's turn markers).
  bool tokenizeSpecial(const std::string &text, bool addSpecial,
                       std::vector<int32_t> &ids, Status &status) const {
    ids.assign(text.size() + 2, 0);
    size_t count = 0;
    hetrt_status_t code = hetrt_model_tokenize_special(
        handle(), text.data(), text.size(), addSpecial, 1, ids.data(),
        ids.size(), &count);
    if (code == HETRT_INVALID_ARGUMENT && count > ids.size()) {
      ids.assign(count, 0);
      code = hetrt_model_tokenize_special(handle(), text.data(), text.size(),
                                          addSpecial, 1, ids.data(),
                                          ids.size(), &count);
    }
    if (!detail::check(code, status))
      return false;
    ids.resize(count);
    return true;
  }
  /// The family of the model's chat template ("" when it ships none).
  bool chatTemplate(std::string &name, Status &status) const {
    const char *family = nullptr;
    if (!detail::check(hetrt_model_chat_template(handle(), &family), status))
      return false;
    name = family;
    return true;
  }
  /// `messages` as {role, content} pairs rendered in family `templateName`.
  bool renderChat(const std::string &templateName,
                  const std::vector<std::pair<std::string, std::string>> &messages,
                  bool addAssistant, std::string &text, Status &status) const {
    std::vector<hetrt_chat_message_t> list;
    for (const auto &[role, content] : messages)
      list.push_back({role.c_str(), content.c_str()});
    size_t length = 0;
    hetrt_status_t code = hetrt_model_render_chat(
        handle(), templateName.c_str(), list.data(), list.size(), addAssistant,
        nullptr, 0, &length);
    if (code != HETRT_OK && length == 0)
      return detail::check(code, status);
    text.assign(length, '\0');
    return detail::check(hetrt_model_render_chat(
                             handle(), templateName.c_str(), list.data(),
                             list.size(), addAssistant, text.data(),
                             text.size(), &length),
                         status);
  }
  bool isEndOfGeneration(int32_t id, bool &isEnd, Status &status) const {
    int end = 0;
    if (!detail::check(hetrt_model_is_end_of_generation(handle(), id, &end),
                       status))
      return false;
    isEnd = end != 0;
    return true;
  }

private:
  explicit Model(hetrt_model_t *handle) : handle_(handle) {}
  std::unique_ptr<hetrt_model_t,
                  detail::Releaser<hetrt_model_t, hetrt_model_release>>
      handle_;
  hetrt_model_description_t description_ = {};
};

/// What one device of a session ran (hetrt_device_stats_t).
struct DeviceStats {
  std::string name;
  std::string code;
  int64_t units = 0;
  uint64_t dispatches = 0;
  uint64_t bytesIn = 0;
  uint64_t bytesOut = 0;
  /// hetrt_device_memory_t.
  hetrt_device_memory_t memory = {};
};

/// One sequence's state over a model (hetrt_session_t). Not thread-safe.
class Session {
public:
  /// On the CPU with `threads` kernel threads (0: one per core).
  static std::unique_ptr<Session> create(const Model &model, int32_t threads,
                                         Status &status) {
    hetrt_session_t *handle = nullptr;
    if (!detail::check(hetrt_session_create(model.handle(), threads, &handle),
                       status))
      return nullptr;
    return std::unique_ptr<Session>(new Session(handle, model.vocabSize()));
  }
  /// On device `deviceIndex` (listDevices' index).
  static std::unique_ptr<Session> createOnDevice(const Model &model,
                                                 int32_t deviceIndex,
                                                 int32_t threads,
                                                 Status &status) {
    hetrt_session_t *handle = nullptr;
    if (!detail::check(hetrt_session_create_on_device(
                           model.handle(), deviceIndex, threads, &handle),
                       status))
      return nullptr;
    return std::unique_ptr<Session>(new Session(handle, model.vocabSize()));
  }
  /// Over the devices of the pack's plan.
  static std::unique_ptr<Session> createPlanned(const Model &model,
                                                Status &status) {
    hetrt_session_t *handle = nullptr;
    if (!detail::check(hetrt_session_create_planned(model.handle(), &handle),
                       status))
      return nullptr;
    return std::unique_ptr<Session>(new Session(handle, model.vocabSize()));
  }

  bool prefill(const std::vector<int32_t> &ids, Status &status) {
    return detail::check(
        hetrt_session_prefill(handle_.get(), ids.data(), ids.size(), &logits_),
        status);
  }
  bool decode(int32_t id, Status &status) {
    return detail::check(hetrt_session_decode(handle_.get(), id, &logits_),
                         status);
  }
  /// A new sequence of a CPU session (hetrt_session_sequence_create).
  bool createSequence(int32_t &sequence, Status &status) {
    return detail::check(
        hetrt_session_sequence_create(handle_.get(), &sequence), status);
  }
  bool prefill(int32_t sequence, const std::vector<int32_t> &ids,
               Status &status) {
    return detail::check(hetrt_session_sequence_prefill(handle_.get(),
                                                        sequence, ids.data(),
                                                        ids.size(), &logits_),
                         status);
  }
  /// Another sequence holding `from`'s first `tokens` positions.
  bool forkSequence(int32_t from, int64_t tokens, int32_t &sequence,
                    Status &status) {
    return detail::check(hetrt_session_sequence_fork(handle_.get(), from,
                                                     tokens, &sequence),
                         status);
  }
  /// Frees the sequence's blocks that no other sequence holds.
  bool removeSequence(int32_t sequence, Status &status) {
    return detail::check(
        hetrt_session_sequence_remove(handle_.get(), sequence), status);
  }
  bool decode(int32_t sequence, int32_t id, Status &status) {
    return detail::check(hetrt_session_sequence_decode(handle_.get(), sequence,
                                                       id, &logits_),
                         status);
  }
  /// The most sequences one decodeBatch takes (0: none; decode each
  /// alone).
  bool maxBatch(int64_t &count, Status &status) const {
    return detail::check(hetrt_session_max_batch(handle_.get(), &count),
                         status);
  }
  bool sequencePosition(int32_t sequence, int64_t &position,
                        Status &status) const {
    return detail::check(hetrt_session_sequence_position(handle_.get(),
                                                         sequence, &position),
                         status);
  }
  /// One token of each of `sequences` in one call; logits() then holds a
  /// row per sequence.
  bool decodeBatch(const std::vector<int32_t> &sequences,
                   const std::vector<int32_t> &ids, Status &status) {
    if (sequences.size() != ids.size()) {
      status = {HETRT_INVALID_ARGUMENT,
                "decodeBatch: one id per sequence is needed"};
      return false;
    }
    return detail::check(
        hetrt_session_decode_batch(handle_.get(), sequences.data(), ids.data(),
                                   ids.size(), &logits_),
        status);
  }
  void reset() {
    hetrt_session_reset(handle_.get());
    logits_ = nullptr;
  }
  /// Every decode step on all the session's threads (a CPU session's
  /// choice of fewer for small models off), or the choice back.
  bool setFixedThreads(bool fixed, Status &status) {
    return detail::check(
        hetrt_session_set_fixed_threads(handle_.get(), fixed ? 1 : 0), status);
  }
  /// The last step's logits (vocabSize() of them); null before a step.
  const float *logits() const { return logits_; }
  int32_t vocabSize() const { return vocabSize_; }
  /// Its devices, plan system and threads; valid while it lives.
  hetrt_session_info_t info() const {
    hetrt_session_info_t out = {};
    Status ignored;
    detail::check(hetrt_session_info(handle_.get(), &out), ignored);
    return out;
  }
  std::vector<DeviceStats> deviceStats() const {
    std::vector<DeviceStats> out;
    for (size_t d = 0; d < hetrt_session_device_count(handle_.get()); ++d) {
      hetrt_device_stats_t stats;
      Status ignored;
      if (!detail::check(hetrt_session_device_stats(handle_.get(), d, &stats),
                         ignored))
        break;
      hetrt_device_memory_t memory;
      if (!detail::check(hetrt_session_device_memory(handle_.get(), d, &memory),
                         ignored))
        break;
      out.push_back({stats.device_name, stats.code, stats.units,
                     stats.dispatches, stats.bytes_in, stats.bytes_out,
                     memory});
    }
    return out;
  }
  /// The memory spaces it holds data in (hetrt_session_memory_space).
  std::vector<hetrt_memory_space_t> memorySpaces() const {
    std::vector<hetrt_memory_space_t> out;
    size_t count = 0;
    Status ignored;
    if (!detail::check(hetrt_session_memory_space_count(handle_.get(), &count),
                       ignored))
      return out;
    for (size_t i = 0; i < count; ++i) {
      hetrt_memory_space_t space;
      if (!detail::check(hetrt_session_memory_space(handle_.get(), i, &space),
                         ignored))
        break;
      out.push_back(space);
    }
    return out;
  }
  /// Whether a CPU session's prefills take cached prefixes
  /// (hetrt_session_set_prefix_caching).
  bool setPrefixCaching(bool enabled, Status &status) {
    return detail::check(
        hetrt_session_set_prefix_caching(handle_.get(), enabled ? 1 : 0),
        status);
  }
  /// Bounds what `space` ("pool", "host", "numa<N>", "disk") holds of a
  /// session's KV cache (hetrt_session_set_kv_budget).
  bool setKvBudget(const std::string &space, uint64_t bytes, Status &status) {
    return detail::check(hetrt_session_set_kv_budget(handle_.get(),
                                                     space.c_str(), bytes,
                                                     nullptr),
                         status);
  }
  /// How the KV cache's tiers keep blocks: "exact" or "int8"
  /// (hetrt_session_set_kv_tier_format).
  bool setKvTierFormat(const std::string &format, Status &status) {
    return detail::check(
        hetrt_session_set_kv_tier_format(handle_.get(), format.c_str()),
        status);
  }
  /// How a CPU session's paged KV cache is used; nothing for sessions on
  /// other devices.
  std::optional<hetrt_kv_stats_t> kvStats() const {
    hetrt_kv_stats_t stats;
    Status ignored;
    if (!detail::check(hetrt_session_kv_stats(handle_.get(), &stats), ignored))
      return std::nullopt;
    return stats;
  }

private:
  Session(hetrt_session_t *handle, int32_t vocabSize)
      : handle_(handle), vocabSize_(vocabSize) {}
  std::unique_ptr<hetrt_session_t,
                  detail::Releaser<hetrt_session_t, hetrt_session_release>>
      handle_;
  const float *logits_ = nullptr;
  int32_t vocabSize_ = 0;
};

/// Token sampling (hetrt_sampler_t); deterministic for a seed.
class Sampler {
public:
  static std::unique_ptr<Sampler> create(const hetrt_sampling_params_t &params,
                                         Status &status) {
    hetrt_sampler_t *handle = nullptr;
    if (!detail::check(hetrt_sampler_create(&params, &handle), status))
      return nullptr;
    return std::unique_ptr<Sampler>(new Sampler(handle));
  }
  bool sample(const float *logits, int32_t vocabSize,
              const std::vector<int32_t> &history, int32_t &id,
              Status &status) {
    return detail::check(hetrt_sampler_sample(handle_.get(), logits, vocabSize,
                                              history.data(), history.size(),
                                              &id),
                         status);
  }

private:
  explicit Sampler(hetrt_sampler_t *handle) : handle_(handle) {}
  std::unique_ptr<hetrt_sampler_t,
                  detail::Releaser<hetrt_sampler_t, hetrt_sampler_release>>
      handle_;
};

} // namespace hetrt::api

#endif // HETRT_HETRT_HPP
