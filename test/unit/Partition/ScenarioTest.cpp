// Placement scenarios on the catalog's systems: what a user expects of a plan
// for real model shapes (Llama-2 7B and 70B configs), from staying on one GPU
// to splitting across a consumer GPU and its host, and failing with the
// shortfall when nothing holds the model.
#include "hetc/Partition/ModelPlan.h"
#include "hetc/Partition/Simulate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

using namespace hetc;
using namespace hetc::partition;

/// A Hugging Face config.json of a Llama-2 shape, written to a temporary file.
std::string writeConfig(const std::string &name, int dim, int layers, int heads,
                        int kvHeads, int ffn) {
  std::string path = ::testing::TempDir() + "/" + name + ".json";
  std::ofstream(path) << "{\"model_type\": \"llama\", \"hidden_size\": " << dim
                      << ", \"num_hidden_layers\": " << layers
                      << ", \"num_attention_heads\": " << heads
                      << ", \"num_key_value_heads\": " << kvHeads
                      << ", \"intermediate_size\": " << ffn
                      << ", \"vocab_size\": 32000}";
  return path;
}

cost::ModelShape shape(const std::string &name, int dim, int layers, int heads,
                       int kvHeads, int ffn, const std::string &type) {
  std::string error;
  std::optional<cost::ModelShape> loaded = cost::shapeFromHfConfig(
      writeConfig(name, dim, layers, heads, kvHeads, ffn), type, error);
  EXPECT_TRUE(loaded) << error;
  return loaded ? *loaded : cost::ModelShape{};
}

cost::ModelShape llama7b(const std::string &type) {
  return shape("llama-7b", 4096, 32, 32, 32, 11008, type);
}
cost::ModelShape llama70b(const std::string &type) {
  return shape("llama-70b", 8192, 80, 64, 8, 28672, type);
}

hardware::System system(const std::string &name) {
  std::string error;
  std::optional<hardware::System> found =
      hardware::findSystem(name, hardware::defaultCatalogDir(), error);
  EXPECT_TRUE(found) << error;
  return found ? *found : hardware::System{};
}

/// A device of the catalog by file name (without .json).
hardware::Device catalogDevice(const std::string &name) {
  std::string error;
  std::optional<hardware::Device> device = hardware::loadDevice(
      hardware::defaultCatalogDir() + "/devices/" + name + ".json", error);
  EXPECT_TRUE(device) << error;
  return device ? *device : hardware::Device{};
}

ModelPlan plan(const cost::ModelShape &model, const hardware::System &sys,
               Objective objective = Objective::Latency, int64_t batch = 1) {
  PlanRequest request;
  request.objective = objective;
  request.workload.batch = batch;
  std::string error;
  std::optional<ModelPlan> result = planModel(model, sys, request, error);
  EXPECT_TRUE(result) << error;
  return result ? *result : ModelPlan{};
}

int deviceIndex(const ModelPlan &plan, const std::string &id) {
  for (size_t d = 0; d < plan.devices.size(); ++d)
    if (plan.devices[d].id == id)
      return static_cast<int>(d);
  return -1;
}

uint64_t bytesOn(const ModelPlan &plan, int device) {
  uint64_t bytes = 0;
  for (const MemoryUse &memory : plan.memories)
    if (memory.device == device)
      bytes += memory.weightBytes + memory.kvBytes;
  return bytes;
}

uint64_t streamedBytes(const ModelPlan &plan) {
  uint64_t bytes = 0;
  for (const PlacedUnit &unit : plan.units)
    if (unit.streamed)
      bytes += unit.unit.weightBytes;
  return bytes;
}

void expectWithinCapacities(const ModelPlan &plan) {
  for (const MemoryUse &memory : plan.memories)
    EXPECT_LE(memory.weightBytes + memory.kvBytes + memory.streamBufferBytes,
              memory.capacityBytes)
        << memory.name;
}

