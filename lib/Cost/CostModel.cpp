// The roofline cost model (see CostModel.h).
#include "hetc/Cost/CostModel.h"

#include <algorithm>
#include <map>

namespace hetc::cost {

using hardware::DataType;
using hetrt::format::BlockFormat;

size_t unitIndexOf(const WeightInfo &weight, size_t numUnits) {
  size_t layer = static_cast<size_t>(std::max(weight.layer, 0));
  switch (weight.role) {
  case WeightRole::Embedding:
    return 0;
  case WeightRole::Output:
    return numUnits - 1;
  case WeightRole::Attention:
    return 1 + 2 * layer;
  case WeightRole::Ffn:
  case WeightRole::Experts:
    return 2 + 2 * layer;
  case WeightRole::Norm:
    if (weight.layer < 0)
      return numUnits - 1;
    return weight.name.find("ffn_norm") != std::string::npos ? 2 + 2 * layer
                                                             : 1 + 2 * layer;
  }
  return 0;
}

std::vector<Unit> unitsOf(const ModelShape &shape, double kvBytesPerElement) {
  std::vector<Unit> units;
  Unit embedding;
  embedding.kind = UnitKind::Embedding;
  embedding.name = "embedding";
  embedding.kernels = 1;
  units.push_back(embedding);
  for (int64_t layer = 0; layer < shape.numLayers; ++layer) {
    Unit attention;
    attention.kind = UnitKind::Attention;
    attention.layer = static_cast<int>(layer);
    attention.name = "layer " + std::to_string(layer) + " attention";
    // norm, Q, K, V, RoPE ×2, KV append ×2, scores, softmax, weighted sum,
    // output projection, residual add.
    attention.kernels = 13;
    attention.attentionFlopsPerContext =
        4.0 * static_cast<double>(shape.numHeads * shape.headDim);
    attention.headDim = shape.headDim;
    attention.kvBytesPerContext = shape.kvBytesPerTokenLayer(kvBytesPerElement);
    Unit ffn;
    ffn.kind = UnitKind::Ffn;
    ffn.layer = static_cast<int>(layer);
    ffn.name = "layer " + std::to_string(layer) + " ffn";
    // norm, gate, up, SiLU·up, down, residual add (a mixture adds the router).
    ffn.kernels = shape.numExperts > 0 ? 8 : 6;
    ffn.experts = shape.numExperts > 0;
    units.push_back(attention);
    units.push_back(ffn);
  }
  Unit output;
  output.kind = UnitKind::Output;
  output.name = "output";
  output.kernels = 2;
  units.push_back(output);

  // Bytes per format of each unit, to name its dominant storage.
  std::vector<std::map<BlockFormat, uint64_t>> formats(units.size());
  for (const WeightInfo &weight : shape.weights) {
    Unit &unit = units[unitIndexOf(weight, units.size())];
    unit.weightBytes += weight.bytes;
    formats[&unit - units.data()][weight.format] += weight.bytes;
    double elements = static_cast<double>(weight.elements);
    double bytes = static_cast<double>(weight.bytes);
    switch (weight.role) {
    case WeightRole::Embedding:
      // A step reads one row per token.
      unit.weightBytesPerStep += bytes / static_cast<double>(shape.vocabSize);
      break;
    case WeightRole::Experts: {
      double used = static_cast<double>(shape.expertsPerToken) /
                    static_cast<double>(shape.numExperts);
      unit.weightBytesPerStep += bytes * used;
      unit.flopsPerToken += 2.0 * elements * used;
      break;
    }
    default:
      unit.weightBytesPerStep += bytes;
      if (weight.role != WeightRole::Norm)
        unit.flopsPerToken += 2.0 * elements;
    }
  }
  // A tied output projection multiplies by the embedding table.
  if (shape.tiedOutput) {
    Unit &out = units.back();
    const Unit &table = units.front();
    out.weightBytesPerStep += static_cast<double>(table.weightBytes);
    out.flopsPerToken +=
        2.0 * static_cast<double>(shape.vocabSize * shape.dim);
    formats.back() = formats.front();
  }
  double modelBytesPerStep = 0;
  for (const Unit &unit : units)
    modelBytesPerStep += unit.weightBytesPerStep;
  for (size_t i = 0; i < units.size(); ++i) {
    units[i].modelWeightBytesPerStep = modelBytesPerStep;
    units[i].width = shape.dim;
    uint64_t best = 0;
    for (auto [format, bytes] : formats[i])
      if (bytes > best) {
        best = bytes;
        units[i].format = format;
      }
  }
  return units;
}

int programDispatches(const Unit &unit, const hardware::Device &device,
                      bool decode, int64_t cacheTokens) {
  if (device.kind == hardware::DeviceKind::Cpu)
    return unit.kernels;
  bool fusedProducts = device.kind == hardware::DeviceKind::Cuda ||
                       device.kind == hardware::DeviceKind::Hip;
  switch (unit.kind) {
  case UnitKind::Embedding:
    return 1; // get_rows
  case UnitKind::Attention:
    if (!decode) // norm, Q, K, V, RoPE, RoPE + KV append, attention, output
      return 8;
    return 1 + (fusedProducts ? 1 : 3) + 2 +
           (cacheTokens > kProgramKeysPerSplit ? 2 : 1) + 1;
  case UnitKind::Ffn:
    if (unit.experts)
      return unit.kernels;
    // norm, gate and up with SwiGLU (decode) or gate, up, SwiGLU, and down.
    return decode ? 3 : 5;
  case UnitKind::Output:
    return 2; // norm, logits
  }
  return unit.kernels;
}

DataType computeType(const hardware::Device &device, BlockFormat format) {
  if (device.kind == hardware::DeviceKind::Cpu)
    return DataType::F32;
  if (format == BlockFormat::BF16 && device.peak(DataType::BF16) > 0)
    return DataType::BF16;
  if (device.peak(DataType::F16) > 0)
    return DataType::F16;
  return DataType::F32;
}

namespace {

/// The name a calibration keys `format`'s rates by.
std::string calibrationKey(BlockFormat format) {
  return std::string(hetrt::format::blockLayout(format).name);
}

/// `attentionFlops`: those of `flops` a decode step's attention kernels do
/// over the cache. A prefill passes 0: its attention works on a block of
/// queries at once, far faster per FLOP than the decode rate at short
/// prompts (and slower at long ones, whose score matrices leave the cache),
/// and is costed with the matmuls. `decode`: the weights are read again
/// every step, so the part the caches keep between steps reads faster.
Estimate estimate(double flops, double weightBytes, double kvBytes,
                  double attentionFlops, bool decode, int kernels, const Unit &unit,
                  const hardware::Device &device,
                  const hardware::MemoryTier &weightTier,
                  const hardware::MemoryTier &kvTier,
                  const Efficiency &efficiency) {
  Estimate result;
  double peak = device.peak(computeType(device, unit.format)) * 1e12 *
                efficiency.compute;
  double weightRate = weightTier.readGBPerS * 1e9 * efficiency.memory;
  double overheadUs = device.launchOverheadUs;
  // Measurements of hetc's own kernels on the device replace the roofline
  // guesses: they include dequantization and whatever the code leaves on
  // the table. They hold for the home tier they were measured in, and for
  // weights streamed from another device's memory, which the programs copy
  // into buffers in that tier ahead of the kernels: those are read no
  // faster than the link brings them in.
  bool ownTier = false;
  for (const hardware::MemoryTier &tier : device.memory)
    ownTier |= &tier == &weightTier;
  bool streamed = !ownTier;
  if (device.calibration && (&weightTier == &device.memory.front() || streamed)) {
    const hardware::Calibration &c = *device.calibration;
    std::string key = calibrationKey(unit.format);
    if (double rate = c.decodeGBPerSAt(key, unit.width)) {
      weightRate = rate * 1e9;
      // The caches lift a small model's rate up to what the format's
      // kernels reach in them, never below the rate past them.
      if (decode) {
        double scaled = weightRate * c.streamScaleAt(unit.modelWeightBytesPerStep);
        auto inCache = c.decodeInCacheGBPerS.find(key);
        if (inCache != c.decodeInCacheGBPerS.end())
          scaled = std::min(scaled, inCache->second * 1e9);
        weightRate = std::max(weightRate, scaled);
      }
    }
    if (double rate = c.prefillTflopsAt(calibrationKey(unit.format), unit.width))
      peak = rate * 1e12;
    overheadUs = c.dispatchUs;
    if (streamed)
      weightRate = std::min(weightRate, weightTier.readGBPerS * 1e9 *
                                            efficiency.memory);
  }
  double kvSeconds = kvBytes / (kvTier.readGBPerS * 1e9 * efficiency.memory);
  // Measured attention: the slower of moving the cache and the arithmetic
  // at the calibrated rate (far below the matmul peak: a loop over
  // positions with an exponential each).
  double attentionRate =
      device.calibration ? device.calibration->attentionGflopsAt(unit.headDim) : 0;
  if (attentionFlops > 0 && attentionRate > 0 && &kvTier == &device.memory.front()) {
    result.attentionSeconds =
        std::max(kvSeconds, attentionFlops / (attentionRate * 1e9));
    kvSeconds = 0;
    flops -= attentionFlops;
  }
  result.computeSeconds = peak > 0 ? flops / peak : 0;
  result.memorySeconds = weightBytes / weightRate + kvSeconds;
  result.overheadSeconds = kernels * overheadUs * 1e-6;
  return result;
}

} // namespace

Estimate decodeStep(const Unit &unit, const Workload &workload,
                    const hardware::Device &device,
                    const hardware::MemoryTier &weightTier,
                    const hardware::MemoryTier &kvTier,
                    const Efficiency &efficiency) {
  double batch = static_cast<double>(workload.batch);
  double context = static_cast<double>(workload.context);
  double flops = batch * (unit.flopsPerToken +
                          unit.attentionFlopsPerContext * context);
  // Weights are read once per step for the whole batch; each sequence reads
  // its own KV cache.
  double kvBytes = batch * unit.kvBytesPerContext * context;
  double attentionFlops = batch * unit.attentionFlopsPerContext * context;
  return estimate(flops, unit.weightBytesPerStep, kvBytes, attentionFlops,
                  /*decode=*/true,
                  programDispatches(unit, device, true, workload.kvTokens()),
                  unit, device, weightTier, kvTier, efficiency);
}

Estimate prefill(const Unit &unit, const Workload &workload,
                 const hardware::Device &device,
                 const hardware::MemoryTier &weightTier,
                 const hardware::MemoryTier &kvTier,
                 const Efficiency &efficiency) {
  double tokens =
      static_cast<double>(workload.batch * workload.promptTokens);
  double prompt = static_cast<double>(workload.promptTokens);
  // Causal attention: token i attends to i + 1 positions, prompt²/2 on
  // average over the prompt.
  // A prompt's logits are those of its last token only (llm.logits): the
  // output projection multiplies one row per sequence. Counting every
  // token's predicted llama-1B's 128-token prefill 20-35 % slow (its tied
  // output is a quarter of the model's FLOPs per token).
  double matmulTokens = unit.kind == UnitKind::Output
                            ? static_cast<double>(workload.batch)
                            : tokens;
  double flops = matmulTokens * unit.flopsPerToken +
                 static_cast<double>(workload.batch) *
                     unit.attentionFlopsPerContext * prompt * (prompt + 1) / 2;
  double weightBytes = unit.kind == UnitKind::Embedding
                           ? unit.weightBytesPerStep * tokens
                           : static_cast<double>(unit.weightBytes);
  double kvBytes = tokens * unit.kvBytesPerContext;
  return estimate(flops, weightBytes, kvBytes, /*attentionFlops=*/0,
                  /*decode=*/false,
                  programDispatches(unit, device, false, workload.kvTokens()),
                  unit, device, weightTier, kvTier, efficiency);
}

double samplingSeconds(const hardware::Device &cpu, int64_t vocabSize,
                       int64_t batch) {
  // hetrt-sampler-bench on a Zen 5 core: 1.3–3.6 µs at 512 entries,
  // 23–34 µs at 32000, 95–150 µs at 128256.
  double fixedUs = 1.0, nsPerLogit = 1.0;
  if (cpu.calibration && cpu.calibration->sampleNsPerLogit > 0) {
    fixedUs = cpu.calibration->sampleUs;
    nsPerLogit = cpu.calibration->sampleNsPerLogit;
  }
  return static_cast<double>(batch) *
         (fixedUs * 1e-6 + nsPerLogit * 1e-9 * static_cast<double>(vocabSize));
}

} // namespace hetc::cost
