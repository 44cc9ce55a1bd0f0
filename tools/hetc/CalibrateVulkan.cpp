#include "CalibrateVulkan.h"

#include "hetc/Cost/CostModel.h"
#include "hetc/InitAll.h"
#include "hetc/Target/SPIRV.h"

#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace hetc::cli {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// `runs` timings of `work` (each submits, then waits for the queue),
/// sorted: the first is the least disturbed by other load; the middle one
/// what an operation among others costs.
template <typename Work>
std::optional<std::vector<double>> timeRuns(int runs, hetrt::api::Queue &queue,
                                            hetrt::api::Status &status,
                                            Work work) {
  std::vector<double> times;
  for (int run = 0; run < runs; ++run) {
    auto start = Clock::now();
    if (!work() || !queue.finish(status))
      return std::nullopt;
    times.push_back(secondsSince(start));
  }
  std::sort(times.begin(), times.end());
  return times;
}
template <typename Work>
std::optional<double> bestSeconds(int runs, hetrt::api::Queue &queue,
                                  hetrt::api::Status &status, Work work) {
  auto times = timeRuns(runs, queue, status, work);
  return times ? std::optional<double>(times->front()) : std::nullopt;
}
/// The middle of `values` (not empty).
double medianOf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}
template <typename Work>
std::optional<double> medianSeconds(int runs, hetrt::api::Queue &queue,
                                    hetrt::api::Status &status, Work work) {
  auto times = timeRuns(runs, queue, status, work);
  return times ? std::optional<double>(medianOf(*times)) : std::nullopt;
}

/// The power a plan's energy figures assume for a device whose power the
/// API does not report: a PCIe card's slot budget.
constexpr int kAssumedWatts = 75;

/// Bytes of the buffers the bandwidths are measured with: past any cache.
constexpr uint64_t kBandwidthBytes = 32ull << 20;

/// The prompt and the decode steps a program model is timed with, and the
/// runs of each model timed after one to warm up.
constexpr int64_t kProgramPrompt = 32, kProgramSteps = 24;
constexpr int kProgramRuns = 5;

/// Medians of a model's prefill and decode step on a device, and the
/// dispatches of each.
struct ProgramTiming {
  double prefillSeconds = 0;
  double stepSeconds = 0;
  double prefillDispatches = 0;
  double stepDispatches = 0;
};

/// A model's session on the device, and what its runs measured.
struct ProgramRun {
  std::unique_ptr<hetrt::api::Model> model;
  std::unique_ptr<hetrt::api::Session> session;
  std::vector<double> prefills, steps;
  ProgramTiming timing;

  uint64_t dispatches() const {
    uint64_t total = 0;
    for (const hetrt::api::DeviceStats &stats : session->deviceStats())
      total += stats.dispatches;
    return total;
  }
  /// One prefill and kProgramSteps decode steps, as `hetc run --device`
  /// runs them (each step's logits come back); kept unless `warmUp`.
  bool time(bool warmUp, hetrt::api::Status &status) {
    std::vector<int32_t> prompt = syntheticPrompt(kProgramPrompt);
    session->reset();
    uint64_t start = dispatches();
    auto started = Clock::now();
    if (!session->prefill(prompt, status))
      return false;
    double prefill = secondsSince(started);
    uint64_t prefilled = dispatches();
    started = Clock::now();
    for (int64_t step = 0; step < kProgramSteps; ++step)
      if (!session->decode(5, status))
        return false;
    double step = secondsSince(started) / kProgramSteps;
    if (warmUp)
      return true;
    prefills.push_back(prefill);
    steps.push_back(step);
    timing.prefillDispatches = static_cast<double>(prefilled - start);
    timing.stepDispatches =
        static_cast<double>(dispatches() - prefilled) / kProgramSteps;
    return true;
  }
};

/// The models' timings on `device`, their runs interleaved so that a change
/// in the machine's load falls on all of them alike; nothing, with `failed`
/// naming the model, when one cannot run.
std::optional<std::vector<ProgramTiming>>
timePrograms(const std::vector<ProgramModel> &models, int32_t device,
             hetrt::api::Status &status, std::string &failed) {
  std::vector<ProgramRun> runs(models.size());
  for (size_t m = 0; m < models.size(); ++m) {
    failed = models[m].gguf;
    ProgramRun &run = runs[m];
    run.model = hetrt::api::Model::open(models[m].pack, models[m].gguf, status);
    run.session = run.model ? hetrt::api::Session::createOnDevice(
                                  *run.model, device, 1, status)
                            : nullptr;
    // Each run computes its prompt again rather than finding it cached.
    if (!run.session || !run.session->setPrefixCaching(false, status))
      return std::nullopt;
  }
  for (int round = 0; round <= kProgramRuns; ++round)
    for (size_t m = 0; m < runs.size(); ++m)
      if (!runs[m].time(round == 0, status)) {
        failed = models[m].gguf;
        return std::nullopt;
      }
  std::vector<ProgramTiming> timings;
  for (ProgramRun &run : runs) {
    run.timing.prefillSeconds = medianOf(run.prefills);
    run.timing.stepSeconds = medianOf(run.steps);
    timings.push_back(run.timing);
  }
  return timings;
}

