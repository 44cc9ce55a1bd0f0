// x86 code generation: MLIR's LLVM dialect → LLVM IR → O3 → object → shared
// object (ld.lld). Everything but the final link happens in process.
#include "hetc/Target/X86.h"

#include "abi/CodeRecord.h"
#include "runtime/core/CpuFeatures.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <memory>

namespace hetc::target::x86 {

std::vector<CpuVariant> allVariants() {
  const std::vector<std::string> avx512Vnni = {
      "avx512f",    "avx512bw", "avx512vl", "avx512dq", "avx512vnni",
      "avx512bf16", "avx2",     "fma",      "f16c"};
  std::vector<std::string> withAmx = avx512Vnni;
  withAmx.insert(withAmx.end(), {"amx-tile", "amx-int8", "amx-bf16"});
  const char *amxFeatures =
      "+avx512vnni,+avx512bf16,+amx-tile,+amx-int8,+amx-bf16";
  return {
      // Only the features the code is checked for: every CPU with AMX has
      // more (AVX512-FP16), which the code must not assume.
      {"avx512-amx", "x86-64-v4", amxFeatures, withAmx, 512,
       /*int8Dot=*/true, AmxTiles::Hardware},
      {"avx512-vnni", "x86-64-v4", "+avx512vnni,+avx512bf16", avx512Vnni, 512,
       /*int8Dot=*/true},
      {"x86-64-v4",
       "x86-64-v4",
       "",
       {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma", "f16c"},
       512},
      {"x86-64-v3", "x86-64-v3", "", {"avx2", "fma", "f16c"}, 256},
      {"x86-64-v2", "x86-64-v2", "", {"sse4.2", "popcnt"}, 128},
      // f32 and f16 weights rounded to bf16 change the logits: the user asks
      // for it by name.
      {"avx512-amx-bf16", "x86-64-v4", amxFeatures, withAmx, 512,
       /*int8Dot=*/true, AmxTiles::Hardware, /*floatWeightsBf16=*/true,
       /*onlyByName=*/true},
      {"avx512-amx-emulated", "x86-64-v4", "+avx512vnni,+avx512bf16",
       avx512Vnni, 512, /*int8Dot=*/true, AmxTiles::Emulated,
       /*floatWeightsBf16=*/true, /*onlyByName=*/true},
  };
}

bool selectVariants(const std::vector<std::string> &names,
                    std::vector<CpuVariant> &selected, std::string &error) {
  std::vector<CpuVariant> all = allVariants();
  for (const std::string &name : names) {
    if (name == "all") {
      selected.clear();
      for (const CpuVariant &variant : all)
        if (!variant.onlyByName)
          selected.push_back(variant);
      return true;
    }
    if (name == "host") {
      for (const CpuVariant &variant : all)
        if (!variant.onlyByName &&
            hetrt::core::hostSupports(variant.requiredFeatures)) {
          selected.push_back(variant);
          break;
        }
      continue;
    }
    auto found = llvm::find_if(
        all, [&](const CpuVariant &v) { return v.name == name; });
    if (found == all.end()) {
      error = "unknown CPU variant \"" + name + "\" (choose from all, host";
      for (const CpuVariant &variant : all)
        error += ", " + variant.name;
      error += ")";
      return false;
    }
    selected.push_back(*found);
  }
  if (selected.empty()) {
    error = "no CPU variant selected";
    return false;
  }
  return true;
}

std::optional<int64_t> vectorBitsOf(llvm::StringRef cpu) {
  if (llvm::X86::parseArchX86(cpu, /*Only64Bit=*/true) == llvm::X86::CK_None)
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::X86::getFeaturesForCPU(cpu, features);
  // Levels list only their top features (x86-64-v4 names avx512vl and
  // avx512bw, which imply avx512f).
  if (llvm::any_of(features, [](llvm::StringRef feature) {
        return feature.starts_with("avx512");
      }))
    return 512;
  if (llvm::is_contained(features, "avx2"))
    return 256;
  return 128;
}

bool hasInt8DotOf(llvm::StringRef cpu) {
  if (vectorBitsOf(cpu) != 512)
    return false;
  llvm::SmallVector<llvm::StringRef> features;
  llvm::X86::getFeaturesForCPU(cpu, features);
  return llvm::is_contained(features, "avx512vnni");
}

namespace {

/// Translates and optimizes `module` for `variant`; null with `error` set on
/// failure. `machine` receives the target machine used.
std::unique_ptr<llvm::Module>
buildOptimizedModule(mlir::ModuleOp module, const CpuVariant &variant,
                     llvm::LLVMContext &llvmContext,
                     std::unique_ptr<llvm::TargetMachine> &machine,
                     std::string &error) {
  static const bool initialized = [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    return true;
  }();
  (void)initialized;

  mlir::registerBuiltinDialectTranslation(*module->getContext());
  mlir::registerLLVMDialectTranslation(*module->getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, "hetc-model");
  if (!llvmModule) {
    error = "translation of the LLVM dialect module to LLVM IR failed (see "
            "the diagnostics above)";
    return nullptr;
  }
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  machine.reset(target->createTargetMachine(
      triple, variant.cpu, variant.features, options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine) {
    error = "cannot create an x86 target machine for cpu '" + variant.cpu + "'";
    return nullptr;
  }
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  // The features this code's instructions need, which the runtime checks
  // against the host itself rather than trusting the manifest (CodeRecord.h).
  llvm::Constant *requiredFeatures = llvm::ConstantDataArray::getString(
      llvmContext, llvm::join(variant.requiredFeatures, ","));
  new llvm::GlobalVariable(*llvmModule, requiredFeatures->getType(),
                           /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           requiredFeatures,
                           hetrt::format::kCodeRequiresSymbol);
  // Every function gets the variant's CPU, so inlining and vectorization use it.
  for (llvm::Function &function : *llvmModule) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", variant.cpu);
    if (!variant.features.empty())
      function.addFnAttr("target-features", variant.features);
  }

  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager cgsccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  // As clang -O3: loop and SLP vectorization both on. Short fixed-length
  // loops (a quantization block) are fully unrolled and only SLP can then
  // vectorize them.
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder passBuilder(machine.get(), tuning);
  passBuilder.registerModuleAnalyses(moduleAnalyses);
  passBuilder.registerCGSCCAnalyses(cgsccAnalyses);
  passBuilder.registerFunctionAnalyses(functionAnalyses);
  passBuilder.registerLoopAnalyses(loopAnalyses);
  passBuilder.crossRegisterProxies(loopAnalyses, functionAnalyses,
                                   cgsccAnalyses, moduleAnalyses);
  llvm::ModulePassManager passes =
      passBuilder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(*llvmModule, moduleAnalyses);
  return llvmModule;
}

/// A temporary file removed when this goes out of scope.
struct TemporaryFile {
  llvm::SmallString<128> path;
  ~TemporaryFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

} // namespace

std::string emitLLVMIR(mlir::ModuleOp module, const CpuVariant &variant,
                       std::string &error) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::Module> llvmModule =
      buildOptimizedModule(module, variant, llvmContext, machine, error);
  if (!llvmModule)
    return {};
  std::string text;
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, nullptr);
  return text;
}

std::vector<char> compileSharedObject(mlir::ModuleOp module,
                                      const CpuVariant &variant,
                                      std::string &error) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::unique_ptr<llvm::Module> llvmModule =
      buildOptimizedModule(module, variant, llvmContext, machine, error);
  if (!llvmModule)
    return {};

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile)) {
      error = "the x86 target cannot emit object files";
      return {};
    }
    codegen.run(*llvmModule);
  }

  TemporaryFile objectFile, sharedFile;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "hetc-model", "o", fd, objectFile.path)) {
    error = "cannot create a temporary object file: " + ec.message();
    return {};
  }
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out.write(object.data(), object.size());
  }
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "hetc-model", "so", sharedFile.path)) {
    error = "cannot create a temporary shared object: " + ec.message();
    return {};
  }
  std::string linker = HETC_LLD_PATH;
  if (!llvm::sys::fs::can_execute(linker)) {
    error = "the linker " + linker + " is missing; install lld-22";
    return {};
  }
  // Libc and libm symbols (malloc, expf, ...) resolve against the process that
  // loads the code, which always has them.
  llvm::SmallVector<llvm::StringRef> args = {
      linker, "-shared", "--as-needed", "-O2", "-o", sharedFile.path,
      objectFile.path};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(linker, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0) {
    error = "linking the model code with " + linker + " failed" +
            (message.empty() ? "" : ": " + message);
    return {};
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> shared =
      llvm::MemoryBuffer::getFile(sharedFile.path);
  if (!shared) {
    error = "cannot read the linked shared object: " +
            shared.getError().message();
    return {};
  }
  return std::vector<char>((*shared)->getBufferStart(),
                           (*shared)->getBufferEnd());
}

} // namespace hetc::target::x86
