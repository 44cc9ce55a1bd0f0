// `hetc compile`: a GGUF model to a .hetpack, or to the IR of any phase.
#include "Commands.h"
#include "Flags.h"

#include "hetc/InitAll.h"
#include "hetc/Pipeline/Compile.h"
#include "hetc/Target/X86.h"
#include "runtime/format/OutputFile.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

namespace hetc::cli {

namespace {
struct CompileFlags {
  std::string model;
  std::string output;
  std::string compileTo = "pack";
  int64_t contextLength = 0;
  std::string kvType;
  int64_t kvPoolBlocks = 0;
  std::vector<std::string> cpuVariants = {"all"};
  bool spirv = false;
  std::string system;
  PlanShapeFlags plan;
  bool printPipeline = false;
  bool quiet = false;
};
} // namespace

namespace {
/// What --cpu-variants takes, checked before the model is read.
std::vector<std::string> cpuVariantChoices() {
  std::vector<std::string> choices = {"all", "host"};
  for (const target::x86::CpuVariant &variant : target::x86::allVariants())
    choices.push_back(variant.name);
  return choices;
}
} // namespace

Action registerCompileCommand(CLI::App &app) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App *command = app.add_subcommand(
      "compile", "Compile a GGUF model into a deployable .hetpack");
  command->add_option("model", flags->model, "The GGUF model file")
      ->check(hetc::cli::inputFile("a GGUF model"));
  command->add_option("-o,--output", flags->output,
                      "Output file (the pack, or the IR with --compile-to; "
                      "'-' for standard output)");
  command->add_option("--compile-to", flags->compileTo,
                      "Stop after this phase and write its IR for hetc-opt: " +
                          pipeline::phaseNames().str())
      ->check(CLI::IsMember({"import", "linalg", "loops", "llvm", "pack"}));
  command->add_option("--context", flags->contextLength,
                      "KV-cache capacity in tokens (default: the model's "
                      "context length)")
      ->check(wholeRange(0, INT32_MAX));
  command->add_option("--kv-pool-blocks", flags->kvPoolBlocks,
                      "Blocks of 64 positions in the CPU code's KV pool, "
                      "which a session's sequences share (default: one "
                      "sequence of the whole context)")
      ->check(wholeRange(1, INT32_MAX / 64));
  command->add_option("--kv-type", flags->kvType,
                      "KV-cache element type: f16 (default, as llama.cpp; "
                      "half the bytes each decode step reads), bf16 (the "
                      "same bytes with f32's range) or f32")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  command->add_flag("--spirv", flags->spirv,
                    "Also pack the model as SPIR-V programs, for Vulkan "
                    "devices (hetc run --device vulkan0)");
  command->add_option("--system", flags->system,
                      "Also plan the model on a system (a system JSON, as "
                      "`hetc calibrate` writes for this machine, or a catalog "
                      "name) and pack the plan's program over its devices "
                      "(hetc run --system)");
  addPlanShapeOptions(*command, flags->plan);
  command->add_option("--cpu-variants", flags->cpuVariants,
                      "CPU code variants to build: all (default), host (the "
                      "best this machine runs), or names among avx512-vnni, "
                      "x86-64-v4, x86-64-v3, x86-64-v2")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember(cpuVariantChoices()));
  command->add_flag("--print-pipeline", flags->printPipeline,
                    "Print the textual pass pipeline (for hetc-opt "
                    "--pass-pipeline) and exit");
  command->add_flag("-q,--quiet", flags->quiet, "Do not show progress");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    if (flags->printPipeline) {
      std::string error;
      std::optional<std::string> text = pipeline::printPipeline(error);
      if (!text) {
        std::cerr << "hetc compile: " << error << "\n";
        return 1;
      }
      std::cout << *text << "\n";
      return 0;
    }
    if (flags->model.empty()) {
      std::cerr << "hetc compile: a model file is required (hetc compile "
                   "MODEL.gguf -o OUT.hetpack)\n";
      return 2;
    }
    pipeline::CompileOptions options;
    options.modelPath = flags->model;
    options.stopAfter = *pipeline::parsePhase(flags->compileTo);
    options.contextLength = flags->contextLength;
    options.kvPoolBlocks = flags->kvPoolBlocks;
    options.cpuVariants = flags->cpuVariants;
    options.spirv = flags->spirv;
    options.system = flags->system;
    options.deviceMemory = flags->plan.deviceMemory;
    options.computeDevices = flags->plan.computeDevices;
    options.objective = flags->plan.objective;
    options.kvElementType = flags->kvType;
    if (std::optional<std::string> problem =
            pipeline::checkKvElementType(options)) {
      std::cerr << "hetc compile: " << *problem << "\n";
      return 2;
    }
    if (std::optional<std::string> problem =
            planShapeWithoutPlan(flags->plan, !options.system.empty())) {
      std::cerr << "hetc compile: " << *problem << "\n";
      return 2;
    }
    options.outputPath = flags->output;
    if (options.outputPath.empty()) {
      if (options.stopAfter != pipeline::Phase::Pack) {
        options.outputPath = "-";
      } else {
        std::cerr << "hetc compile: -o OUT.hetpack is required\n";
        return 2;
      }
    }
    if (options.stopAfter == pipeline::Phase::Pack && options.outputPath == "-") {
      std::cerr << "hetc compile: a pack is binary; give -o a file name\n";
      return 2;
    }
    std::string error;
    if (!hetrt::format::checkOutputPath(options.outputPath, {options.modelPath},
                                        "-o", error) ||
        (options.stopAfter == pipeline::Phase::Pack
             ? !hetrt::format::checkReplaceable(options.outputPath, "HETCPACK",
                                                "a .hetpack", "-o", error)
             : !hetrt::format::checkTextReplaceable(options.outputPath, "-o",
                                                    error))) {
      std::cerr << "hetc compile: " << error << "\n";
      return 1;
    }
    auto start = std::chrono::steady_clock::now();
    int step = 0;
    if (!flags->quiet)
      options.progress = [&](const std::string &line) {
        double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        hetc::cli::printMessage("hetc compile: [%d] %6.2fs %s\n", ++step, seconds,
                     line.c_str());
      };
    registerAllPasses();
    if (!pipeline::compileModel(options, error)) {
      std::cerr << "hetc compile: " << error << "\n";
      return 1;
    }
    return 0;
  };
}

} // namespace hetc::cli
