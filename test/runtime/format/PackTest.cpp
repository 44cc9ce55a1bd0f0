// Tests of the pack container and the manifest as untrusted input: a round
// trip, every single-byte change and every truncation of a pack refused with
// a message naming the pack, manifests of wrong types and impossible sizes
// refused without throwing, and the non-finite weight scan.
#include "runtime/format/GgufWriter.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/NonFinite.h"
#include "runtime/format/Pack.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <cstring>
#include <limits>
#include <string>

using namespace hetrt::format;

namespace {

Manifest sampleManifest() {
  Manifest manifest;
  manifest.weightsPath = "/models/m.gguf";
  manifest.weightsSize = 1000;
  manifest.weightsHash = "0123456789abcdef";
  manifest.architecture = "llama";
  manifest.vocabSize = 300;
  manifest.numLayers = 2;
  manifest.numKvHeads = 2;
  manifest.headDim = 16;
  manifest.contextLength = 64;
  manifest.variants = {{"x86-64-v2", "code/x86-64-v2.so", {"sse4.2"}}};
  return manifest;
}

std::string sampleImage() {
  PackWriter writer;
  std::string json = sampleManifest().toJson();
  writer.addSection("manifest.json", std::vector<char>(json.begin(), json.end()));
  writer.addSection("code/x86-64-v2.so", std::vector<char>(300, '\x90'));
  return writer.image();
}

} // namespace

TEST(PackTest, RoundTrips) {
  std::string error;
  std::unique_ptr<PackFile> pack =
      PackFile::fromBytes(sampleImage(), "test.hetpack", error);
  ASSERT_TRUE(pack) << error;
  EXPECT_EQ(pack->sectionNames(),
            (std::vector<std::string>{"manifest.json", "code/x86-64-v2.so"}));
  ASSERT_TRUE(pack->section("code/x86-64-v2.so"));
  EXPECT_EQ(pack->section("code/x86-64-v2.so")->size(), 300u);
  std::optional<Manifest> manifest = Manifest::fromJson(
      std::string(*pack->section("manifest.json")), "test.hetpack", error);
  ASSERT_TRUE(manifest) << error;
  EXPECT_EQ(manifest->contextLength, 64);
}

TEST(PackTest, EveryChangedByteIsRefused) {
  std::string image = sampleImage();
  for (size_t at = 0; at < image.size(); ++at) {
    std::string changed = image;
    changed[at] = static_cast<char>(changed[at] ^ 0x01);
    std::string error;
    EXPECT_FALSE(PackFile::fromBytes(changed, "test.hetpack", error))
        << "byte " << at;
    EXPECT_EQ(error.rfind("test.hetpack: ", 0), 0u) << error;
  }
}

TEST(PackTest, EveryTruncationIsRefused) {
  std::string image = sampleImage();
  for (size_t size = 0; size < image.size(); ++size) {
    std::string error;
    EXPECT_FALSE(PackFile::fromBytes(image.substr(0, size), "test.hetpack", error))
        << size << " bytes";
    EXPECT_NE(error.find("test.hetpack: "), std::string::npos) << error;
  }
}

TEST(PackTest, BytesAfterTheLastSectionAreRefused) {
  std::string image = sampleImage();
  for (const std::string &extra :
       {std::string(1, '\0'), std::string("GARBAGE"), sampleImage()}) {
    std::string error;
    EXPECT_FALSE(PackFile::fromBytes(image + extra, "test.hetpack", error))
        << extra.size() << " bytes appended";
    EXPECT_NE(error.find(std::to_string(extra.size()) +
                         " bytes follow the last section"),
              std::string::npos)
        << error;
  }
}

// A forged table (its checksum recomputed) whose first section starts inside
// the header is named as such, not as a truncated file.
TEST(PackTest, ASectionInsideTheHeaderIsNamed) {
  std::string image = sampleImage();
  size_t firstOffsetAt = 8 + 4 + 4 + 4 + std::strlen("manifest.json");
  uint64_t intoHeader = 8;
  std::memcpy(image.data() + firstOffsetAt, &intoHeader, 8);
  size_t headerEnd = 16;
  for (const char *name : {"manifest.json", "code/x86-64-v2.so"})
    headerEnd += 4 + std::strlen(name) + 24;
  uint64_t checksum = XXH3_64bits(image.data(), headerEnd);
  std::memcpy(image.data() + headerEnd, &checksum, 8);
  std::string error;
  EXPECT_FALSE(PackFile::fromBytes(image, "test.hetpack", error));
  EXPECT_NE(error.find("section \"manifest.json\" starts at byte 8, inside "
                       "the header and section table (bytes 0.." +
                       std::to_string(headerEnd + 8) + ")"),
            std::string::npos)
      << error;
}

