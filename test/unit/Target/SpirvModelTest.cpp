// Whole models on every device that runs SPIR-V: the real models are
// imported as hetc imports them, their prefill and decode become programs of
// the SPIR-V kernel library (hetc-spirv-build-program), and the runtime's
// program runner plays them; greedy generation must give exactly llama.cpp's
// tokens (the *.reference.json files beside the models), with the caches
// paged in blocks found through a scrambled block table.
#include "SpirvTestSupport.h"
#include "hetc/Cost/CostModel.h"
#include "hetc/Import/GgufImporter.h"
#include "passes/het/Passes.h"
#include "passes/target/spirv/ProgramBuilder.h"
#include "runtime/core/ProgramRunner.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/ProgramMemory.h"
#include "runtime/hal/Device.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

namespace {

std::string sharedPath(const std::string &relative) {
  return std::string(HETC_SHARED_DIR) + "/" + relative;
}

struct ModelPrograms {
  hetc::abi::Program prefill, decode;
  /// A decode step of a batch: one sequence per token.
  hetc::abi::Program batch;
};

/// Slots of a block: small, so that a prompt spans several blocks.
constexpr int64_t kBlockSize = 16;

/// The prefill and decode programs of `file`, for a cache of `context`
/// paged in blocks of kBlockSize.
ModelPrograms programsOf(const hetrt::format::GgufFile &file, int64_t context) {
  mlir::DialectRegistry registry;
  hetc::registerAllDialects(registry);
  mlir::MLIRContext mlirContext(registry);
  mlirContext.loadAllAvailableDialects();
  std::string error;
  hetc::import::ImportOptions options;
  options.contextLength = context;
  options.batchedDecode = true;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      hetc::import::importGguf(mlirContext, file, options, error);
  EXPECT_TRUE(module) << error;
  ModelPrograms programs;
  if (!module)
    return programs;
  mlir::PassManager paging(&mlirContext);
  hetc::het::HetPageKVCachePassOptions pages;
  pages.blockSize = kBlockSize;
  paging.addPass(hetc::het::createHetPageKVCachePass(pages));
  EXPECT_TRUE(mlir::succeeded(paging.run(*module)));
  for (auto [name, program] :
       {std::pair<const char *, hetc::abi::Program *>{"prefill",
                                                       &programs.prefill},
        {"decode", &programs.decode},
        {"decode_batch", &programs.batch}}) {
    auto function = module->lookupSymbol<mlir::func::FuncOp>(name);
    EXPECT_TRUE(function) << name;
    if (!function)
      continue;
    mlir::FailureOr<hetc::abi::Program> built =
        hetc::spirv::buildProgram(function);
    EXPECT_TRUE(mlir::succeeded(built)) << name;
    if (mlir::succeeded(built))
      *program = std::move(*built);
  }
  return programs;
}

/// The kernel library's kernels as a runner loads them.
std::vector<hetrt::hal::KernelSignature>
librarySignatures(const hetc::target::spirv::SpirvExecutable &library) {
  std::vector<hetrt::hal::KernelSignature> signatures;
  for (const hetc::target::spirv::SpirvKernel &kernel : library.kernels)
    signatures.push_back({kernel.entryPoint, kernel.bindings, 0});
  return signatures;
}

/// `model`'s GGUF file (null, with a failure recorded, when it cannot be
/// opened) and llama.cpp's greedy tokens for it.
std::unique_ptr<hetrt::format::GgufFile> openModel(const std::string &model) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(sharedPath("models/" + model + ".gguf"),
                                    error);
  EXPECT_TRUE(file) << error;
  return file;
}

nlohmann::json referenceOf(const std::string &model) {
  std::ifstream in(sharedPath("models/" + model + ".reference.json"));
  return nlohmann::json::parse(in);
}

