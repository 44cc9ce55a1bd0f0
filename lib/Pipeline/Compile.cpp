// The `hetc compile` driver: import, find the target of the device, let it
// lower and serialize the module, and pack its executables with the manifest.
#include "hetc/Pipeline/Compile.h"

#include "hetc/Import/GgufImporter.h"
#include "hetc/InitAll.h"
#include "hetc/Target/AMDGPU.h"
#include "hetc/Target/NVPTX.h"
#include "hetc/Target/SPIRV.h"
#include "hetc/Target/Target.h"
#include "hetc/Target/X86.h"
#include "dialects/llm/LLMOps.h"
#include "passes/het/Passes.h"
#include "passes/target/spirv/ProgramBuilder.h"
#include "abi/CodeRecord.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/Manifest.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/OutputFile.h"
#include "runtime/format/Pack.h"
#include "runtime/format/ProgramJson.h"
#include "runtime/format/ProgramMemory.h"
#include "runtime/tokenizer/Tokenizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <set>

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

/// The most tokens one prefill step of a SPIR-V program takes: its
/// activations are sized for it, and longer prompts run in chunks.
constexpr int64_t kSpirvPrefillChunk = 512;
/// The most sequences a batch's program (SPIR-V or a plan's) decodes in
/// one step: a server's running batch (llama-server's and vLLM's defaults
/// are of this order).
constexpr int64_t kMaxBatch = 64;

/// Slots of a block of the paged KV caches, in the CPU code and the
/// programs alike.
constexpr int64_t kKvBlockSize = hetrt::format::kDefaultKvBlockSize;

/// Pages the programs' KV caches: one pool of the whole context, which the
/// session's one sequence fills block by block.
void addProgramPaging(mlir::OpPassManager &pm) {
  het::HetPageKVCachePassOptions paging;
  paging.blockSize = kKvBlockSize;
  pm.addPass(het::createHetPageKVCachePass(paging));
}

/// The programs `build` makes of the module's prefill and decode, and of
/// its batch's decode step where it has one (@decode_batch). False with
/// `error` when a function is missing or cannot be built (the diagnostic
/// names the op).
bool buildPrograms(
    mlir::ModuleOp module, const std::string &kind,
    llvm::function_ref<mlir::FailureOr<abi::Program>(mlir::func::FuncOp)> build,
    std::vector<abi::Program> &programs, std::string &error) {
  for (const char *name : {"prefill", "decode"}) {
    auto function = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!function) {
      error = std::string("the module has no @") + name + " to build a " +
              kind + " program of";
      return false;
    }
    mlir::FailureOr<abi::Program> program = build(function);
    if (mlir::failed(program)) {
      error = "the " + kind + " program cannot be built (the diagnostic "
              "above names the op)";
      return false;
    }
    programs.push_back(std::move(*program));
  }
  if (auto batch = module.lookupSymbol<mlir::func::FuncOp>("decode_batch")) {
    mlir::FailureOr<abi::Program> program = build(batch);
    if (mlir::failed(program)) {
      error = "the " + kind + " program of a batch's decode step cannot be "
              "built (the diagnostic above names the op)";
      return false;
    }
    programs.push_back(std::move(*program));
  }
  return true;
}

/// Adds the programs buildPrograms made to `pack` as
/// program/KIND/{prefill,decode,decode_batch}.json, naming their sections
/// (the batch's empty, and `maxBatch` 0, without one).
void addPrograms(const std::vector<abi::Program> &programs,
                 const std::string &kind, hetrt::format::PackWriter &pack,
                 std::string &prefillSection, std::string &decodeSection,
                 std::string &batchSection, int64_t &maxBatch) {
  prefillSection = "program/" + kind + "/prefill.json";
  decodeSection = "program/" + kind + "/decode.json";
  batchSection = programs.size() > 2
                     ? "program/" + kind + "/decode_batch.json"
                     : std::string();
  if (batchSection.empty())
    maxBatch = 0;
  for (auto [program, section] :
       {std::pair{&programs[0], &prefillSection},
        std::pair{&programs[1], &decodeSection},
        std::pair{programs.size() > 2 ? &programs[2] : nullptr,
                  &batchSection}}) {
    if (!program)
      continue;
    std::string json = hetrt::format::programToJson(*program);
    pack.addSection(*section, std::vector<char>(json.begin(), json.end()));
  }
}