TEST(PackTest, ManifestsOfWrongTypesAreErrorsNotExceptions) {
  const char *cases[] = {
      R"({"format": {}, "version": 1})",
      R"({"format": "hetcpack", "version": "1"})",
      R"({"format": "hetcpack", "version": 1, "weights": []})",
      R"({"format": "hetcpack", "version": 1, "weights": {"path": 3}})",
      R"([1, 2, 3])",
      R"("hetcpack")",
      R"({"format": "hetcpack")",
      "",
  };
  for (const char *text : cases) {
    std::string error;
    EXPECT_FALSE(Manifest::fromJson(text, "test.hetpack", error)) << text;
    EXPECT_NE(error.find("test.hetpack: manifest"), std::string::npos) << error;
  }
}

TEST(PackTest, ManifestSizesAreBounded) {
  struct Case {
    const char *field;
    int64_t value;
  } cases[] = {{"layers", 0},          {"layers", 5000},
               {"vocab_size", -1},     {"head_dim", int64_t(1) << 30},
               {"kv_heads", 100000},   {"context_length", int64_t(1) << 40},
               {"context_length", 0}};
  for (const Case &c : cases) {
    std::string json = sampleManifest().toJson();
    std::string key = std::string("\"") + c.field + "\": ";
    size_t at = json.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    size_t end = json.find_first_of(",\n}", at + key.size());
    json.replace(at + key.size(), end - at - key.size(), std::to_string(c.value));
    std::string error;
    EXPECT_FALSE(Manifest::fromJson(json, "test.hetpack", error))
        << c.field << " " << c.value;
    EXPECT_NE(error.find(std::string("\"model.") + c.field + "\""),
              std::string::npos)
        << error;
  }
}

/// A manifest with the SPIR-V part: two library variants.
Manifest spirvManifest() {
  Manifest manifest = sampleManifest();
  SpirvCode code;
  code.libraries = {{"subgroup", "code/spirv/kernels-subgroup.spv", "1.3",
                     {"Shader", "GroupNonUniformArithmetic"},
                     {"SPV_KHR_storage_buffer_storage_class"}},
                    {"portable", "code/spirv/kernels-portable.spv", "1.0",
                     {"Shader"},
                     {"SPV_KHR_storage_buffer_storage_class"}}};
  code.kernels = {{"add_f32", 4}};
  code.prefillSection = "program/spirv/prefill.json";
  code.decodeSection = "program/spirv/decode.json";
  code.maxPrefillTokens = 64;
  manifest.spirv = code;
  return manifest;
}

TEST(PackTest, SpirvLibrariesRoundTripWithTheirRequirements) {
  std::string error;
  std::optional<Manifest> parsed =
      Manifest::fromJson(spirvManifest().toJson(), "test.hetpack", error);
  ASSERT_TRUE(parsed) << error;
  ASSERT_TRUE(parsed->spirv);
  ASSERT_EQ(parsed->spirv->libraries.size(), 2u);
  const SpirvLibrary &best = parsed->spirv->libraries[0];
  EXPECT_EQ(best.variant, "subgroup");
  EXPECT_EQ(best.section, "code/spirv/kernels-subgroup.spv");
  EXPECT_EQ(best.version, "1.3");
  EXPECT_EQ(best.capabilities,
            (std::vector<std::string>{"Shader", "GroupNonUniformArithmetic"}));
  EXPECT_EQ(parsed->spirv->libraries[1].variant, "portable");
  EXPECT_EQ(parsed->spirv->decodeBatchSection, "");
  EXPECT_EQ(parsed->spirv->maxBatch, 0);
}

