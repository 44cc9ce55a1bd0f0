// The `hetc compile` driver: import, run the CPU pipeline, generate code for
// every CPU variant and pack it with the manifest.
#include "hetc/Pipeline/Compile.h"

#include "hetc/Import/GgufImporter.h"
#include "hetc/InitAll.h"
#include "hetc/Target/X86.h"
#include "runtime/core/CpuFeatures.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/OutputFile.h"
#include "runtime/format/Pack.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace hetc::pipeline {

namespace {

/// Prints to standard output for "-", else to a file written beside `path`
/// and renamed, so a failure never leaves half an IR file.
bool writeText(const std::string &path, llvm::function_ref<void(llvm::raw_ostream &)> print,
               std::string &error) {
  if (path == "-") {
    print(llvm::outs());
    llvm::outs().flush();
    return true;
  }
  std::string text;
  llvm::raw_string_ostream out(text);
  print(out);
  return hetrt::format::writeFileAtomically(path, text, error);
}

} // namespace

bool compileModel(const CompileOptions &options, std::string &error) {
  auto progress = [&](const std::string &line) {
    if (options.progress)
      options.progress(line);
  };
  progress("reading " + options.modelPath);
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(options.modelPath, error);
  if (!file)
    return false;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.disableMultithreading();
  progress("importing the model into the llm dialect");
  import::ImportOptions importOptions;
  importOptions.contextLength = options.contextLength;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      import::importGguf(context, *file, importOptions, error);
  if (!module)
    return false;
  auto printModule = [&](llvm::raw_ostream &os) { module->print(os); };
  if (options.stopAfter == Phase::Import)
    return writeText(options.outputPath, printModule, error);

  std::vector<target::x86::CpuVariant> variants;
  if (!target::x86::selectVariants(options.cpuVariants, variants, error))
    return false;
  // Lowers a copy of the imported module for vector registers of `bits`.
  auto lower = [&](mlir::ModuleOp lowered, Phase to, int64_t bits) {
    mlir::PassManager pm(&context);
    buildCpuPipeline(pm, Phase::Import, to, bits);
    if (mlir::succeeded(pm.run(lowered)))
      return true;
    error = options.modelPath + ": the CPU lowering pipeline failed (see the "
                                "diagnostics above)";
    return false;
  };
  if (options.stopAfter != Phase::Pack) {
    progress("lowering llm → linalg → loops → LLVM");
    if (!lower(*module, options.stopAfter, variants.front().vectorBits))
      return false;
    return writeText(options.outputPath, printModule, error);
  }

  std::optional<hetrt::format::ModelConfig> config =
      hetrt::format::ModelConfig::fromGguf(*file, error);
  if (!config)
    return false;
  hetrt::format::Manifest manifest;
  llvm::SmallString<256> absolute(options.modelPath);
  llvm::sys::fs::make_absolute(absolute);
  manifest.weightsPath = std::string(absolute);
  manifest.weightsSize = file->fileSize();
  std::optional<std::string> hash =
      hetrt::format::hashFile(options.modelPath, error);
  if (!hash)
    return false;
  manifest.weightsHash = *hash;
  manifest.architecture = config->architecture;
  manifest.vocabSize = config->vocabSize;
  manifest.numLayers = config->numLayers;
  manifest.numKvHeads = config->numKvHeads;
  manifest.headDim = config->headDim;
  manifest.contextLength = options.contextLength > 0 ? options.contextLength
                                                     : config->contextLength;

  hetrt::format::PackWriter pack;
  // Variants with vectors of the same width share one lowering.
  std::map<int64_t, mlir::OwningOpRef<mlir::ModuleOp>> lowered;
  for (const target::x86::CpuVariant &variant : variants) {
    mlir::OwningOpRef<mlir::ModuleOp> &forWidth = lowered[variant.vectorBits];
    if (!forWidth) {
      progress("lowering llm → linalg → loops → LLVM for " +
               std::to_string(variant.vectorBits) + "-bit vectors");
      forWidth = module->clone();
      if (!lower(*forWidth, Phase::LLVM, variant.vectorBits))
        return false;
    }
    progress("generating " + variant.name + " code (" + variant.cpu + ")");
    std::vector<char> code =
        target::x86::compileSharedObject(*forWidth, variant, error);
    if (code.empty())
      return false;
    std::string section = "code/" + variant.name + ".so";
    manifest.variants.push_back(
        {variant.name, section, variant.requiredFeatures});
    pack.addSection(section, std::move(code));
  }
  std::string json = manifest.toJson();
  pack.addSection("manifest.json", std::vector<char>(json.begin(), json.end()));
  progress("writing " + options.outputPath);
  return pack.write(options.outputPath, error);
}

} // namespace hetc::pipeline