/// A device whose memory the plan's programs overflow.
struct MemoryOverflow {
  std::string device;
  /// What the programs hold there, what they compute with (one token's
  /// worth), and what the plan gives the memory.
  uint64_t heldBytes = 0, workBytes = 0, capacityBytes = 0;
};

/// Fits the plan's programs into the memory the plan gave each device:
/// the weights, caches and stream buffers the plan placed, and beside them
/// what the programs compute with, which grows with the prefill's chunk of
/// tokens and the sequences of a batch's step. Halves the larger of the two
/// until every device's bytes fit its home memory (as llama.cpp sizes its
/// compute buffers by the micro-batch) and records those bytes; the first
/// device that one token's worth still overflows otherwise.
std::optional<MemoryOverflow>
fitPlanMemory(const std::vector<abi::Program> &programs,
              hetrt::format::PlannedCode &code) {
  for (;;) {
    std::vector<std::pair<const abi::Program *, int64_t>> runs = {
        {&programs[0], code.maxPrefillTokens}, {&programs[1], 1}};
    if (programs.size() > 2)
      runs.push_back({&programs[2], code.maxBatch});
    std::vector<hetrt::format::DeviceHeldBytes> held =
        hetrt::format::programHeldBytes(runs);
    std::optional<MemoryOverflow> over;
    for (hetrt::format::PlannedCode::PlannedMemory &use : code.memory)
      for (const hetrt::format::DeviceHeldBytes &device : held)
        if (device.device == use.device) {
          use.workBytes = device.workBytes;
          if (use.capacityBytes > 0 && device.total() > use.capacityBytes &&
              !over)
            over = MemoryOverflow{device.device, device.total(),
                                  device.workBytes, use.capacityBytes};
        }
    if (!over || (code.maxPrefillTokens == 1 && code.maxBatch <= 1))
      return over;
    // The larger of the prefill's chunk and the batch gives way first.
    int64_t &tokens = code.maxPrefillTokens >= code.maxBatch
                          ? code.maxPrefillTokens
                          : code.maxBatch;
    tokens = std::max<int64_t>(1, tokens / 2);
  }
}

/// Adds the model as SPIR-V programs to `pack` and `manifest`: the kernel
/// library's module and the programs of the imported module's prefill and
/// decode (built before the CPU lowering changes the module).
bool packSpirv(mlir::ModuleOp module, int64_t contextLength,
               hetrt::format::PackWriter &pack,
               hetrt::format::Manifest &manifest, std::string &error) {
  mlir::PassManager paging(module.getContext());
  addProgramPaging(paging);
  if (mlir::failed(paging.run(module))) {
    error = "paging the SPIR-V programs' KV caches failed (see the "
            "diagnostics above)";
    return false;
  }
  hetrt::format::SpirvCode code;
  code.maxPrefillTokens = std::min(contextLength, kSpirvPrefillChunk);
  std::vector<abi::Program> programs;
  if (!buildPrograms(
          module, "spirv",
          [](mlir::func::FuncOp function) {
            return spirv::buildProgram(function);
          },
          programs, error))
    return false;
  code.maxBatch = kMaxBatch;
  addPrograms(programs, "spirv", pack, code.prefillSection, code.decodeSection,
              code.decodeBatchSection, code.maxBatch);
  // Every variant of the library, best first: the runtime runs the first one
  // the device's SPIR-V capabilities allow.
  for (llvm::StringRef variant : target::spirv::kernelLibraryVariants()) {
    target::spirv::SpirvExecutable executable;
    if (!target::spirv::compileKernelLibrary(module.getContext(), variant,
                                             executable, error))
      return false;
    std::vector<std::pair<std::string, int>> kernels;
    for (const target::spirv::SpirvKernel &kernel : executable.kernels)
      kernels.emplace_back(kernel.entryPoint, kernel.bindings);
    if (code.libraries.empty()) {
      code.kernels = std::move(kernels);
    } else if (kernels != code.kernels) {
      error = "the SPIR-V kernel library's " + variant.str() +
              " variant has other kernels or bindings than its " +
              code.libraries.front().variant + " variant";
      return false;
    }
    hetrt::format::SpirvLibrary library;
    library.variant = variant.str();
    library.section = "code/spirv/kernels-" + variant.str() + ".spv";
    library.version = executable.requirements.version;
    library.capabilities = executable.requirements.capabilities;
    library.extensions = executable.requirements.extensions;
    pack.addSection(library.section,
                    std::vector<char>(executable.binary.begin(),
                                      executable.binary.end()));
    code.libraries.push_back(std::move(library));
  }
  manifest.spirv = std::move(code);
  return true;
}

