// Model shapes from GGUF headers and config.json, and the roofline costs.
#include "hetc/Cost/CostModel.h"
#include "hetc/Cost/ModelShape.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace {

using namespace hetc::cost;
using hetc::hardware::DataType;
using hetc::hardware::Device;
using hetc::hardware::MemoryTier;
using hetrt::format::BlockFormat;

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

const char *kLlama3_8B = R"({
  "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
  "num_attention_heads": 32, "num_key_value_heads": 8,
  "intermediate_size": 14336, "vocab_size": 128256,
  "tie_word_embeddings": false})";

TEST(ModelShape, Stories260KFromTheGgufHeader) {
  std::string error;
  std::optional<ModelShape> shape = shapeFromGguf(
      std::string(HETC_SHARED_DIR) + "/models/stories260K.gguf", error);
  ASSERT_TRUE(shape) << error;
  EXPECT_EQ(shape->numLayers, 5);
  EXPECT_EQ(shape->dim, 64);
  EXPECT_EQ(shape->numHeads, 8);
  EXPECT_EQ(shape->numKvHeads, 4);
  EXPECT_EQ(shape->ffnDim, 172);
  EXPECT_EQ(shape->vocabSize, 512);
  // 5 layers × (q 64·64 + k, v 32·64 + o 64·64 + 3 · 172·64 + 2 norms of 64)
  // + embedding and output 512·64 each + final norm 64, all f32.
  uint64_t params = 5 * (4096 + 2 * 2048 + 4096 + 3 * 172 * 64 + 128) +
                    2 * 512 * 64 + 64;
  EXPECT_EQ(shape->totalWeightBytes(), params * 4);
  EXPECT_FALSE(shape->tiedOutput);
}

TEST(ModelShape, Llama3_8BFromConfigJson) {
  std::string path = writeTemp("llama3-8b.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> f16 = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(f16) << error;
  EXPECT_EQ(f16->headDim, 128);
  // 8.03 billion parameters at 2 bytes (norms stay f32).
  EXPECT_NEAR(static_cast<double>(f16->totalWeightBytes()) / 1e9, 16.06, 0.01);
  std::optional<ModelShape> q4 = shapeFromHfConfig(path, "q4_0", error);
  ASSERT_TRUE(q4) << error;
  EXPECT_NEAR(static_cast<double>(q4->totalWeightBytes()) / 1e9,
              16.06 / 2 * 18 / 32 * 2 / 2, 0.05);
  for (const WeightInfo &weight : q4->weights)
    EXPECT_EQ(weight.format, weight.role == WeightRole::Norm ? BlockFormat::F32
                                                             : BlockFormat::Q4_0)
        << weight.name;
}

TEST(ModelShape, MixtureOfExpertsFromConfigJson) {
  std::string path = writeTemp("mixtral.json", R"({
    "model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 32000,
    "num_local_experts": 8, "num_experts_per_tok": 2})");
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  EXPECT_EQ(shape->numExperts, 8);
  EXPECT_EQ(shape->expertsPerToken, 2);
  // 46.7 billion parameters, of which a token reads about 12.9 billion.
  EXPECT_NEAR(static_cast<double>(shape->totalWeightBytes()) / 2e9, 46.7, 0.1);
  double perStep = 0;
  for (const Unit &unit : unitsOf(*shape, 2))
    perStep += unit.weightBytesPerStep;
  EXPECT_NEAR(perStep / 2e9, 12.9, 0.2);
}

