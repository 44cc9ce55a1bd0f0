// Whole models on every device that runs SPIR-V: the real models are
// imported as hetc imports them, their prefill and decode become programs of
// the SPIR-V kernel library (hetc-spirv-build-program), and the runtime's
// program runner plays them; greedy generation must give exactly llama.cpp's
// tokens (the *.reference.json files beside the models).
#include "SpirvTestSupport.h"
#include "hetc/Import/GgufImporter.h"
#include "passes/target/spirv/ProgramBuilder.h"
#include "runtime/core/ProgramRunner.h"
#include "runtime/format/Gguf.h"
#include "runtime/hal/Device.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
};

/// The prefill and decode programs of `file`, for a cache of `context`.
ModelPrograms programsOf(const hetrt::format::GgufFile &file, int64_t context) {
  mlir::DialectRegistry registry;
  hetc::registerAllDialects(registry);
  mlir::MLIRContext mlirContext(registry);
  mlirContext.loadAllAvailableDialects();
  std::string error;
  hetc::import::ImportOptions options;
  options.contextLength = context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      hetc::import::importGguf(mlirContext, file, options, error);
  EXPECT_TRUE(module) << error;
  ModelPrograms programs;
  if (!module)
    return programs;
  for (auto [name, program] :
       {std::pair<const char *, hetc::abi::Program *>{"prefill",
                                                       &programs.prefill},
        {"decode", &programs.decode}}) {
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

void expectReferenceTokens(const std::string &model) {
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(sharedPath("models/" + model + ".gguf"),
                                    error);
  ASSERT_TRUE(file) << error;
  std::ifstream in(sharedPath("models/" + model + ".reference.json"));
  nlohmann::json reference = nlohmann::json::parse(in);
  constexpr int64_t kContext = 256;
  ModelPrograms programs = programsOf(*file, kContext);
  ASSERT_FALSE(programs.prefill.steps.empty());
  ASSERT_FALSE(programs.decode.steps.empty());
  const hetc::target::spirv::SpirvExecutable &library =
      hetc::test::kernelLibrary();
  std::vector<hetrt::hal::KernelSignature> signatures;
  for (const hetc::target::spirv::SpirvKernel &kernel : library.kernels)
    signatures.push_back({kernel.entryPoint, kernel.bindings, 0});

  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    hetrt::hal::Error halError;
    std::unique_ptr<hetrt::core::ProgramRunner> runner =
        hetrt::core::ProgramRunner::create(
            device, hetrt::hal::ExecutableFormat::SpirV, library.binary,
            signatures, {{programs.prefill, kContext}, {programs.decode, 1}},
            *file, halError);
    ASSERT_TRUE(runner) << halError.message;
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
                              logits.data(), halError))
          << halError.message;
      std::vector<int32_t> generated = {greedy()};
      int64_t position = static_cast<int64_t>(tokens.size());
      while (generated.size() < expected.size()) {
        ASSERT_TRUE(runner->run(1, &generated.back(), 1, position++,
                                logits.data(), halError))
            << halError.message;
        generated.push_back(greedy());
      }
      EXPECT_EQ(generated, expected);
    }
  });
}

TEST(SpirvModels, Stories260KGivesTheReferenceTokens) {
  expectReferenceTokens("stories260K");
}

TEST(SpirvModels, BabyLlama105GivesTheReferenceTokens) {
  expectReferenceTokens("babyllama105");
}

} // namespace