// A 7B F16 model (13 GB) fits one H100's 80 GB: every unit stays on a GPU,
// with its weights in HBM, nothing streamed and nothing on the CPU.
TEST(Scenario, SevenBillionStaysOnOneH100) {
  hardware::System server = system("h100-epyc-pcie5");
  ModelPlan placed = plan(llama7b("f16"), server);
  ASSERT_FALSE(placed.units.empty());
  int gpu = placed.units.front().device;
  EXPECT_EQ(placed.devices[gpu].device->kind, hardware::DeviceKind::Cuda);
  for (const PlacedUnit &unit : placed.units) {
    EXPECT_EQ(unit.device, gpu) << unit.unit.name;
    EXPECT_FALSE(unit.streamed) << unit.unit.name;
    EXPECT_EQ(placed.memories[unit.weightMemory].device, gpu) << unit.unit.name;
  }
  // Nothing is handed between devices; only the token id comes in and the
  // logits go back to the CPU that samples them.
  for (const PlacedUnit &unit : placed.units)
    EXPECT_EQ(unit.handOverSeconds, 0) << unit.unit.name;
  EXPECT_GT(placed.units.back().hostTransferSeconds, 0);
  EXPECT_DOUBLE_EQ(placed.transferSeconds,
                   placed.units.front().hostTransferSeconds +
                       placed.units.back().hostTransferSeconds);
  expectWithinCapacities(placed);
}

// The CPU samples every token, whichever device computes the logits: its
// sampling time is part of the step and of its busy time.
TEST(Scenario, TheHostCpuSamplesEveryToken) {
  hardware::System server = system("h100-epyc-pcie5");
  cost::ModelShape model = llama7b("f16");
  ModelPlan placed = plan(model, server);
  ASSERT_GE(placed.hostDevice, 0);
  const DeviceUse &host = placed.devices[placed.hostDevice];
  EXPECT_EQ(host.device->kind, hardware::DeviceKind::Cpu);
  EXPECT_EQ(host.units, 0);
  EXPECT_DOUBLE_EQ(placed.samplingSeconds,
                   cost::samplingSeconds(*host.device, model.vocabSize, 1));
  EXPECT_DOUBLE_EQ(host.decodeSeconds, placed.samplingSeconds);
  double step = placed.transferSeconds;
  for (const DeviceUse &device : placed.devices)
    step += device.decodeSeconds;
  EXPECT_DOUBLE_EQ(placed.decodeStepSeconds, step);
}

// A 70B Q4_0 model (about 39 GB) on a 24 GB consumer GPU and a desktop CPU:
// the GPU's memory is filled, the rest of the model runs from host memory,
// and the plan beats the CPU alone. (llama.cpp's -ngl would put whole layers
// on the GPU until it is full and leave the rest on the CPU; here the
// partitioner decides unit by unit, and may split a layer's attention and FFN.)
TEST(Scenario, SeventyBillionQ4SplitsAcrossConsumerGpuAndCpu) {
  hardware::System desktop = system("rtx4090-ryzen");
  cost::ModelShape model = llama70b("q4_0");
  ModelPlan placed = plan(model, desktop);
  int gpu = deviceIndex(placed, "gpu0");
  int cpu = deviceIndex(placed, "cpu0");
  ASSERT_GE(gpu, 0);
  ASSERT_GE(cpu, 0);
  uint64_t gpuMemory = 0;
  for (const MemoryUse &memory : placed.memories)
    if (memory.device == gpu)
      gpuMemory += memory.capacityBytes;
  EXPECT_GT(bytesOn(placed, gpu), gpuMemory * 9 / 10);
  EXPECT_GT(placed.devices[gpu].units, 0);
  EXPECT_GT(placed.devices[cpu].units, 0);
  EXPECT_GT(bytesOn(placed, cpu), model.totalWeightBytes() / 4);
  expectWithinCapacities(placed);

  hardware::System cpuOnly = desktop;
  cpuOnly.devices.erase(cpuOnly.devices.begin() + gpu);
  cpuOnly.links.clear();
  ModelPlan alone = plan(model, cpuOnly);
  EXPECT_GT(placed.decodeTokensPerS, alone.decodeTokensPerS);
}