/// Adds the plan of `imported` on `options.system` to `pack` and `manifest`:
/// het-partition and het-outline place and outline a copy of the module;
/// het ops are lowered to the programs of the prefill and the decode step;
/// the CPU segments they call are compiled by the x86 target. GPU segments
/// dispatch the kernel library, which `packSpirv` and `packGpuLibrary` add
/// for the targets named in `gpuTargets`.
bool packPlan(mlir::ModuleOp imported, const CompileOptions &options,
              int64_t contextLength, hetrt::format::PackWriter &pack,
              hetrt::format::Manifest &manifest,
              std::set<std::string> &gpuTargets, std::string &error) {
  mlir::MLIRContext *context = imported.getContext();
  // What the programs compute with is known once they are built: a plan
  // that leaves a device too little room for one token's worth is made
  // again with that much reserved, a few times at most (the reserve moves
  // little as the placement moves).
  std::map<std::string, uint64_t> reserved;
  mlir::OwningOpRef<mlir::ModuleOp> module, segments;
  hetrt::format::PlannedCode code;
  std::vector<abi::Program> programs;
  mlir::DictionaryAttr plan;
  for (int attempt = 0;; ++attempt) {
    module = imported.clone();
    mlir::PassManager pm(context);
    het::HetPartitionPassOptions partition;
    partition.system = options.system;
    partition.deviceMemory.assign(options.deviceMemory.begin(),
                                  options.deviceMemory.end());
    partition.computeDevices.assign(options.computeDevices.begin(),
                                    options.computeDevices.end());
    for (const auto &[device, bytes] : reserved)
      partition.reserveMemory.push_back(device + "=" + std::to_string(bytes) +
                                        "B");
    partition.objective = options.objective;
    pm.addPass(het::createHetPartitionPass(partition));
    pm.addPass(het::createHetOutlinePass());
    addProgramPaging(pm);
    pm.addPass(het::createHetVerifyPartitionedPass());
    if (mlir::failed(pm.run(*module))) {
      error = "planning on " + options.system +
              " failed (see the diagnostics above)";
      return false;
    }
    // The CPU segments go into a module of their own, with the model's
    // weights and facts, for the x86 target.
    segments = mlir::ModuleOp::create(imported.getLoc());
    for (mlir::NamedAttribute attribute : imported->getAttrs())
      (*segments)->setAttr(attribute.getName(), attribute.getValue());
    mlir::OpBuilder builder(context);
    builder.setInsertionPointToEnd(segments->getBody());
    for (auto weight : imported.getOps<llm::WeightOp>())
      builder.clone(*weight);
    code = {};
    code.maxPrefillTokens = std::min(contextLength, kSpirvPrefillChunk);
    auto build = [&](mlir::func::FuncOp function) {
      mlir::FailureOr<abi::Program> program =
          spirv::buildPlannedProgram(function, *segments);
      if (mlir::failed(program))
        return program;
      for (const abi::ProgramDevice &device : program->devices)
        if (device.target != "x86")
          gpuTargets.insert(device.target);
      for (const abi::ProgramStep &step : program->steps)
        if (step.kind == abi::StepKind::Dispatch &&
            program->devices[step.device].target == "x86")
          code.cpuKernels.emplace_back(step.kernel,
                                       static_cast<int>(step.buffers.size()));
      return program;
    };
    programs.clear();
    // A batch's decode step too: the same plan, a row of the block table
    // and of the logits per sequence.
    if (!buildPrograms(*module, "plan", build, programs, error))
      return false;
    code.maxBatch = programs.size() > 2 ? kMaxBatch : 0;
    plan = (*module)->getAttrOfType<mlir::DictionaryAttr>("het.plan");
    if (auto memory =
            plan ? plan.getAs<mlir::DictionaryAttr>("memory") : nullptr)
      for (mlir::NamedAttribute entry : memory) {
        auto fields = llvm::dyn_cast<mlir::DictionaryAttr>(entry.getValue());
        if (!fields)
          continue;
        hetrt::format::PlannedCode::PlannedMemory use;
        use.device = entry.getName().str();
        auto bytes = [&](llvm::StringRef name) -> uint64_t {
          auto value = fields.getAs<mlir::IntegerAttr>(name);
          return value ? static_cast<uint64_t>(value.getInt()) : 0;
        };
        use.weightBytes = bytes("weight_bytes");
        use.kvCacheBytes = bytes("kv_cache_bytes");
        use.streamBufferBytes = bytes("stream_buffer_bytes");
        use.capacityBytes = bytes("capacity_bytes");
        code.memory.push_back(std::move(use));
      }
    std::optional<MemoryOverflow> over = fitPlanMemory(programs, code);
    if (!over)
      break;
    if (attempt == 3 || over->workBytes >= over->capacityBytes) {
      error = "the plan's programs need " + std::to_string(over->heldBytes) +
              " bytes on " + over->device + " (" +
              std::to_string(over->workBytes) +
              " of them to compute one token with), past the " +
              std::to_string(over->capacityBytes) +
              " bytes of its memory; give it more (--device-memory " +
              over->device + "=SIZE)";
      return false;
    }
    reserved[over->device] = std::max(
        reserved[over->device] + (over->heldBytes - over->capacityBytes),
        over->workBytes);
  }
  addPrograms(programs, "plan", pack, code.prefillSection, code.decodeSection,
              code.decodeBatchSection, code.maxBatch);
  if (auto system = plan ? plan.getAs<mlir::StringAttr>("system") : nullptr)
    code.system = system.str();
  if (auto host = plan ? plan.getAs<mlir::IntegerAttr>("kv_host_blocks")
                       : nullptr)
    code.kvHostBlocks = host.getInt();
  if (auto format = plan ? plan.getAs<mlir::StringAttr>("kv_tier_format")
                         : nullptr)
    code.kvTierInt8 = format.getValue() == "int8";
  if (auto units = plan ? plan.getAs<mlir::DictionaryAttr>("units") : nullptr)
    for (mlir::NamedAttribute entry : units)
      if (auto count = llvm::dyn_cast<mlir::IntegerAttr>(entry.getValue()))
        code.units.emplace_back(entry.getName().str(), count.getInt());
  auto seconds = [&](llvm::StringRef name) {
    auto value = plan ? plan.getAs<mlir::FloatAttr>(name) : nullptr;
    return value ? value.getValueAsDouble() : 0.0;
  };
  code.decodeSecondsPerStep = seconds("decode_seconds_per_step");
  code.emptyCacheDecodeSecondsPerStep =
      seconds("decode_seconds_per_step_empty_cache");
  if (auto context = plan ? plan.getAs<mlir::IntegerAttr>("context") : nullptr)
    code.plannedContext = context.getInt();

  if (!code.cpuKernels.empty()) {
    if (options.progress)
      options.progress("compiling the plan's CPU segments");
    het::DeviceAttr cpu = target::x86::hostDevice(context);
    target::CompileRequest request;
    request.cpuVariants = options.cpuVariants;
    request.progress = options.progress;
    std::vector<target::Executable> executables;
    if (!target::x86::x86Target().compile(*segments, cpu, request,
                                          executables, error))
      return false;
    for (target::Executable &executable : executables) {
      std::string section = "code/plan/" + executable.variant + ".so";
      code.cpuVariants.push_back(
          {executable.variant, section, executable.requiredFeatures});
      pack.addSection(section, std::move(executable.code));
    }
  }
  manifest.plan = std::move(code);
  return true;
}