TEST(ModelShape, BadConfigsNameTheField) {
  std::string error;
  std::string path = writeTemp("bad.json", R"({"hidden_size": 4096})");
  EXPECT_FALSE(shapeFromHfConfig(path, "f16", error));
  EXPECT_NE(error.find("bad.json: field \"num_hidden_layers\" is missing"),
            std::string::npos) << error;
  path = writeTemp("bad2.json", R"({"hidden_size": 4096, "num_hidden_layers": -2,
    "num_attention_heads": 32, "intermediate_size": 1, "vocab_size": 5})");
  EXPECT_FALSE(shapeFromHfConfig(path, "f16", error));
  EXPECT_NE(error.find("field \"num_hidden_layers\": expected a positive integer, got -2"),
            std::string::npos) << error;
  path = writeTemp("ok.json", kLlama3_8B);
  EXPECT_FALSE(shapeFromHfConfig(path, "q3_k", error));
  EXPECT_NE(error.find("weight type \"q3_k\" cannot be planned"), std::string::npos)
      << error;
  EXPECT_FALSE(shapeFromHfConfig(::testing::TempDir() + "missing.json", "f16", error));
  EXPECT_NE(error.find("missing.json: cannot open: No such file or directory"),
            std::string::npos)
      << error;
  // Sizes past any model are refused before anything is multiplied.
  path = writeTemp("deep.json",
                   R"({"hidden_size": 64, "num_hidden_layers": 1000000000,
                       "num_attention_heads": 8, "intermediate_size": 100,
                       "vocab_size": 100})");
  EXPECT_FALSE(shapeFromHfConfig(path, "f16", error));
  EXPECT_NE(error.find("field \"num_hidden_layers\" is 1000000000, more than "
                       "the 4096 any model has"),
            std::string::npos)
      << error;
}

Device testDevice(bool cpu) {
  Device device;
  device.name = cpu ? "cpu" : "gpu";
  device.kind = cpu ? hetc::hardware::DeviceKind::Cpu
                    : hetc::hardware::DeviceKind::Cuda;
  device.peakTflops = {1.0, 100.0, 100.0, 200.0, 0.0};
  device.memory = {MemoryTier{"home", "dram", 1ull << 40, 100.0, 100.0}};
  device.launchOverheadUs = 2;
  return device;
}

TEST(CostModel, KvMemoryIsCountedInWholeBlocksAsTheRuntimeAllocatesIt) {
  // A sequence of 100 positions holds two blocks of 64; one of 64 holds one;
  // a prompt longer than the context is what the cache holds.
  Workload workload;
  workload.context = 100;
  workload.promptTokens = 10;
  EXPECT_EQ(workload.kvTokens(), 100);
  EXPECT_EQ(workload.kvPositions(), 128);
  workload.context = 64;
  EXPECT_EQ(workload.kvPositions(), 64);
  workload.promptTokens = 65;
  EXPECT_EQ(workload.kvPositions(), 128);
}