// Serving 32 sequences at once, the layers that do not fit HBM are compute-
// bound on a CPU. On GH200 the GPU reads host memory over NVLink-C2C
// (900 GB/s), so those weights are streamed to the GPU rather than computed
// on the Grace CPU; over PCIe (H100 + EPYC, 64 GB/s) streaming pays far less
// and less is streamed.
TEST(Scenario, NvlinkC2cStreamsMoreWeightsThanPcie) {
  cost::ModelShape model = llama70b("f16"); // 138 GB: more than one GPU holds
  hardware::System gh200 = system("gh200");
  ModelPlan grace = plan(model, gh200, Objective::Throughput, 32);
  hardware::System pcie = system("h100-epyc-pcie5");
  // One GPU and the host, as GH200 has.
  int second = pcie.deviceIndex("gpu1");
  ASSERT_GE(second, 0);
  pcie.devices.erase(pcie.devices.begin() + second);
  std::vector<hardware::SystemLink> links;
  for (hardware::SystemLink link : pcie.links) {
    if (link.from.device == second || link.to.device == second)
      continue;
    for (hardware::MemoryRef *end : {&link.from, &link.to})
      if (end->device > second)
        --end->device;
    links.push_back(link);
  }
  pcie.links = links;
  ModelPlan host = plan(model, pcie, Objective::Throughput, 32);
  expectWithinCapacities(grace);
  expectWithinCapacities(host);
  EXPECT_GT(streamedBytes(grace), 0u);
  EXPECT_GT(streamedBytes(grace), streamedBytes(host));
  // The GPU that streams keeps buffers for them in its HBM, beside the rest.
  int gpu = gh200.deviceIndex("gpu0");
  ASSERT_GE(gpu, 0);
  uint64_t buffers = 0;
  for (const MemoryUse &memory : grace.memories)
    if (memory.device == gpu)
      buffers += memory.streamBufferBytes;
  EXPECT_GT(buffers, 0u);
  std::printf("70B F16 streamed to the GPU: GH200 %.1f GB, H100 + EPYC over "
              "PCIe %.1f GB\n",
              streamedBytes(grace) / 1e9, streamedBytes(host) / 1e9);
}

// A KV cache for 64 sequences of 32k tokens (about 1.4 TB beside the
// weights) fits in no memory of the desktop that may hold a KV cache: the
// error names a memory and the shortfall in bytes.
TEST(Scenario, RequestThatFitsNowhereFailsWithTheShortfall) {
  PlanRequest request;
  request.workload.batch = 64;
  request.workload.context = 32768;
  std::string error;
  std::optional<ModelPlan> placed =
      planModel(llama70b("q4_0"), system("rtx4090-ryzen"), request, error);
  EXPECT_FALSE(placed);
  EXPECT_NE(error.find("does not fit rtx4090-ryzen"), std::string::npos)
      << error;
  EXPECT_NE(error.find("bytes more than"), std::string::npos) << error;
  std::printf("%s\n", error.c_str());
}

// A consumer GPU beside a low-power NPU, both able to hold a 7B Q4_0 model:
// latency puts it on the GPU (1008 GB/s), energy on the NPU (136 GB/s at
// 8 W against 450 W; the catalog's figures), idle power of the other device
// included.
TEST(Scenario, EnergyObjectiveMovesWorkToTheEfficientDevice) {
  std::string error;
  std::optional<hardware::Link> pcie = hardware::loadLink(
      hardware::defaultCatalogDir() + "/links/pcie4-x16.json", error);
  ASSERT_TRUE(pcie) << error;
  hardware::System pair;
  pair.name = "gpu-and-npu";
  pair.devices = {{"gpu0", catalogDevice("nvidia-rtx-4090")},
                  {"npu0", catalogDevice("generic-spirv-npu")}};
  pair.links = {{{0, 0}, {1, 0}, *pcie}};
  cost::ModelShape model = llama7b("q4_0");

  ModelPlan fast = plan(model, pair, Objective::Latency);
  ModelPlan frugal = plan(model, pair, Objective::Energy);
  EXPECT_EQ(fast.devices[0].units, static_cast<int>(fast.units.size()));
  EXPECT_GT(frugal.devices[1].units, static_cast<int>(frugal.units.size()) / 2);
  EXPECT_LT(frugal.joulesPerToken, fast.joulesPerToken);
  EXPECT_GT(fast.decodeTokensPerS, frugal.decodeTokensPerS);
  std::printf("7B Q4_0 latency plan: %.1f tokens/s, %.3f J/token; energy plan: "
              "%.1f tokens/s, %.3f J/token\n",
              fast.decodeTokensPerS, fast.joulesPerToken,
              frugal.decodeTokensPerS, frugal.joulesPerToken);
}