// The batch's program is optional; where present it comes with its size,
// and one without the other is refused.
TEST(PackTest, ASpirvBatchProgramRoundTripsWithItsSize) {
  Manifest manifest = spirvManifest();
  manifest.spirv->decodeBatchSection = "program/spirv/decode_batch.json";
  manifest.spirv->maxBatch = 64;
  std::string error;
  std::optional<Manifest> parsed =
      Manifest::fromJson(manifest.toJson(), "test.hetpack", error);
  ASSERT_TRUE(parsed && parsed->spirv) << error;
  EXPECT_EQ(parsed->spirv->decodeBatchSection,
            "program/spirv/decode_batch.json");
  EXPECT_EQ(parsed->spirv->maxBatch, 64);
  for (auto edit : std::vector<std::function<void(nlohmann::json &)>>{
           [](nlohmann::json &spirv) { spirv.erase("max_batch"); },
           [](nlohmann::json &spirv) { spirv.erase("decode_batch"); },
           [](nlohmann::json &spirv) { spirv["max_batch"] = 0; },
           [](nlohmann::json &spirv) { spirv["decode_batch"] = 7; }}) {
    nlohmann::json json = nlohmann::json::parse(manifest.toJson());
    edit(json["spirv"]);
    EXPECT_FALSE(Manifest::fromJson(json.dump(), "test.hetpack", error))
        << json["spirv"].dump();
    EXPECT_NE(error.find("\"max_batch\" of 1 to 65535"), std::string::npos)
        << error;
  }
}

TEST(PackTest, MalformedSpirvLibrariesAreRefused) {
  auto edited = [](auto edit) {
    Manifest manifest = spirvManifest();
    edit(*manifest.spirv);
    return manifest.toJson();
  };
  std::vector<std::string> cases = {
      edited([](SpirvCode &code) { code.libraries.clear(); }),
      edited([](SpirvCode &code) { code.libraries[0].version = "v1.3"; }),
      edited([](SpirvCode &code) { code.libraries[0].version = "1.3.0"; }),
      edited([](SpirvCode &code) { code.libraries[1].variant = "subgroup"; }),
      edited([](SpirvCode &code) {
        code.libraries[1].section = code.libraries[0].section;
      }),
      edited([](SpirvCode &code) { code.libraries[0].capabilities = {""}; }),
  };
  for (const std::string &json : cases) {
    std::string error;
    EXPECT_FALSE(Manifest::fromJson(json, "test.hetpack", error)) << json;
    EXPECT_NE(error.find("\"libraries\""), std::string::npos) << error;
  }
}

/// A manifest with the kernel library built for NVIDIA and AMD GPUs.
Manifest gpuManifest() {
  Manifest manifest = sampleManifest();
  GpuCode nvidia;
  nvidia.libraries = {{"sm_80", "cubin", "code/nvptx/sm_80.cubin"},
                      {"compute_80", "ptx", "code/nvptx/compute_80.ptx"}};
  nvidia.kernels = {{"add_f32", 4, {256, 1, 1}}};
  manifest.nvptx = nvidia;
  GpuCode amd;
  amd.libraries = {{"gfx942", "hsaco", "code/amdgpu/gfx942.hsaco"}};
  amd.kernels = {{"matmul_tiled_f32", 4, {16, 16, 1}}};
  manifest.amdgpu = amd;
  return manifest;
}

TEST(PackTest, GpuLibrariesRoundTrip) {
  std::string error;
  std::optional<Manifest> parsed =
      Manifest::fromJson(gpuManifest().toJson(), "test.hetpack", error);
  ASSERT_TRUE(parsed) << error;
  ASSERT_TRUE(parsed->nvptx);
  ASSERT_TRUE(parsed->amdgpu);
  ASSERT_EQ(parsed->nvptx->libraries.size(), 2u);
  EXPECT_EQ(parsed->nvptx->libraries[1].variant, "compute_80");
  EXPECT_EQ(parsed->nvptx->libraries[1].format, "ptx");
  EXPECT_EQ(parsed->nvptx->libraries[1].section, "code/nvptx/compute_80.ptx");
  EXPECT_EQ(parsed->amdgpu->libraries[0].format, "hsaco");
  EXPECT_EQ(parsed->amdgpu->kernels,
            (std::vector<GpuKernel>{{"matmul_tiled_f32", 4, {16, 16, 1}}}));
  EXPECT_FALSE(Manifest::fromJson(sampleManifest().toJson(), "t", error)->nvptx);
}