void expectReferenceTokens(const std::string &model) {
  std::unique_ptr<hetrt::format::GgufFile> file = openModel(model);
  ASSERT_TRUE(file);
  nlohmann::json reference = referenceOf(model);
  constexpr int64_t kContext = 256;
  ModelPrograms programs = programsOf(*file, kContext);
  ASSERT_FALSE(programs.prefill.steps.empty());
  ASSERT_FALSE(programs.decode.steps.empty());
  const hetc::target::spirv::SpirvExecutable &library =
      hetc::test::kernelLibrary();
  std::vector<hetrt::hal::KernelSignature> signatures =
      librarySignatures(library);

  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    hetrt::hal::Error halError;
    std::unique_ptr<hetrt::core::ProgramRunner> runner =
        hetrt::core::ProgramRunner::create(
            device, hetrt::hal::ExecutableFormat::SpirV, library.binary,
            signatures, {{programs.prefill, kContext}, {programs.decode, 1}},
            *file, halError);
    ASSERT_TRUE(runner) << halError.message;
    ASSERT_EQ(runner->blockTableEntries(), kContext / kBlockSize);
    ASSERT_EQ(runner->kvBlockSize(), kBlockSize);
    // Logical block b lives in pool block 5b mod 16: no two neighbours
    // are neighbours in the pool.
    std::vector<int32_t> table(kContext / kBlockSize);
    for (size_t b = 0; b < table.size(); ++b)
      table[b] = static_cast<int32_t>(b * 5 % table.size());
    std::vector<float> logits(runner->vocab());
    auto greedy = [&] {
      return static_cast<int32_t>(
          std::max_element(logits.begin(), logits.end()) - logits.begin());
    };
    for (const nlohmann::json &prompt : reference["prompts"]) {
      SCOPED_TRACE(prompt["name"].get<std::string>());
      std::vector<int32_t> tokens =
          prompt["prompt_token_ids"].get<std::vector<int32_t>>();
      std::vector<int32_t> expected =
          prompt["generated_token_ids"].get<std::vector<int32_t>>();
      ASSERT_TRUE(runner->run(0, tokens.data(),
                              static_cast<int64_t>(tokens.size()), 0,
                              table.data(), logits.data(), halError))
          << halError.message;
      std::vector<int32_t> generated = {greedy()};
      int64_t position = static_cast<int64_t>(tokens.size());
      while (generated.size() < expected.size()) {
        ASSERT_TRUE(runner->run(1, &generated.back(), 1, position++,
                                table.data(), logits.data(), halError))
            << halError.message;
        generated.push_back(greedy());
      }
      EXPECT_EQ(generated, expected);
      // Once it has run, a decode step writes only the parameters that
      // follow the position (the attention's key count); the buffers of
      // the others keep theirs.
      uint64_t before = runner->stats()[0].parameterWrites;
      ASSERT_TRUE(runner->run(1, &generated.back(), 1, position,
                              table.data(), logits.data(), halError))
          << halError.message;
      size_t dispatches = 0, followPosition = 0;
      for (const hetc::abi::ProgramStep &step : programs.decode.steps) {
        if (step.kind != hetc::abi::StepKind::Dispatch)
          continue;
        ++dispatches;
        followPosition += std::any_of(
            step.params.begin(), step.params.end(),
            [](const hetc::abi::ProgramValue &v) { return v.perKey != 0; });
      }
      EXPECT_EQ(runner->stats()[0].parameterWrites - before, followPosition);
      EXPECT_LT(followPosition * 8, dispatches);
    }
    // A table naming a block past the pool would have the kernels write
    // outside the caches: the run is refused before anything runs.
    std::vector<int32_t> outside = table;
    outside.back() = static_cast<int32_t>(table.size());
    int32_t token = 1;
    EXPECT_FALSE(runner->run(1, &token, 1, 0, outside.data(), logits.data(),
                             halError));
    EXPECT_NE(halError.message.find("entry 15 of the block table is block 16, "
                                    "outside the pool's 16 blocks"),
              std::string::npos)
        << halError.message;
  });
}

TEST(SpirvModels, Stories260KGivesTheReferenceTokens) {
  expectReferenceTokens("stories260K");
}

TEST(SpirvModels, BabyLlama105GivesTheReferenceTokens) {
  expectReferenceTokens("babyllama105");
}

