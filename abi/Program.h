// The program of a model step over one or more devices: the buffers a step
// of the model uses (each in the memory of one device) and the steps that
// fill them, in order: kernel dispatches (of a target's kernel library, or
// of the code a target compiled for a segment), transfers of a buffer from
// one device's memory to another's, and the host's own small steps. The
// compiler lowers the het ops of a partitioned model to it; the runtime
// plays it over the devices for a prefill or a decode step, ordering each
// transfer after the work that wrote its source. Sizes and kernel parameters
// may depend on the step: the tokens it processes and the keys the cache
// holds after it.
#ifndef HETC_ABI_PROGRAM_H
#define HETC_ABI_PROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace hetc::abi {

/// Bumped on any change to the structures below or their meaning.
inline constexpr int kProgramVersion = 5;

/// ceil((constant + perToken * tokens + perKey * keys) / divisor).
struct ProgramValue {
  int64_t constant = 0;
  int64_t perToken = 0;
  int64_t perKey = 0;
  int64_t divisor = 1;

  static ProgramValue fixed(int64_t value) { return {value, 0, 0, 1}; }
  static ProgramValue tokens(int64_t factor = 1) { return {0, factor, 0, 1}; }
  static ProgramValue keys() { return {0, 0, 1, 1}; }

  int64_t at(int64_t tokenCount, int64_t keyCount) const {
    int64_t value = constant + perToken * tokenCount + perKey * keyCount;
    return divisor == 1 ? value : (value + divisor - 1) / divisor;
  }
  bool operator==(const ProgramValue &other) const {
    return constant == other.constant && perToken == other.perToken &&
           perKey == other.perKey && divisor == other.divisor;
  }
};

enum class BufferRole {
  /// The step's token ids (i32), written by the host.
  Tokens,
  /// Their positions (i32), written by the host.
  Positions,
  /// A weight of the model, uploaded once from the GGUF by tensor name.
  Weight,
  /// Intermediate values, reused once their last reader has run.
  Activation,
  /// One layer's KV cache, kept across steps.
  KvCache,
  /// cos and sin per (token, pair), computed by the host (RopeTable step).
  RopeTable,
  /// The logits of the step's last token, read back by the host.
  Logits,
  /// The model file's tensor data as a whole, which code compiled for a CPU
  /// segment reads at the offsets it was compiled with; mapped, not copied.
  WeightFile,
  /// Where a weight the plan streams (kept in another device's memory, the
  /// source of a Transfer step) lands before the steps that read it. The
  /// programs of a model share it by name: they never run at once.
  StreamedWeight,
  /// The sequence's block table (i32 block ids, one per block of the
  /// cache's slots), written by the host: the KV caches are paged, and the
  /// kernels find position p in block table[p / block size].
  BlockTable,
};

/// A device the program runs on: the id the plan gave it (the runtime's
/// device name, "cpu0", "vulkan0"; empty in a one-device program, which runs
/// on the device the caller picks) and the target whose code it runs.
struct ProgramDevice {
  std::string name;
  /// "x86" (code the x86 target compiled for the program's CPU segments),
  /// "spirv", "nvptx" or "amdgpu" (the kernel library built for the
  /// target), or "host-memory": a CPU that runs nothing, whose memory holds
  /// the weights other devices stream.
  std::string target;
};

struct ProgramBuffer {
  std::string name;
  BufferRole role = BufferRole::Activation;
  ProgramValue bytes;
  /// The GGUF tensor of a Weight buffer.
  std::string weight;
  /// Index into Program::devices of the device whose memory holds it.
  int device = 0;
  /// A KvCache's layout: how many runs of bytes hold one block's positions
  /// in each of its two parts (keys, values). 1 in the kernel library's
  /// [2, slots, kv_heads * head_dim]; kv_heads in the CPU code's [2,
  /// kv_heads, slots, head_dim], one run per head.
  int64_t runs = 1;
};

enum class StepKind {
  /// A kernel of the device's code over `buffers` (its binding order) and
  /// `params`, on `grid` workgroups. SPIR-V kernels read the params as a
  /// buffer of i32 values bound after `buffers`; code compiled for a CPU
  /// segment takes them as the sizes of its bindings' dynamic dimensions.
  Dispatch,
  /// The host fills buffers[0] with cos and sin of position * frequency for
  /// each token of buffers[1] (positions) and pair j < headDim / 2, where
  /// frequency = theta^(-2j / rotaryDim) / factor_j (factors from the Weight
  /// buffers[2] when present) and positions are multiplied by
  /// positionScale, exactly as the CPU's RoPE computes its angles.
  RopeTable,
  /// Copies params[0] bytes from buffers[0] to buffers[1], which may lie in
  /// different devices' memories; `device` is the target's. Between two
  /// devices the copy runs beside the target's other work, after what the
  /// program gave both devices before it, and only a Wait step makes the
  /// target's later steps see it.
  Transfer,
  /// The device's later steps wait for transfer step `transfer` (an earlier
  /// transfer between devices into this device). Every such transfer is
  /// waited for before a step touches its target, and by the program's end.
  Wait,
};

struct ProgramStep {
  StepKind kind = StepKind::Dispatch;
  /// Index into Program::devices of the device that runs it.
  int device = 0;
  std::string kernel;
  std::vector<int32_t> buffers;
  std::vector<ProgramValue> params;
  ProgramValue grid[3] = {ProgramValue::fixed(1), ProgramValue::fixed(1),
                          ProgramValue::fixed(1)};
  // Wait only: the index of the transfer step it waits for.
  int32_t transfer = -1;
  // RopeTable only.
  float ropeTheta = 0;
  int64_t rotaryDim = 0;
  int64_t headDim = 0;
  float positionScale = 1;
};

struct Program {
  /// At least one.
  std::vector<ProgramDevice> devices = {{"", "spirv"}};
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramStep> steps;
  /// Slots of a block of the paged KV caches its block table indexes (0
  /// for a program that keeps no cache).
  int64_t kvBlockSize = 0;
};

} // namespace hetc::abi

#endif // HETC_ABI_PROGRAM_H
