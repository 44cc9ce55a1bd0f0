// `hetc import`: GGUF → llm IR, printed for reading or for hetc-opt.
#include "Commands.h"
#include "Flags.h"

#include "hetc/Import/GgufImporter.h"
#include "hetc/InitAll.h"
#include "hetc/Pipeline/Compile.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/format/OutputFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <string>

namespace hetc::cli {

namespace {
struct ImportFlags {
  std::string model;
  std::string output = "-";
  int64_t contextLength = 0;
  std::string kvType = pipeline::defaultKvElementType(pipeline::CompileOptions());
  bool debugInfo = false;
  bool batchedDecode = false;
};
} // namespace

Action registerImportCommand(CLI::App &app) {
  auto flags = std::make_shared<ImportFlags>();
  CLI::App *command = app.add_subcommand(
      "import", "Import a GGUF model into the llm dialect and print the module");
  command->add_option("model", flags->model, "The GGUF model file")
      ->required()
      ->check(hetc::cli::inputFile("a GGUF model"));
  command->add_option("-o,--output", flags->output,
                      "Where to write the IR ('-' for standard output)");
  command->add_option("--context", flags->contextLength,
                      "KV-cache capacity in tokens (default: the model's "
                      "context length)")
      ->check(wholeRange(0, INT32_MAX));
  command->add_option("--kv-type", flags->kvType,
                      "KV-cache element type: f16 (default, as hetc compile "
                      "packs it), bf16 or f32")
      ->check(CLI::IsMember({"f32", "f16", "bf16"}));
  command->add_flag("--debug-info", flags->debugInfo,
                    "Print locations (the model's tensor names)");
  command->add_flag("--batched-decode", flags->batchedDecode,
                    "Also import @decode_batch: a decode step of a batch, "
                    "one sequence per token (as hetc compile packs it)");
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::string error;
    if (!hetrt::format::checkOutputPath(flags->output, {flags->model}, "-o",
                                        error) ||
        !hetrt::format::checkTextReplaceable(flags->output, "-o", error)) {
      std::cerr << "hetc import: " << error << "\n";
      return 1;
    }
    std::unique_ptr<hetrt::format::GgufFile> file =
        hetrt::format::GgufFile::open(flags->model, error);
    std::optional<hetrt::format::ModelConfig> config;
    if (file)
      config = hetrt::format::ModelConfig::fromGguf(*file, error);
    // The tokenizer as every runner will check it: an import of a model
    // that cannot run says so.
    if (!config ||
        !hetrt::tokenizer::Tokenizer::forModel(*file, config->vocabSize,
                                               error)) {
      std::cerr << "hetc import: " << error << "\n";
      return 1;
    }
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    import::ImportOptions options;
    options.contextLength = flags->contextLength;
    options.kvElementType = flags->kvType;
    options.batchedDecode = flags->batchedDecode;
    mlir::OwningOpRef<mlir::ModuleOp> module =
        import::importGguf(context, *file, options, error);
    if (!module) {
      std::cerr << "hetc import: " << error << "\n";
      return 1;
    }
    mlir::OpPrintingFlags printing;
    if (flags->debugInfo)
      printing.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    if (flags->output == "-") {
      module->print(llvm::outs(), printing);
      return 0;
    }
    std::string text;
    llvm::raw_string_ostream out(text);
    module->print(out, printing);
    if (!hetrt::format::writeFileAtomically(flags->output, text, error)) {
      std::cerr << "hetc import: " << error << "\n";
      return 1;
    }
    return 0;
  };
}

} // namespace hetc::cli
