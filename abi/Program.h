// The program of a device segment: the buffers a step of the model uses and
// the steps that fill them (kernel dispatches of a target's library, and the
// host's own small steps), in order. The compiler builds it from a segment's
// llm ops; the runtime plays it on the segment's device for a prefill or a
// decode step. Sizes and kernel parameters may depend on the step: the
// tokens it processes and the keys the cache holds after it.
#ifndef HETC_ABI_PROGRAM_H
#define HETC_ABI_PROGRAM_H

#include <cstdint>
#include <string>
#include <vector>

namespace hetc::abi {

/// Bumped on any change to the structures below or their meaning.
inline constexpr int kProgramVersion = 1;

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
};

struct ProgramBuffer {
  std::string name;
  BufferRole role = BufferRole::Activation;
  ProgramValue bytes;
  /// The GGUF tensor of a Weight buffer.
  std::string weight;
};

enum class StepKind {
  /// A kernel of the target's library over `buffers` (its binding order)
  /// and `params` (its parameter buffer, i32 values), on `grid` workgroups.
  Dispatch,
  /// The host fills buffers[0] with cos and sin of position * frequency for
  /// each token of buffers[1] (positions) and pair j < headDim / 2, where
  /// frequency = theta^(-2j / rotaryDim) / factor_j (factors from the Weight
  /// buffers[2] when present) and positions are multiplied by
  /// positionScale, exactly as the CPU's RoPE computes its angles.
  RopeTable,
};

struct ProgramStep {
  StepKind kind = StepKind::Dispatch;
  std::string kernel;
  std::vector<int32_t> buffers;
  std::vector<ProgramValue> params;
  ProgramValue grid[3] = {ProgramValue::fixed(1), ProgramValue::fixed(1),
                          ProgramValue::fixed(1)};
  // RopeTable only.
  float ropeTheta = 0;
  int64_t rotaryDim = 0;
  int64_t headDim = 0;
  float positionScale = 1;
};

struct Program {
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramStep> steps;
};

} // namespace hetc::abi

#endif // HETC_ABI_PROGRAM_H