TEST(PackTest, MalformedGpuLibrariesAreRefused) {
  auto edited = [](auto edit) {
    Manifest manifest = gpuManifest();
    edit(manifest);
    return manifest.toJson();
  };
  std::vector<std::pair<std::string, std::string>> cases = {
      {"nvptx", edited([](Manifest &m) { m.nvptx->libraries.clear(); })},
      // A code object is not NVIDIA code, nor a cubin AMD's.
      {"nvptx",
       edited([](Manifest &m) { m.nvptx->libraries[0].format = "hsaco"; })},
      {"amdgpu",
       edited([](Manifest &m) { m.amdgpu->libraries[0].format = "cubin"; })},
      {"nvptx",
       edited([](Manifest &m) { m.nvptx->libraries[1].variant = "sm_80"; })},
      {"nvptx", edited([](Manifest &m) {
         m.nvptx->libraries[1].section = m.nvptx->libraries[0].section;
       })},
      {"nvptx",
       edited([](Manifest &m) { m.nvptx->libraries[0].variant = "../sm"; })},
      {"amdgpu", edited([](Manifest &m) { m.amdgpu->kernels.clear(); })},
      {"amdgpu",
       edited([](Manifest &m) { m.amdgpu->kernels[0].bindings = 65; })},
      // More than 1024 threads, or an empty axis, launches nowhere.
      {"amdgpu",
       edited([](Manifest &m) { m.amdgpu->kernels[0].workgroup = {64, 32, 1}; })},
      {"nvptx",
       edited([](Manifest &m) { m.nvptx->kernels[0].workgroup = {0, 1, 1}; })},
  };
  for (const auto &[field, json] : cases) {
    std::string error;
    EXPECT_FALSE(Manifest::fromJson(json, "test.hetpack", error)) << json;
    EXPECT_NE(error.find("field \"" + field + "\" must hold"),
              std::string::npos)
        << error;
  }
}

namespace {

Manifest plannedManifest() {
  Manifest manifest = sampleManifest();
  PlannedCode plan;
  plan.system = "host-vulkan";
  plan.prefillSection = "program/plan/prefill.json";
  plan.decodeSection = "program/plan/decode.json";
  plan.maxPrefillTokens = 64;
  plan.units = {{"cpu0", 1}, {"vulkan0", 5}};
  plan.memory = {{"cpu0", 1000, 0, 0, 300, 0},
                 {"vulkan0", 2000, 4096, 512, 700, 9000}};
  plan.decodeSecondsPerStep = 0.002;
  plan.emptyCacheDecodeSecondsPerStep = 0.001;
  plan.plannedContext = 64;
  plan.kvHostBlocks = 300;
  manifest.plan = plan;
  return manifest;
}

} // namespace

// The plan's predictions travel with the pack, and what is not a plan's
// prediction is refused with the field named.
TEST(PackTest, PlanPredictionsRoundTripAndMalformedOnesAreRefused) {
  std::string error;
  std::optional<Manifest> parsed =
      Manifest::fromJson(plannedManifest().toJson(), "test.hetpack", error);
  ASSERT_TRUE(parsed && parsed->plan) << error;
  ASSERT_EQ(parsed->plan->memory.size(), 2u);
  EXPECT_EQ(parsed->plan->memory[1].device, "vulkan0");
  EXPECT_EQ(parsed->plan->memory[1].weightBytes, 2000u);
  EXPECT_EQ(parsed->plan->memory[1].kvCacheBytes, 4096u);
  EXPECT_EQ(parsed->plan->memory[1].streamBufferBytes, 512u);
  EXPECT_EQ(parsed->plan->memory[1].workBytes, 700u);
  EXPECT_EQ(parsed->plan->memory[1].capacityBytes, 9000u);
  EXPECT_DOUBLE_EQ(parsed->plan->decodeSecondsPerStep, 0.002);
  EXPECT_DOUBLE_EQ(parsed->plan->emptyCacheDecodeSecondsPerStep, 0.001);
  EXPECT_EQ(parsed->plan->plannedContext, 64);
  EXPECT_EQ(parsed->plan->kvHostBlocks, 300);

  auto edited = [](auto edit) {
    nlohmann::json json = nlohmann::json::parse(plannedManifest().toJson());
    edit(json["plan"]["predicted"]);
    return json.dump();
  };
  std::vector<std::string> cases = {
      edited([](nlohmann::json &p) { p["memory"]["gpu9"] = p["memory"]["cpu0"]; }),
      edited([](nlohmann::json &p) { p["memory"]["cpu0"]["weight_bytes"] = -1; }),
      edited([](nlohmann::json &p) { p["memory"]["cpu0"].erase("kv_cache_bytes"); }),
      edited([](nlohmann::json &p) { p["memory"]["cpu0"].erase("capacity_bytes"); }),
      edited([](nlohmann::json &p) { p["memory"]["cpu0"]["work_bytes"] = "all"; }),
      edited([](nlohmann::json &p) { p["decode_seconds_per_step"] = "fast"; }),
      edited([](nlohmann::json &p) { p["context"] = 0; }),
      edited([](nlohmann::json &p) { p = nlohmann::json::array(); }),
  };
  for (const std::string &json : cases) {
    EXPECT_FALSE(Manifest::fromJson(json, "test.hetpack", error)) << json;
    EXPECT_NE(error.find("field \"plan.predicted\" must hold"),
              std::string::npos)
        << error;
  }
  // The host tier is a whole number of blocks.
  for (nlohmann::json bad : {nlohmann::json(0), nlohmann::json(-3),
                             nlohmann::json(2.5), nlohmann::json("many")}) {
    nlohmann::json json = nlohmann::json::parse(plannedManifest().toJson());
    json["plan"]["kv_host_blocks"] = bad;
    EXPECT_FALSE(Manifest::fromJson(json.dump(), "test.hetpack", error));
    EXPECT_NE(error.find("field \"plan.kv_host_blocks\" must be a whole "
                         "number of blocks"),
              std::string::npos)
        << error;
  }
  // Its format is one the runtime keeps, and survives the round trip.
  for (nlohmann::json bad : {nlohmann::json("int4"), nlohmann::json(8),
                             nlohmann::json(true)}) {
    nlohmann::json json = nlohmann::json::parse(plannedManifest().toJson());
    json["plan"]["kv_tier_format"] = bad;
    EXPECT_FALSE(Manifest::fromJson(json.dump(), "test.hetpack", error));
    EXPECT_NE(error.find("field \"plan.kv_tier_format\" must be \"exact\" "
                         "or \"int8\""),
              std::string::npos)
        << error;
  }
  Manifest int8Tier = plannedManifest();
  int8Tier.plan->kvTierInt8 = true;
  std::optional<Manifest> read =
      Manifest::fromJson(int8Tier.toJson(), "test.hetpack", error);
  ASSERT_TRUE(read) << error;
  EXPECT_TRUE(read->plan->kvTierInt8);
  read = Manifest::fromJson(plannedManifest().toJson(), "test.hetpack", error);
  ASSERT_TRUE(read) << error;
  EXPECT_FALSE(read->plan->kvTierInt8);
}