/// Adds the kernel library compiled for `target` (nvptx or amdgpu), whose
/// devices the plan runs segments on, to `pack` and `manifest`.
bool packGpuLibrary(mlir::MLIRContext *context, const std::string &target,
                    hetrt::format::PackWriter &pack,
                    hetrt::format::Manifest &manifest, std::string &error) {
  std::vector<target::Executable> executables;
  bool built =
      target == "nvptx"
          ? target::nvptx::compileKernelLibrary(
                context, target::nvptx::cudaToolkitPath(), executables, error)
          : target::amdgpu::compileKernelLibrary(context, /*codeObject=*/4,
                                                 executables, error);
  if (!built)
    return false;
  hetrt::format::GpuCode code;
  for (const target::KernelInfo &kernel : executables.front().kernels)
    code.kernels.push_back({kernel.entryPoint,
                            kernel.bindings,
                            {static_cast<int>(kernel.workgroupSize[0]),
                             static_cast<int>(kernel.workgroupSize[1]),
                             static_cast<int>(kernel.workgroupSize[2])}});
  for (target::Executable &executable : executables) {
    hetrt::format::GpuLibrary library;
    library.variant = executable.variant;
    library.format = executable.format;
    library.section = "code/" + target + "/" + executable.variant + "." +
                      executable.format;
    pack.addSection(library.section, std::move(executable.code));
    code.libraries.push_back(std::move(library));
  }
  (target == "nvptx" ? manifest.nvptx : manifest.amdgpu) = std::move(code);
  return true;
}

