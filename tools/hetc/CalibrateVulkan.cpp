#include "CalibrateVulkan.h"

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

/// The best of `runs` timings of `work` (each submits, then waits for the
/// queue): the least disturbed by other load.
template <typename Work>
std::optional<double> bestSeconds(int runs, hetrt::api::Queue &queue,
                                  hetrt::api::Status &status, Work work) {
  double best = 1e30;
  for (int run = 0; run < runs; ++run) {
    auto start = Clock::now();
    if (!work() || !queue.finish(status))
      return std::nullopt;
    best = std::min(best, secondsSince(start));
  }
  return best;
}

/// The power a plan's energy figures assume for a device whose power the
/// API does not report: a PCIe card's slot budget.
constexpr int kAssumedWatts = 75;

/// Bytes of the buffers the bandwidths are measured with: past any cache.
constexpr uint64_t kBandwidthBytes = 32ull << 20;

} // namespace

std::optional<VulkanCalibration>
calibrateVulkanDevice(const hetrt::api::DeviceInfo &info,
                      const std::string &hostMemory, std::string &error) {
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
  std::optional<double> roundTrip = out ? bestSeconds(20, *queue, status, [&] {
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

  const hetrt::api::MemoryInfo &memory = info.memories[space];
  std::string memoryName = memory.hostVisible ? "shared" : "vram";
  result.device = {
      {"id", info.name},
      {"device",
       {{"schema", "hetc.device/1"},
        {"name", info.name},
        {"description", info.description + ", measured by hetc calibrate: f32 "
                        "peak is the SPIR-V kernel library's matmul rate; its "
                        "power is not measurable here (" +
                            std::to_string(kAssumedWatts) + " W assumed)"},
        {"kind", "spirv"},
        {"arch", "vulkan1.2"},
        // The SPIR-V kernels compute every format in f32.
        {"peak_tflops",
         {{"f32", result.f32Tflops}, {"f16", 0}, {"bf16", 0}, {"int8", 0},
          {"int4", 0}}},
        {"memory",
         {{{"name", memoryName},
           {"space", memory.hostVisible ? "dram" : "hbm"},
           {"capacity_bytes", memory.capacityBytes},
           {"read_gb_per_s", result.memoryGBPerS},
           {"latency_ns", 1000}}}},
        {"launch_overhead_us", result.dispatchUs},
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