/// Every reference prompt of `model` as a sequence of its own in one pool,
/// their blocks interleaved: each is prefilled alone, then all decode
/// together, one token each per step of the batch's program (each at its
/// own position, through its own table row), leaving the batch as they
/// finish. Each gives its reference tokens.
void expectBatchedReferenceTokens(const std::string &model) {
  std::unique_ptr<hetrt::format::GgufFile> file = openModel(model);
  ASSERT_TRUE(file);
  nlohmann::json reference = referenceOf(model);
  constexpr int64_t kContext = 1024;
  constexpr int64_t kMaxBatch = 8;
  ModelPrograms programs = programsOf(*file, kContext);
  ASSERT_FALSE(programs.batch.steps.empty());
  const hetc::target::spirv::SpirvExecutable &library =
      hetc::test::kernelLibrary();
  std::vector<hetrt::hal::KernelSignature> signatures =
      librarySignatures(library);

  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    hetrt::hal::Error halError;
    std::unique_ptr<hetrt::core::ProgramRunner> runner =
        hetrt::core::ProgramRunner::create(
            device, hetrt::hal::ExecutableFormat::SpirV, library.binary,
            signatures,
            {{programs.prefill, kContext},
             {programs.decode, 1},
             {programs.batch, kMaxBatch}},
            *file, halError);
    ASSERT_TRUE(runner) << halError.message;
    int64_t entries = runner->blockTableEntries();
    int64_t vocab = runner->vocab();
    struct Sequence {
      std::vector<int32_t> table, expected, generated;
      int64_t position = 0;
    };
    std::vector<Sequence> sequences;
    size_t count = reference["prompts"].size();
    ASSERT_GE(count, 2u);
    for (size_t i = 0; i < count; ++i) {
      const nlohmann::json &prompt = reference["prompts"][i];
      Sequence sequence;
      // Sequence i's block b is pool block b * count + i, mirrored.
      sequence.table.assign(static_cast<size_t>(entries), 0);
      for (int64_t b = 0; b < entries / static_cast<int64_t>(count); ++b)
        sequence.table[static_cast<size_t>(b)] = static_cast<int32_t>(
            entries - 1 - (b * static_cast<int64_t>(count) + int64_t(i)));
      std::vector<int32_t> tokens =
          prompt["prompt_token_ids"].get<std::vector<int32_t>>();
      sequence.expected =
          prompt["generated_token_ids"].get<std::vector<int32_t>>();
      std::vector<float> logits(static_cast<size_t>(vocab));
      ASSERT_TRUE(runner->run(0, tokens.data(),
                              static_cast<int64_t>(tokens.size()), 0,
                              sequence.table.data(), logits.data(), halError))
          << halError.message;
      sequence.generated = {static_cast<int32_t>(
          std::max_element(logits.begin(), logits.end()) - logits.begin())};
      sequence.position = static_cast<int64_t>(tokens.size());
      sequences.push_back(std::move(sequence));
    }
    size_t steps = 0;
    for (;;) {
      std::vector<Sequence *> batch;
      for (Sequence &sequence : sequences)
        if (sequence.generated.size() < sequence.expected.size())
          batch.push_back(&sequence);
      if (batch.empty())
        break;
      ASSERT_LE(batch.size(), static_cast<size_t>(kMaxBatch));
      std::vector<int32_t> tokens, positions, tables;
      for (Sequence *member : batch) {
        tokens.push_back(member->generated.back());
        positions.push_back(static_cast<int32_t>(member->position++));
        tables.insert(tables.end(), member->table.begin(),
                      member->table.end());
      }
      std::vector<float> logits(batch.size() * static_cast<size_t>(vocab));
      ASSERT_TRUE(runner->runBatch(2, tokens.data(), positions.data(),
                                   static_cast<int64_t>(batch.size()),
                                   tables.data(), logits.data(), halError))
          << halError.message;
      for (size_t m = 0; m < batch.size(); ++m) {
        auto row = logits.begin() + static_cast<long>(m * vocab);
        batch[m]->generated.push_back(static_cast<int32_t>(
            std::max_element(row, row + vocab) - row));
      }
      ++steps;
    }
    EXPECT_GT(steps, 0u);
    for (size_t i = 0; i < sequences.size(); ++i) {
      SCOPED_TRACE(reference["prompts"][i]["name"].get<std::string>());
      EXPECT_EQ(sequences[i].generated, sequences[i].expected);
    }
    // The single sequence's program takes no batch.
    std::vector<int32_t> two = {1, 2}, at = {3, 4};
    std::vector<int32_t> tables(static_cast<size_t>(2 * entries), 0);
    std::vector<float> logits(static_cast<size_t>(2 * vocab));
    EXPECT_FALSE(runner->runBatch(0, two.data(), at.data(), 2, tables.data(),
                                  logits.data(), halError));
    EXPECT_NE(halError.message.find("buffer takes one sequence"),
              std::string::npos)
        << halError.message;
  });
}

