// The roofline cost model: the time of each part of a model on a device from
// its FLOPs and bytes, the device's peaks at the op's data type, the
// bandwidth of the memory its weights and KV cache live in, and a launch
// overhead per kernel. No IR: planning needs only a ModelShape.
#ifndef HETC_COST_COSTMODEL_H
#define HETC_COST_COSTMODEL_H

#include "abi/CodeRecord.h"
#include "hetc/Cost/ModelShape.h"
#include "hetc/Hardware/Catalog.h"

#include <algorithm>
#include <string>
#include <vector>

namespace hetc::cost {

/// The request being costed.
struct Workload {
  /// Sequences decoded together.
  int64_t batch = 1;
  /// Tokens in the KV cache at the decode step costed.
  int64_t context = 512;
  /// Tokens of the prompt a prefill processes.
  int64_t promptTokens = 128;

  /// Tokens each sequence's KV cache holds: the context of the decode step,
  /// which includes the prompt, and never less than the prompt itself.
  int64_t kvTokens() const { return context > promptTokens ? context : promptTokens; }
  /// The positions those tokens take in a paged cache: whole blocks, as the
  /// runtime allocates them.
  int64_t kvPositions() const {
    constexpr int64_t block = hetrt::format::kDefaultKvBlockSize;
    return (kvTokens() + block - 1) / block * block;
  }
};

/// Parts of a decoder the planner places as a whole.
enum class UnitKind { Embedding, Attention, Ffn, Output };

struct Unit {
  UnitKind kind = UnitKind::Ffn;
  /// Decoder layer, -1 for the embedding and the output.
  int layer = -1;
  std::string name;
  /// Stored weight bytes (what residency costs in capacity).
  uint64_t weightBytes = 0;
  /// Weight bytes one decode step reads at batch 1: a row for the embedding,
  /// the used experts of a mixture.
  double weightBytesPerStep = 0;
  /// The whole model's weightBytesPerStep: how much a step streams, which
  /// decides how much of it the caches keep between steps. (A device given
  /// part of a model streams less and keeps more; counting the whole model
  /// errs slow.)
  double modelWeightBytesPerStep = 0;
  /// Matmul FLOPs per token (2 per multiply-add).
  double flopsPerToken = 0;
  /// Attention FLOPs per token per token of context (scores and weighted sum).
  double attentionFlopsPerContext = 0;
  /// Elements per attention head (attention units only).
  int64_t headDim = 0;
  /// The model's hidden size: how wide its matmuls' rows of activations are.
  int64_t width = 0;
  /// KV-cache bytes per token of context (one layer's K and V).
  double kvBytesPerContext = 0;
  /// Kernels a step of the CPU code calls (programDispatches gives the
  /// device programs').
  int kernels = 0;
  /// An FFN of experts (a mixture), which no device program fuses.
  bool experts = false;
  /// The storage of most of its weight bytes.
  hetrt::format::BlockFormat format = hetrt::format::BlockFormat::F32;
};

/// The index, among the `numUnits` units of unitsOf, of the unit that holds
/// `weight` (classified by classifyWeight). Global tables other than the
/// embedding and the output (rope_freqs) count with the output.
size_t unitIndexOf(const WeightInfo &weight, size_t numUnits);

/// The units of `shape` in execution order; `kvBytesPerElement` is the KV
/// cache's element size.
std::vector<Unit> unitsOf(const ModelShape &shape, double kvBytesPerElement);

/// Keys one workgroup of the device programs' decode attention reads: a
/// cache holding more is split over workgroups, whose partial results a
/// second dispatch combines (the SPIR-V program builder's split).
inline constexpr int64_t kProgramKeysPerSplit = 256;

/// Kernels `unit` dispatches per step on `device`: the CPU code's calls, or
/// the device programs' dispatches of the kernel library, fused as the
/// program builder fuses them (a residual add with the next norm, a decode
/// step's gate and up products, and on CUDA and HIP its query, key and value
/// products); `cacheTokens` is the KV cache's capacity (a decode step
/// splits attention over more than kProgramKeysPerSplit).
int programDispatches(const Unit &unit, const hardware::Device &device,
                      bool decode, int64_t cacheTokens);

/// Achieved fractions of the peaks.
struct Efficiency {
  double compute = 0.5;
  double memory = 0.8;
};

struct Estimate {
  double computeSeconds = 0;
  double memorySeconds = 0;
  /// Attention over the KV cache as its own kernels, where the device's
  /// calibration measured their rate: they run after the projections, so
  /// their time adds to the rest. Otherwise 0, and the cache's bytes and
  /// the attention's FLOPs count with memory and compute.
  double attentionSeconds = 0;
  double overheadSeconds = 0;
  double seconds() const {
    return std::max(computeSeconds, memorySeconds) + attentionSeconds +
           overheadSeconds;
  }
  bool memoryBound() const { return memorySeconds >= computeSeconds; }
  Estimate &operator+=(const Estimate &other) {
    computeSeconds += other.computeSeconds;
    memorySeconds += other.memorySeconds;
    attentionSeconds += other.attentionSeconds;
    overheadSeconds += other.overheadSeconds;
    return *this;
  }
};

/// The data type a device computes a `format` weight in: hetc's CPU code
/// widens every format to f32; accelerators run f16/bf16 matrix units.
hardware::DataType computeType(const hardware::Device &device,
                               hetrt::format::BlockFormat format);

/// One decode step (every sequence of the batch emits one token) of `unit`
/// on `device`, its weights read from `weightTier` and its KV cache from
/// `kvTier`.
Estimate decodeStep(const Unit &unit, const Workload &workload,
                    const hardware::Device &device,
                    const hardware::MemoryTier &weightTier,
                    const hardware::MemoryTier &kvTier,
                    const Efficiency &efficiency);

/// A prefill of `workload.promptTokens` tokens (per sequence) of `unit`.
Estimate prefill(const Unit &unit, const Workload &workload,
                 const hardware::Device &device,
                 const hardware::MemoryTier &weightTier,
                 const hardware::MemoryTier &kvTier,
                 const Efficiency &efficiency);

/// Choosing the next token of each of `batch` sequences from
/// `vocabSize` logits with hetc's sampler on `cpu`: the device's calibration
/// when it measured the sampler, otherwise the figures hetrt-sampler-bench
/// measured on a Zen 5 core.
double samplingSeconds(const hardware::Device &cpu, int64_t vocabSize,
                       int64_t batch);

} // namespace hetc::cost

#endif // HETC_COST_COSTMODEL_H