/// Weight bytes a decode step of `shape` reads, and the FLOPs of its
/// prefill of kProgramPrompt tokens, as the cost model counts them.
double stepWeightBytes(const cost::ModelShape &shape) {
  double bytes = 0;
  for (const cost::Unit &unit : cost::unitsOf(shape, 4))
    bytes += unit.weightBytesPerStep;
  return bytes;
}
double promptFlops(const cost::ModelShape &shape) {
  double flops = 0, prompt = static_cast<double>(kProgramPrompt);
  for (const cost::Unit &unit : cost::unitsOf(shape, 4))
    flops += unit.flopsPerToken *
                 (unit.kind == cost::UnitKind::Output ? 1 : prompt) +
             unit.attentionFlopsPerContext * prompt * (prompt + 1) / 2;
  return flops;
}

} // namespace

std::vector<int32_t> syntheticPrompt(int64_t tokens) {
  std::vector<int32_t> prompt(static_cast<size_t>(tokens));
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int32_t>(3 + (i * 31) % 200);
  return prompt;
}

std::optional<VulkanCalibration>
calibrateVulkanDevice(const hetrt::api::DeviceInfo &info,
                      const std::string &hostMemory,
                      const std::vector<ProgramModel> &models,
                      std::string &error) {
  using hetrt::api::Buffer;
  hetrt::api::Status status;
  auto failed = [&](const std::string &step) {
    error = info.name + ": " + step + ": " + status.message;
    return std::nullopt;
  };
  // Work runs in the device's own memory where it has one.
  int space = 0;
  for (size_t i = 0; i < info.memories.size(); ++i)
    if (!info.memories[i].hostVisible) {
      space = static_cast<int>(i);
      break;
    }
  std::unique_ptr<hetrt::api::Queue> queue =
      hetrt::api::Queue::create(info.index, status);
  if (!queue)
    return failed("creating a queue");
  auto allocate = [&](uint64_t size) {
    return Buffer::create(info.index, space, size, status);
  };
  std::unique_ptr<Buffer> source = allocate(kBandwidthBytes);
  std::unique_ptr<Buffer> target = source ? allocate(kBandwidthBytes) : nullptr;
  if (!target)
    return failed("allocating the bandwidth buffers");
  VulkanCalibration result;

  // The memory: a copy reads and writes every byte.
  std::optional<double> copy = bestSeconds(5, *queue, status, [&] {
    return queue->copy(*source, 0, *target, 0, kBandwidthBytes, status);
  });
  if (!copy)
    return failed("timing a copy");
  result.memoryGBPerS = 2.0 * kBandwidthBytes / *copy / 1e9;

  // The link: host memory in and out, and the round trip of a few bytes.
  std::vector<char> host(kBandwidthBytes, 1);
  std::optional<double> in = bestSeconds(3, *queue, status, [&] {
    return queue->write(host.data(), *source, 0, kBandwidthBytes, status);
  });
  std::optional<double> out = in ? bestSeconds(3, *queue, status, [&] {
    return queue->read(*source, 0, host.data(), kBandwidthBytes, status);
  }) : std::nullopt;
  // The median: what a copy among others costs.
  std::optional<double> roundTrip = out ? medianSeconds(21, *queue, status, [&] {
    return queue->write(host.data(), *target, 0, 4, status);
  }) : std::nullopt;
  if (!roundTrip)
    return failed("timing transfers from and to the host");
  result.linkGBPerS = kBandwidthBytes / std::max(*in, *out) / 1e9;

  // Dispatches of the kernel library (the portable variant, which every
  // device runs): a tiny one for the fixed cost, a matmul for the f32 rate.
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  target::spirv::SpirvExecutable library;
  if (!target::spirv::compileKernelLibrary(&context, "portable", library,
                                           error)) {
    error = info.name + ": compiling the SPIR-V kernel library: " + error;
    return std::nullopt;
  }
  std::vector<hetrt::api::KernelSignature> kernels;
  for (const target::spirv::SpirvKernel &kernel : library.kernels)
    kernels.push_back({kernel.entryPoint, kernel.bindings, 0});
  std::unique_ptr<hetrt::api::Executable> executable =
      hetrt::api::Executable::load(info.index, HETRT_EXECUTABLE_SPIRV,
                                   library.binary, kernels, status);
  if (!executable)
    return failed("loading the kernel library");
  int32_t add = executable->kernelIndex("add_f32");
  int32_t matmul = executable->kernelIndex("matmul_f32");
  // rows x K activations, M x K weights, rows x M results.
  constexpr int32_t kRows = 64, kInner = 1024, kOutputs = 1024;
  std::unique_ptr<Buffer> params = allocate(64);
  std::unique_ptr<Buffer> activations =
      params ? allocate(4ull * kRows * kInner) : nullptr;
  std::unique_ptr<Buffer> weights =
      activations ? allocate(4ull * kOutputs * kInner) : nullptr;
  std::unique_ptr<Buffer> results =
      weights ? allocate(4ull * kRows * kOutputs) : nullptr;
  if (add < 0 || matmul < 0 || !results)
    return failed("preparing the kernels' buffers");
  if (!queue->fill(*activations, 0, activations->size(), 0x3c000000, 4,
                   status) ||
      !queue->fill(*weights, 0, weights->size(), 0x3c000000, 4, status))
    return failed("filling the kernels' buffers");
  const std::vector<Buffer *> bindings = {activations.get(), weights.get(),
                                          results.get(), params.get()};
  const int32_t addParams[1] = {256};
  const int32_t matmulParams[4] = {kRows, kInner, kOutputs, 0};
  constexpr int kDispatches = 200;
  std::optional<double> tiny = bestSeconds(3, *queue, status, [&] {
    const uint32_t one[3] = {1, 1, 1};
    if (!queue->write(addParams, *params, 0, sizeof(addParams), status))
      return false;
    for (int i = 0; i < kDispatches; ++i)
      if (!queue->dispatch(*executable, add, one, bindings, "", status))
        return false;
    return true;
  });
  if (!tiny)
    return failed("timing small dispatches");
  result.dispatchUs = *tiny / kDispatches * 1e6;
  std::optional<double> product = bestSeconds(3, *queue, status, [&] {
    const uint32_t grid[3] = {kOutputs, kRows, 1};
    return queue->write(matmulParams, *params, 0, sizeof(matmulParams),
                        status) &&
           queue->dispatch(*executable, matmul, grid, bindings, "", status);
  });
  if (!product)
    return failed("timing a matmul");
  result.f32Tflops = 2.0 * kRows * kInner * kOutputs / *product / 1e12;

  // hetc's programs on the device: a step of model i takes D_i dispatches
  // and streams W_i bytes, T_i = D_i * dispatch + W_i / rate. The tiny and
  // the cached model, whose weights both stay in the caches, give the
  // dispatch cost and the rate there; the large model's step, less its
  // dispatches, the rate past the caches, and its prefill the f32 rate of
  // the prefill kernels.
  if (models.size() != 3) {
    error = info.name + ": the calibration times three program models";
    return std::nullopt;
  }
  double tinyBytes = stepWeightBytes(models[0].shape),
         cachedBytes = stepWeightBytes(models[1].shape),
         largeBytes = stepWeightBytes(models[2].shape);
  double dispatchSeconds = 0, cachedSecondsPerByte = 0, largeStreaming = 0,
         prefillCompute = 0;
  // A busy machine can blur the small differences the unknowns come from:
  // the three models are timed again before that is an error.
  constexpr int kAttempts = 3;
  for (int attempt = 1;; ++attempt) {
    std::string failedModel;
    std::optional<std::vector<ProgramTiming>> timings =
        timePrograms(models, info.index, status, failedModel);
    if (!timings)
      return failed("timing the programs of " + failedModel);
    const ProgramTiming &tinyRun = (*timings)[0], &cachedRun = (*timings)[1],
                        &largeRun = (*timings)[2];
    double determinant = tinyRun.stepDispatches * cachedBytes -
                         cachedRun.stepDispatches * tinyBytes;
    dispatchSeconds = (tinyRun.stepSeconds * cachedBytes -
                       cachedRun.stepSeconds * tinyBytes) /
                      determinant;
    cachedSecondsPerByte = (tinyRun.stepDispatches * cachedRun.stepSeconds -
                            cachedRun.stepDispatches * tinyRun.stepSeconds) /
                           determinant;
    largeStreaming =
        largeRun.stepSeconds - largeRun.stepDispatches * dispatchSeconds;
    prefillCompute =
        largeRun.prefillSeconds - largeRun.prefillDispatches * dispatchSeconds;
    if (dispatchSeconds > 0 && cachedSecondsPerByte > 0 &&
        largeStreaming > 0 && prefillCompute > 0)
      break;
    if (attempt == kAttempts) {
      char steps[160];
      std::snprintf(steps, sizeof steps, "%.3f, %.3f and %.3f ms",
                    tinyRun.stepSeconds * 1e3, cachedRun.stepSeconds * 1e3,
                    largeRun.stepSeconds * 1e3);
      error = info.name + ": " + std::to_string(kAttempts) +
              " times the decode steps of the program models (last " + steps +
              ") did not separate the dispatches from the weights' "
              "streaming; calibrate again on an idle machine";
      return std::nullopt;
    }
  }
  result.programDispatchUs = dispatchSeconds * 1e6;
  result.decodeGBPerS = largeBytes / largeStreaming / 1e9;
  // Never below the rate past the caches: noise in the small difference
  // of the tiny and cached steps must not make small models slower.
  result.cachedDecodeGBPerS =
      std::max(1 / cachedSecondsPerByte / 1e9, result.decodeGBPerS);
  result.prefillTflops = promptFlops(models[2].shape) / prefillCompute / 1e12;
  // The rate by the bytes a step streams, as the cost model reads a
  // calibration's read curve (interpolated, relative to the largest size).
  auto mib = [](double bytes) {
    return std::max<int64_t>(1, std::llround(bytes / (1 << 20)));
  };
  result.decodeGBPerSByMiB = {{mib(cachedBytes), result.cachedDecodeGBPerS},
                              {mib(largeBytes), result.decodeGBPerS}};

  const hetrt::api::MemoryInfo &memory = info.memories[space];
  nlohmann::json byMiB = nlohmann::json::object();
  for (const auto &[size, rate] : result.decodeGBPerSByMiB)
    byMiB[std::to_string(size)] = rate;
  std::string memoryName = memory.hostVisible ? "shared" : "vram";
  result.device = {
      {"id", info.name},
      {"device",
       {{"schema", "hetc.device/1"},
        {"name", info.name},
        {"description", info.description + ", measured by hetc calibrate: f32 "
                        "peak is the faster of the SPIR-V kernel library's "
                        "matmul and hetc's prefill programs; its "
                        "power is not measurable here (" +
                            std::to_string(kAssumedWatts) + " W assumed)"},
        {"kind", "spirv"},
        {"arch", "vulkan1.2"},
        // The SPIR-V kernels compute every format in f32.
        {"peak_tflops",
         {{"f32", std::max(result.f32Tflops, result.prefillTflops)},
          {"f16", 0}, {"bf16", 0}, {"int8", 0}, {"int4", 0}}},
        {"memory",
         {{{"name", memoryName},
           {"space", memory.hostVisible ? "dram" : "hbm"},
           {"capacity_bytes", memory.capacityBytes},
           {"read_gb_per_s", result.memoryGBPerS},
           {"latency_ns", 1000}}}},
        {"launch_overhead_us", result.programDispatchUs},
        // What the programs measured: the cost model applies it to f32
        // weights in the device's memory or streamed into it.
        {"calibration",
         {{"decode_gb_per_s", {{"f32", result.decodeGBPerS}}},
          {"prefill_tflops", {{"f32", result.prefillTflops}}},
          {"dispatch_us", result.programDispatchUs},
          // The decode programs' rate by the MiB a step streams: small
          // models stay in the caches.
          {"read_gb_per_s_by_mib", byMiB},
          // The host thread that records and submits the dispatches.
          {"threads", 1}}},
        {"power_w", {{"idle", 0}, {"active", kAssumedWatts}}},
        {"price_usd_per_hour", 0}}}};
  result.link = {
      {"from", info.name + "." + memoryName},
      {"to", hostMemory},
      {"link",
       {{"schema", "hetc.link/1"},
        {"name", info.name + "-host"},
        {"description", "Copies between " + info.name +
                            " and host memory, measured by hetc calibrate"},
        {"gb_per_s", result.linkGBPerS},
        {"latency_us", *roundTrip * 1e6},
        {"bidirectional", false}}}};
  return result;
}

} // namespace hetc::cli