TEST(SpirvModels, Stories260KDecodesABatchToTheReferenceTokens) {
  expectBatchedReferenceTokens("stories260K");
}

TEST(SpirvModels, BabyLlama105DecodesABatchToTheReferenceTokens) {
  expectBatchedReferenceTokens("babyllama105");
}

/// The error ProgramRunner::create gives for `programs` on the first SPIR-V
/// device, with stories260K's weights; empty when it loads.
std::string loadError(const hetc::abi::Program &prefill,
                      const hetc::abi::Program &decode) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file = hetrt::format::GgufFile::open(
      sharedPath("models/stories260K.gguf"), error);
  EXPECT_TRUE(file) << error;
  const hetc::target::spirv::SpirvExecutable &library =
      hetc::test::kernelLibrary();
  std::vector<hetrt::hal::KernelSignature> signatures =
      librarySignatures(library);
  std::string message = "no SPIR-V device";
  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    hetrt::hal::Error halError;
    std::unique_ptr<hetrt::core::ProgramRunner> runner =
        hetrt::core::ProgramRunner::create(
            device, hetrt::hal::ExecutableFormat::SpirV, library.binary,
            signatures, {{prefill, 16}, {decode, 1}}, *file, halError);
    message = runner ? "" : halError.message;
  });
  return message;
}

// The cost model counts a unit's dispatches on a Vulkan device as these
// programs dispatch them: a plan's overhead per step is that of the code
// that runs. A cache of more than 256 positions splits decode attention.
TEST(SpirvPrograms, TheCostModelCountsTheProgramsDispatches) {
  hetc::hardware::Device vulkan;
  vulkan.kind = hetc::hardware::DeviceKind::Spirv;
  for (const char *model : {"stories260K", "babyllama105"})
    for (int64_t context : {128, 512}) {
      std::unique_ptr<hetrt::format::GgufFile> file = openModel(model);
      ASSERT_TRUE(file);
      ModelPrograms programs = programsOf(*file, context);
      std::string error;
      std::optional<hetc::cost::ModelShape> shape = hetc::cost::shapeFromGguf(
          sharedPath(std::string("models/") + model + ".gguf"), error);
      ASSERT_TRUE(shape) << error;
      auto dispatches = [](const hetc::abi::Program &program) {
        return std::count_if(program.steps.begin(), program.steps.end(),
                             [](const hetc::abi::ProgramStep &step) {
                               return step.kind == hetc::abi::StepKind::Dispatch;
                             });
      };
      int64_t decode = 0, prefill = 0;
      for (const hetc::cost::Unit &unit : hetc::cost::unitsOf(*shape, 2)) {
        decode += hetc::cost::programDispatches(unit, vulkan, true, context);
        prefill += hetc::cost::programDispatches(unit, vulkan, false, context);
      }
      EXPECT_EQ(dispatches(programs.decode), decode) << model << " " << context;
      EXPECT_EQ(dispatches(programs.prefill), prefill) << model << " " << context;
    }
}

TEST(SpirvPrograms, ProgramsThatDoNotFitTheLibraryOrTheModelAreRefused) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file = hetrt::format::GgufFile::open(
      sharedPath("models/stories260K.gguf"), error);
  ASSERT_TRUE(file) << error;
  ModelPrograms programs = programsOf(*file, 64);
  std::string intact = loadError(programs.prefill, programs.decode);
  if (testing::Test::IsSkipped())
    return;
  ASSERT_EQ(intact, "");
  auto firstDispatch = [](hetc::abi::Program &program) -> hetc::abi::ProgramStep & {
    for (hetc::abi::ProgramStep &step : program.steps)
      if (step.kind == hetc::abi::StepKind::Dispatch)
        return step;
    return program.steps.front();
  };
  ModelPrograms unknown = programs;
  firstDispatch(unknown.prefill).kernel = "softmax_f32";
  EXPECT_NE(loadError(unknown.prefill, unknown.decode)
                .find("program 0, step 0: the kernel library has no kernel "
                      "\"softmax_f32\""),
            std::string::npos);
  ModelPrograms fewer = programs;
  firstDispatch(fewer.prefill).buffers.pop_back();
  EXPECT_NE(loadError(fewer.prefill, fewer.decode)
                .find("kernel \"get_rows_f32\" takes 4 buffers, not 3"),
            std::string::npos);
  ModelPrograms missing = programs;
  for (hetc::abi::ProgramBuffer &buffer : missing.decode.buffers)
    if (buffer.role == hetc::abi::BufferRole::Weight) {
      buffer.name = buffer.weight = "blk.9.attn_q.weight";
      break;
    }
  EXPECT_NE(loadError(missing.prefill, missing.decode)
                .find("stories260K.gguf: has no tensor \"blk.9.attn_q.weight\", "
                      "which program 1 reads"),
            std::string::npos);
  ModelPrograms resized = programs;
  for (hetc::abi::ProgramBuffer &buffer : resized.prefill.buffers)
    if (buffer.role == hetc::abi::BufferRole::Weight) {
      buffer.bytes.constant += 4;
      break;
    }
  EXPECT_NE(loadError(resized.prefill, resized.decode).find("holds 131072 bytes, but program 0 reads 131076"),
            std::string::npos);
  ModelPrograms huge = programs;
  huge.prefill.buffers.back().bytes = hetc::abi::ProgramValue::tokens(int64_t(1) << 40);
  EXPECT_NE(loadError(huge.prefill, huge.decode).find("is outside 1 byte to 1 TiB"),
            std::string::npos);
}