/// The system a model is planned on when no other is given: the catalog's
/// CPU-only host, on which the plan is one CPU segment per step.
constexpr const char *kSingleCpuSystem = "cpu-only-host";


/// The one-device case of the plan: the model planned on a CPU-only system
/// and outlined, its one segment per step inlined again for the CPU
/// target's whole-model entry points.
void addSingleCpuPlan(mlir::OpPassManager &pm, int64_t kvPoolBlocks = 0) {
  het::HetPartitionPassOptions partition;
  partition.system = kSingleCpuSystem;
  pm.addPass(het::createHetPartitionPass(partition));
  pm.addPass(het::createHetOutlinePass());
  pm.addPass(het::createHetInlineSegmentsPass());
  // The runtime decides where each block of a sequence's cache lives.
  het::HetPageKVCachePassOptions paging;
  paging.blockSize = kKvBlockSize;
  paging.poolBlocks = kvPoolBlocks;
  pm.addPass(het::createHetPageKVCachePass(paging));
}

} // namespace

std::optional<std::string> printPipeline(std::string &error) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  het::DeviceAttr device = target::x86::hostDevice(&context);
  const target::Target *target = target::findTarget(device, error);
  mlir::OpPassManager pm(mlir::ModuleOp::getOperationName());
  addSingleCpuPlan(pm);
  if (!target || !target->buildPipeline(pm, device, Phase::LLVM, error))
    return std::nullopt;
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

std::string defaultKvElementType(const CompileOptions &) { return "f16"; }

int64_t defaultCpuKvElementBytes() {
  return hetrt::format::kvElementBytesOf(defaultKvElementType(CompileOptions()));
}

std::optional<std::string>
checkKvElementType(const CompileOptions &options) {
  const std::string &type = options.kvElementType;
  if (type.empty())
    return std::nullopt;
  if (hetrt::format::kvElementBytesOf(type) == 0)
    return "--kv-type " + type + " is not one of f32, f16, bf16";
  return std::nullopt;
}