// Two devices that together hold a 70B Q4_0 model but share no link: the
// plan cannot hand activations from one to the other, and says so.
TEST(Scenario, DevicesWithoutALinkCannotSplitAModel) {
  std::string error;
  hardware::System apart;
  apart.name = "unlinked";
  apart.devices = {{"gpu0", catalogDevice("nvidia-rtx-4090")},
                   {"npu0", catalogDevice("generic-spirv-npu")}};
  PlanRequest request;
  std::optional<ModelPlan> placed =
      planModel(llama70b("q4_0"), apart, request, error);
  EXPECT_FALSE(placed);
  EXPECT_NE(error.find("no link between them"), std::string::npos) << error;
}

// A request played through the desktop's 70B plan: each decode step costs
// at least the one before (the KV cache grows), a step at the planned
// context costs what the plan predicts, and the devices' busy time plus the
// hand-overs is the whole request (the chain runs one unit at a time).
TEST(Scenario, SimulatedRequestFollowsThePlan) {
  PlanRequest request;
  request.workload = {1, 128 + 64, 128};
  std::string error;
  hardware::System desktop = system("rtx4090-ryzen");
  std::optional<ModelPlan> placed =
      planModel(llama70b("q4_0"), desktop, request, error);
  ASSERT_TRUE(placed) << error;
  Timeline timeline = simulate(*placed, request.workload, 192, 64);
  std::vector<double> stepSeconds(65, 0);
  for (const TimelineEvent &event : timeline.events)
    if (event.phase != "prefill")
      stepSeconds[std::stoi(event.phase.substr(7))] += event.end - event.start;
  for (int step = 2; step <= 64; ++step)
    EXPECT_GE(stepSeconds[step], stepSeconds[step - 1] * (1 - 1e-12)) << step;
  // Step 65 would read 192 cached tokens: the planned context.
  Timeline longer = simulate(*placed, request.workload, 192, 65);
  double lastStep = longer.totalSeconds - timeline.totalSeconds;
  EXPECT_NEAR(lastStep, placed->decodeStepSeconds, 1e-9 * lastStep);
  double busy = timeline.linkSeconds;
  for (double seconds : timeline.busySeconds)
    busy += seconds;
  EXPECT_NEAR(busy, timeline.totalSeconds, 1e-9 * timeline.totalSeconds);
  EXPECT_NEAR(timeline.prefillSeconds, placed->prefillSeconds,
              1e-9 * placed->prefillSeconds);
  std::string svg = timelineSvg(*placed, timeline, "70B <Q4_0> & co");
  EXPECT_NE(svg.find("70B &lt;Q4_0&gt; &amp; co"), std::string::npos);
  size_t bars = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos;
       at = svg.find("<rect", at + 1))
    ++bars;
  EXPECT_EQ(bars, timeline.events.size());
}

} // namespace

// The buffers streamed weights land in, as the programs allocate them: a
// buffer per weight, reused by a weight of its size two streamed units
// later, so each size needs as many as two consecutive streamed units on
// the device hold; sizes are whole 4-byte words.
TEST(StreamBuffers, TwoConsecutiveStreamedUnitsOfEachSize) {
  cost::ModelShape model;
  for (const auto &[name, bytes] :
       std::vector<std::pair<std::string, uint64_t>>{
           {"blk.0.attn_q.weight", 100}, {"blk.0.ffn_up.weight", 200},
           {"blk.1.attn_q.weight", 100}, {"blk.1.ffn_up.weight", 200},
           {"blk.1.ffn_down.weight", 101}}) {
    cost::WeightInfo weight;
    weight.name = name;
    weight.bytes = bytes;
    cost::classifyWeight(weight);
    model.weights.push_back(weight);
  }
  // Units: embedding 0, attention 1 and 3, FFN 2 and 4, output 5.
  size_t units = 6;
  EXPECT_EQ(streamBufferBytes(model, units, {{1, 0}, {2, 0}, {3, 0}, {4, 0}}, 0),
            100u + 200 + 104);
  // Attention alone: the two attentions are consecutive streamed units.
  EXPECT_EQ(streamBufferBytes(model, units, {{1, 0}, {3, 0}}, 0), 200u);
  // On two devices, each holds its own unit's.
  EXPECT_EQ(streamBufferBytes(model, units, {{1, 0}, {3, 1}}, 0), 100u);
  EXPECT_EQ(streamBufferBytes(model, units, {{1, 0}, {3, 1}}, 1), 100u);
  EXPECT_EQ(streamBufferBytes(model, units, {}, 0), 0u);
}