// A runner holds in the device's memory exactly what programHeldBytes
// predicts from the programs (the compiler's check of a plan), and a budget
// one byte short of it is refused before anything runs; the bytes come
// back when the runner goes.
TEST(SpirvPrograms, ARunnerHoldsWhatTheProgramsPredictWithinItsBudget) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file = hetrt::format::GgufFile::open(
      sharedPath("models/stories260K.gguf"), error);
  ASSERT_TRUE(file) << error;
  ModelPrograms programs = programsOf(*file, 64);
  std::vector<hetrt::format::DeviceHeldBytes> predicted =
      hetrt::format::programHeldBytes(
          {{&programs.prefill, 16}, {&programs.decode, 1}});
  ASSERT_EQ(predicted.size(), 1u);
  const hetrt::format::DeviceHeldBytes &held = predicted[0];
  ASSERT_GT(held.weightBytes, 0u);
  ASSERT_GT(held.kvCacheBytes, 0u);
  ASSERT_GT(held.workBytes, 0u);
  const hetc::target::spirv::SpirvExecutable &library =
      hetc::test::kernelLibrary();
  std::vector<hetrt::hal::KernelSignature> signatures =
      librarySignatures(library);
  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    auto load = [&](uint64_t budget, hetrt::hal::Error &halError) {
      hetrt::core::ProgramRunner::DeviceCode code;
      code.device = &device;
      code.format = hetrt::hal::ExecutableFormat::SpirV;
      code.binary = library.binary;
      code.kernels = signatures;
      code.memoryBudget = budget;
      code.budgetSource = "the test's plan";
      return hetrt::core::ProgramRunner::create(
          {code}, {{programs.prefill, 16}, {programs.decode, 1}}, *file,
          halError);
    };
    hetrt::hal::Error halError;
    std::unique_ptr<hetrt::core::ProgramRunner> runner =
        load(held.total(), halError);
    ASSERT_TRUE(runner) << halError.message;
    hetrt::core::ProgramRunner::DeviceStats stats = runner->stats()[0];
    EXPECT_EQ(stats.weightBytes, held.weightBytes);
    EXPECT_EQ(stats.kvCacheBytes, held.kvCacheBytes);
    EXPECT_EQ(stats.streamBufferBytes, held.streamBufferBytes);
    EXPECT_EQ(stats.workBytes, held.workBytes);
    std::vector<hetrt::core::MemorySpaceStats> spaces = runner->memorySpaces();
    ASSERT_EQ(spaces.size(), 1u);
    EXPECT_EQ(spaces[0].name, device.info().name + "." +
                                  device.info().memories[0].name);
    EXPECT_EQ(spaces[0].budgetBytes, held.total());
    EXPECT_EQ(spaces[0].peakBytes, held.total());
    runner.reset();

    EXPECT_FALSE(load(held.total() - 1, halError));
    EXPECT_EQ(halError.kind, hetrt::core::Failure::OutOfMemory);
    EXPECT_NE(halError.message.find(
                  "past the budget of " + std::to_string(held.total() - 1) +
                  " bytes the test's plan sets"),
              std::string::npos)
        << halError.message;
  });
}

} // namespace