TEST(NonFiniteTest, FindsNaNAndInfinityInEveryFormat) {
  auto f16 = [](uint16_t bits) {
    std::vector<uint8_t> bytes(2);
    std::memcpy(bytes.data(), &bits, 2);
    return bytes;
  };
  GgufWriter writer;
  std::vector<uint8_t> f32(16, 0);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(f32.data() + 8, &nan, 4);
  writer.addTensor("blk.3.attn_q.weight", {4}, BlockFormat::F32, f32);
  std::vector<uint8_t> half = f16(0x3C00);
  std::vector<uint8_t> inf = f16(0x7C00);
  half.insert(half.end(), inf.begin(), inf.end());
  writer.addTensor("blk.1.ffn_up.weight", {2}, BlockFormat::F16, half);
  // A Q8_0 block: f16 scale then 32 int8 values; an infinite scale.
  std::vector<uint8_t> q8 = f16(0x7C00);
  q8.resize(34, 1);
  writer.addTensor("blk.0.attn_k.weight", {32}, BlockFormat::Q8_0, q8);
  std::vector<uint8_t> finite = f16(0x3C00);
  finite.resize(34, 1);
  writer.addTensor("token_embd.weight", {32}, BlockFormat::Q8_0, finite);
  std::string error;
  std::unique_ptr<GgufFile> file =
      GgufFile::openBuffer(writer.serialize(), "nan.gguf", error);
  ASSERT_TRUE(file) << error;
  EXPECT_EQ(countNonFinite(*file, *file->findTensor("blk.3.attn_q.weight")), 1u);
  EXPECT_EQ(countNonFinite(*file, *file->findTensor("blk.1.ffn_up.weight")), 1u);
  EXPECT_EQ(countNonFinite(*file, *file->findTensor("token_embd.weight")), 0u);
  // Forward order, not file order: layer 0 comes first.
  std::optional<NonFiniteTensor> first = firstNonFiniteTensor(*file);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->name, "blk.0.attn_k.weight");
  EXPECT_EQ(first->layer, 0);
  float values[3] = {1, 2, std::numeric_limits<float>::infinity()};
  EXPECT_TRUE(allFinite(values, 2));
  EXPECT_FALSE(allFinite(values, 3));
}