TEST(CostModel, DecodeIsTheSlowerOfComputeAndMemoryPlusLaunches) {
  std::string path = writeTemp("llama3-8b.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  std::vector<Unit> units = unitsOf(*shape, 2);
  ASSERT_EQ(units.size(), 2u + 2 * 32);
  const Unit &ffn = units[2];
  EXPECT_EQ(ffn.kind, UnitKind::Ffn);
  EXPECT_EQ(ffn.format, BlockFormat::F16);
  EXPECT_NEAR(ffn.flopsPerToken, 2.0 * 3 * 4096 * 14336, 1);
  Device gpu = testDevice(false);
  Efficiency exact{1.0, 1.0};
  Workload one{1, 0, 1};
  Estimate step = decodeStep(ffn, one, gpu, gpu.memory[0], gpu.memory[0], exact);
  // 352 MB of f16 weights at 100 GB/s; 0.35 GFLOP at 100 TFLOPS f16.
  EXPECT_NEAR(step.memorySeconds, ffn.weightBytesPerStep / 100e9, 1e-12);
  EXPECT_NEAR(step.computeSeconds, ffn.flopsPerToken / 100e12, 1e-12);
  EXPECT_TRUE(step.memoryBound());
  // The GPU program's dispatches: the norm (with the residual add before
  // it), the gate and up products with their SwiGLU, the down product.
  EXPECT_NEAR(step.seconds(), step.memorySeconds + 3 * 2e-6, 1e-12);
  // The CPU computes in f32 (1 TFLOPS here): a batch of 64 is compute-bound.
  Device cpu = testDevice(true);
  Workload batch{64, 0, 1};
  Estimate cpuStep = decodeStep(ffn, batch, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_FALSE(cpuStep.memoryBound());
  EXPECT_NEAR(cpuStep.computeSeconds, 64 * ffn.flopsPerToken / 1e12, 1e-9);
  // Attention reads the KV cache of every context token.
  const Unit &attention = units[1];
  Workload longContext{1, 8192, 1};
  Estimate attend =
      decodeStep(attention, longContext, gpu, gpu.memory[0], gpu.memory[0], exact);
  double kvBytes = 8192.0 * 2 * 8 * 128 * 2;
  EXPECT_NEAR(attend.memorySeconds,
              (attention.weightBytesPerStep + kvBytes) / 100e9, 1e-12);
}

// A calibration that measured decode attention's rate makes the attention
// kernels their own term, added to the rest: the slower of moving the cache
// and their arithmetic at that rate, which leaves the matmuls' compute. A
// prefill's attention stays with its matmuls.
// A unit's kernels are the CPU code's calls on a CPU, and on a GPU the
// dispatches of the programs the SPIR-V/CUDA/HIP program builder makes
// (SpirvModelTest counts a real model's program against them): a decode
// step fuses the residual add into the next norm and the gate and up
// products into one, CUDA and HIP the query, key and value products too,
// and splits attention over a cache of more than 256 positions.
TEST(CostModel, UnitsDispatchWhatTheDevicesCodeDispatches) {
  std::string path = writeTemp("llama3-8b-dispatches.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  std::vector<Unit> units = unitsOf(*shape, 2);
  const Unit &embedding = units[0], &attention = units[1], &ffn = units[2],
             &output = units.back();
  Device cpu = testDevice(true), cuda = testDevice(false),
         vulkan = testDevice(false);
  vulkan.kind = hetc::hardware::DeviceKind::Spirv;
  for (const Unit *unit : {&embedding, &attention, &ffn, &output})
    EXPECT_EQ(programDispatches(*unit, cpu, true, 4096), unit->kernels);
  EXPECT_EQ(programDispatches(embedding, vulkan, true, 4096), 1);
  EXPECT_EQ(programDispatches(attention, vulkan, true, 256), 8);
  EXPECT_EQ(programDispatches(attention, vulkan, true, 257), 9);
  EXPECT_EQ(programDispatches(attention, cuda, true, 4096), 7);
  EXPECT_EQ(programDispatches(attention, vulkan, false, 4096), 8);
  EXPECT_EQ(programDispatches(ffn, vulkan, true, 4096), 3);
  EXPECT_EQ(programDispatches(ffn, vulkan, false, 4096), 5);
  EXPECT_EQ(programDispatches(output, cuda, true, 4096), 2);
}

// A calibrated device reads weights streamed from another device's memory
// out of the buffers the programs copy them into, at its calibrated rate,
// but never faster than the link brings them; its dispatch cost holds
// either way. An uncalibrated one reads them at the link's rate.
TEST(CostModel, StreamedWeightsOnACalibratedDeviceAreTheSlowerOfItsRateAndTheLink) {
  std::string path = writeTemp("llama3-8b-streamed.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f32", error);
  ASSERT_TRUE(shape) << error;
  const Unit ffn = unitsOf(*shape, 4)[2];
  Device vulkan = testDevice(false);
  vulkan.kind = hetc::hardware::DeviceKind::Spirv;
  hetc::hardware::Calibration calibration;
  calibration.decodeGBPerS = {{"f32", 20}};
  calibration.prefillTflops = {{"f32", 0.5}};
  calibration.dispatchUs = 50;
  vulkan.calibration = calibration;
  // The link's side of the remote tier, as the planner builds it.
  MemoryTier overLink{"host", "dram", 1ull << 40, 8.0, 100.0};
  Efficiency exact{1.0, 1.0};
  Workload one{1, 0, 1};
  Estimate slowLink = decodeStep(ffn, one, vulkan, overLink, vulkan.memory[0], exact);
  EXPECT_NEAR(slowLink.memorySeconds, ffn.weightBytesPerStep / 8e9, 1e-12);
  EXPECT_NEAR(slowLink.computeSeconds, ffn.flopsPerToken / 0.5e12, 1e-12);
  EXPECT_NEAR(slowLink.overheadSeconds, 3 * 50e-6, 1e-12);
  overLink.readGBPerS = 64;
  Estimate fastLink = decodeStep(ffn, one, vulkan, overLink, vulkan.memory[0], exact);
  EXPECT_NEAR(fastLink.memorySeconds, ffn.weightBytesPerStep / 20e9, 1e-12);
  vulkan.calibration.reset();
  Estimate roofline = decodeStep(ffn, one, vulkan, overLink, vulkan.memory[0], exact);
  EXPECT_NEAR(roofline.memorySeconds, ffn.weightBytesPerStep / 64e9, 1e-12);
  EXPECT_NEAR(roofline.overheadSeconds, 3 * 2e-6, 1e-12);
}

TEST(CostModel, CalibratedAttentionIsTheSlowerOfItsBytesAndItsRate) {
  std::string path = writeTemp("llama3-8b-attention.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  std::vector<Unit> units = unitsOf(*shape, 4);
  const Unit &attention = units[1];
  ASSERT_EQ(attention.kind, UnitKind::Attention);
  Device cpu = testDevice(true);
  hetc::hardware::Calibration calibration;
  // Measured at the model's head size (128) and at a smaller one.
  calibration.attentionGflops = {{16, 1}, {128, 5}};
  calibration.dispatchUs = 2;
  cpu.calibration = calibration;
  Efficiency exact{1.0, 1.0};
  Workload context{2, 1000, 100};
  Estimate attend =
      decodeStep(attention, context, cpu, cpu.memory[0], cpu.memory[0], exact);
  double kvBytes = 2 * 1000.0 * 2 * 8 * 128 * 4;
  double perContext = 4.0 * 32 * 128;
  double arithmetic = 2 * 1000 * perContext / 5e9;
  ASSERT_GT(arithmetic, kvBytes / 100e9);
  EXPECT_NEAR(attend.attentionSeconds, arithmetic, 1e-12);
  EXPECT_NEAR(attend.memorySeconds, attention.weightBytesPerStep / 100e9, 1e-12);
  EXPECT_NEAR(attend.computeSeconds, 2 * attention.flopsPerToken / 1e12, 1e-12);
  EXPECT_NEAR(attend.seconds(),
              attend.memorySeconds + arithmetic + attend.overheadSeconds, 1e-12);
  // A fast rate: the cache's bytes bound it.
  cpu.calibration->attentionGflops[128] = 1e6;
  attend = decodeStep(attention, context, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(attend.attentionSeconds, kvBytes / 100e9, 1e-12);
  // A prefill of 100 tokens: token i attends to i + 1 positions.
  cpu.calibration->attentionGflops[128] = 5;
  Estimate prompt =
      prefill(attention, context, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_EQ(prompt.attentionSeconds, 0);
  EXPECT_NEAR(prompt.computeSeconds,
              2 * (100 * attention.flopsPerToken + perContext * 100 * 101 / 2) / 1e12,
              1e-12);
  // Without the measurement, attention is part of the roofline.
  cpu.calibration->attentionGflops.clear();
  attend = decodeStep(attention, context, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_EQ(attend.attentionSeconds, 0);
  EXPECT_NEAR(attend.memorySeconds,
              (attention.weightBytesPerStep + kvBytes) / 100e9, 1e-12);
}

// A calibrated decode rate is that of weights read past the caches: a model
// that streams fewer bytes a step keeps part of them in the caches and reads
// faster by the measured curve, never faster than its format's kernels do in
// the cache. The whole model's bytes decide it, and prefill is not scaled.
TEST(CostModel, SmallModelsDecodeFasterByTheReadCurve) {
  std::string path = writeTemp("llama3-8b-curve.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  std::vector<Unit> units = unitsOf(*shape, 2);
  double modelBytes = 0;
  for (const Unit &unit : units)
    modelBytes += unit.weightBytesPerStep;
  for (const Unit &unit : units)
    EXPECT_EQ(unit.modelWeightBytesPerStep, modelBytes);
  Unit ffn = units[2];
  Device cpu = testDevice(true);
  hetc::hardware::Calibration calibration;
  calibration.decodeGBPerS = {{"f16", 20}};
  calibration.prefillTflops = {{"f16", 1}};
  calibration.readGBPerSByMiB = {{32, 60}, {128, 30}, {512, 20}};
  cpu.calibration = calibration;
  Efficiency exact{1.0, 1.0};
  Workload one{1, 0, 1};
  // Llama-3-8B streams far more than 512 MiB: the calibrated rate.
  Estimate large = decodeStep(ffn, one, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(large.memorySeconds, ffn.weightBytesPerStep / 20e9, 1e-12);
  // The same unit in a model of 128 MiB a step: 30 / 20 as fast.
  ffn.modelWeightBytesPerStep = 128 << 20;
  Estimate small = decodeStep(ffn, one, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(small.memorySeconds, ffn.weightBytesPerStep / 30e9, 1e-12);
  // In 32 MiB, 3× the rate, unless the format's kernels top out below it.
  ffn.modelWeightBytesPerStep = 32 << 20;
  Estimate cached = decodeStep(ffn, one, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(cached.memorySeconds, ffn.weightBytesPerStep / 60e9, 1e-12);
  cpu.calibration->decodeInCacheGBPerS = {{"f16", 45}};
  cached = decodeStep(ffn, one, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(cached.memorySeconds, ffn.weightBytesPerStep / 45e9, 1e-12);
  // An in-cache rate below the rate past the caches lifts nothing and
  // lowers nothing.
  cpu.calibration->decodeInCacheGBPerS = {{"f16", 10}};
  cached = decodeStep(ffn, one, cpu, cpu.memory[0], cpu.memory[0], exact);
  EXPECT_NEAR(cached.memorySeconds, ffn.weightBytesPerStep / 20e9, 1e-12);
  // A prompt reads its weights once: no scaling.
  Estimate prompt = prefill(ffn, Workload{1, 128, 128}, cpu, cpu.memory[0],
                            cpu.memory[0], exact);
  EXPECT_NEAR(prompt.memorySeconds, static_cast<double>(ffn.weightBytes) / 20e9,
              1e-12);
}

TEST(CostModel, PrefillReadsWeightsOnceForThePrompt) {
  std::string path = writeTemp("llama3-8b.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  const Unit ffn = unitsOf(*shape, 2)[2];
  Device gpu = testDevice(false);
  Workload prompt{1, 0, 2048};
  Estimate fill = prefill(ffn, prompt, gpu, gpu.memory[0], gpu.memory[0], {1, 1});
  EXPECT_NEAR(fill.memorySeconds, ffn.weightBytes / 100e9, 1e-12);
  EXPECT_NEAR(fill.computeSeconds, 2048 * ffn.flopsPerToken / 100e12, 1e-12);
  EXPECT_FALSE(fill.memoryBound());
}

// A prompt's logits are its last token's: the output projection multiplies
// one row per sequence, whatever the prompt's length, and still reads its
// weights once.
TEST(CostModel, PrefillComputesTheLogitsOfTheLastTokenOnly) {
  std::string path = writeTemp("llama3-8b.json", kLlama3_8B);
  std::string error;
  std::optional<ModelShape> shape = shapeFromHfConfig(path, "f16", error);
  ASSERT_TRUE(shape) << error;
  const Unit output = unitsOf(*shape, 2).back();
  ASSERT_EQ(output.kind, UnitKind::Output);
  Device gpu = testDevice(false);
  Workload twoPrompts{2, 0, 2048};
  Estimate fill =
      prefill(output, twoPrompts, gpu, gpu.memory[0], gpu.memory[0], {1, 1});
  EXPECT_NEAR(fill.computeSeconds, 2 * output.flopsPerToken / 100e12, 1e-15);
  EXPECT_NEAR(fill.memorySeconds, output.weightBytes / 100e9, 1e-12);
}

// Sampling is costed per sequence and per vocabulary entry: from the
// device's calibration when it measured the sampler, otherwise from the
// figures measured on a Zen 5 core (1 µs and 1 ns per entry).
TEST(CostModel, SamplingGrowsWithTheVocabularyAndTheBatch) {
  hetc::hardware::Device cpu;
  cpu.kind = hetc::hardware::DeviceKind::Cpu;
  EXPECT_DOUBLE_EQ(samplingSeconds(cpu, 32000, 1), 1e-6 + 32000e-9);
  EXPECT_DOUBLE_EQ(samplingSeconds(cpu, 32000, 4), 4 * (1e-6 + 32000e-9));
  hetc::hardware::Calibration calibration;
  calibration.sampleUs = 2;
  calibration.sampleNsPerLogit = 0.5;
  cpu.calibration = calibration;
  EXPECT_DOUBLE_EQ(samplingSeconds(cpu, 512, 1), 2e-6 + 256e-9);
  // A calibration that did not measure the sampler falls back.
  cpu.calibration->sampleNsPerLogit = 0;
  EXPECT_DOUBLE_EQ(samplingSeconds(cpu, 512, 1), 1e-6 + 512e-9);
}

} // namespace