bool compileModel(const CompileOptions &options, std::string &error) {
  if (std::optional<std::string> problem = checkKvElementType(options)) {
    error = *problem;
    return false;
  }
  std::string kvElementType = options.kvElementType.empty()
                                  ? defaultKvElementType(options)
                                  : options.kvElementType;
  auto progress = [&](const std::string &line) {
    if (options.progress)
      options.progress(line);
  };
  progress("reading " + options.modelPath);
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(options.modelPath, error);
  if (!file)
    return false;
  // A model whose tokenizer cannot run is refused before any work, so no
  // pack is made that every runner would then refuse.
  std::optional<hetrt::format::ModelConfig> config =
      hetrt::format::ModelConfig::fromGguf(*file, error);
  if (!config ||
      !hetrt::tokenizer::Tokenizer::forModel(*file, config->vocabSize, error))
    return false;

  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.disableMultithreading();
  progress("importing the model into the llm dialect");
  import::ImportOptions importOptions;
  importOptions.contextLength = options.contextLength;
  importOptions.kvElementType = kvElementType;
  importOptions.batchedDecode = true;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      import::importGguf(context, *file, importOptions, error);
  if (!module)
    return false;
  auto printModule = [&](llvm::raw_ostream &os) { module->print(os); };
  if (options.stopAfter == Phase::Import)
    return writeText(options.outputPath, printModule, error);

  // The pack's main code runs on this host's CPU: the one-device case of
  // the plan (another system's plan is packed beside it).
  het::DeviceAttr device = target::x86::hostDevice(&context);
  const target::Target *target = target::findTarget(device, error);
  if (!target)
    return false;
  if (options.stopAfter != Phase::Pack) {
    progress("lowering llm → linalg → loops → LLVM");
    mlir::PassManager pm(&context);
    addSingleCpuPlan(pm, options.kvPoolBlocks);
    if (!target->buildPipeline(pm, device, options.stopAfter, error))
      return false;
    if (mlir::failed(pm.run(*module))) {
      error = options.modelPath + ": the " + target->name().str() +
              " lowering pipeline failed (see the diagnostics above)";
      return false;
    }
    return writeText(options.outputPath, printModule, error);
  }

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
  // The code records the model it reads (abi/CodeRecord.h).
  (*module)->setAttr(hetrt::format::kModelHashAttrName,
                     mlir::StringAttr::get(&context, *hash));
  manifest.architecture = config->architecture;
  manifest.vocabSize = config->vocabSize;
  manifest.numLayers = config->numLayers;
  manifest.numKvHeads = config->numKvHeads;
  manifest.headDim = config->headDim;
  manifest.contextLength = options.contextLength > 0 ? options.contextLength
                                                     : config->contextLength;
  manifest.kvElementType = kvElementType;
  // The pool het-page-kv-cache makes: as asked, or one sequence of the
  // whole context.
  manifest.kvBlockSize = kKvBlockSize;
  manifest.kvPoolBlocks =
      options.kvPoolBlocks > 0
          ? options.kvPoolBlocks
          : (manifest.contextLength + kKvBlockSize - 1) / kKvBlockSize;

  hetrt::format::PackWriter pack;
  std::set<std::string> gpuTargets;
  // The programs decode batches too (the SPIR-V programs and a plan's).
  mlir::OwningOpRef<mlir::ModuleOp> programModule(module->clone());
  if (options.spirv)
    gpuTargets.insert("spirv");
  if (!options.system.empty()) {
    progress("planning the model on " + options.system);
    if (!packPlan(*programModule, options, manifest.contextLength, pack,
                  manifest, gpuTargets, error)) {
      error = options.modelPath + ": " + error;
      return false;
    }
  }
  for (const std::string &gpu : gpuTargets) {
    if (gpu == "spirv")
      continue;
    progress("compiling the kernel library for " + gpu);
    if (!packGpuLibrary(&context, gpu, pack, manifest, error)) {
      error = options.modelPath + ": " + error;
      return false;
    }
  }
  bool spirvNeeded = gpuTargets.count("spirv") > 0;
  if (spirvNeeded) {
    progress("building the SPIR-V programs");
    if (!packSpirv(*programModule, manifest.contextLength, pack, manifest,
                   error)) {
      error = options.modelPath + ": " + error;
      return false;
    }
  }

  progress("planning the model on one CPU");
  mlir::PassManager plan(&context);
  addSingleCpuPlan(plan, options.kvPoolBlocks);
  if (mlir::failed(plan.run(*module))) {
    error = options.modelPath + ": planning on " + kSingleCpuSystem +
            " failed (see the diagnostics above)";
    return false;
  }
  target::CompileRequest request;
  request.cpuVariants = options.cpuVariants;
  request.progress = progress;
  std::vector<target::Executable> executables;
  if (!target->compile(*module, device, request, executables, error)) {
    error = options.modelPath + ": " + error;
    return false;
  }
  for (target::Executable &executable : executables) {
    std::string section = "code/" + executable.variant + ".so";
    manifest.variants.push_back(
        {executable.variant, section, executable.requiredFeatures});
    pack.addSection(section, std::move(executable.code));
  }
  std::string json = manifest.toJson();
  pack.addSection("manifest.json", std::vector<char>(json.begin(), json.end()));
  progress("writing " + options.outputPath);
  return pack.write(options.outputPath, error);
}

} // namespace hetc::pipeline
