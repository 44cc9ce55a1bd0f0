// The NVPTX back end (see include/hetc/Target/NVPTX.h).
#include "hetc/Target/NVPTX.h"

#include "hetc/Target/SPIRV.h"
#include "passes/target/gpu/Passes.h"
#include "passes/target/spirv/Passes.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

namespace hetc::target::nvptx {

llvm::ArrayRef<llvm::StringRef> cubinChips() {
  static const llvm::StringRef kChips[] = {"sm_80", "sm_90"};
  return kChips;
}

std::string ptxFeaturesFor(llvm::StringRef chip) {
  unsigned version = 0;
  if (!chip.consume_front("sm_") || chip.consumeInteger(10, version))
    return "";
  // PTX 7.0 came with sm_80 (CUDA 11.0), PTX 8.0 with sm_90a's wgmma.
  return version >= 90 ? "+ptx80" : "+ptx70";
}

namespace {

hetc::gpu::HetcGpuPrepareKernelsPassOptions warpOptions() {
  hetc::gpu::HetcGpuPrepareKernelsPassOptions prepare;
  prepare.subgroupSize = 32;
  return prepare;
}

/// Prepared kernels → NVVM, for `chip`.
void addNvvmLowering(OpPassManager &pm, llvm::StringRef chip) {
  GpuNVVMAttachTargetOptions attach;
  attach.chip = chip.str();
  attach.features = ptxFeaturesFor(chip);
  attach.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(attach));
  OpPassManager &kernels = pm.nest<mlir::gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

} // namespace

void buildNvvmPipeline(OpPassManager &pm, llvm::StringRef chip) {
  pm.addPass(hetc::gpu::createHetcGpuPrepareKernelsPass(warpOptions()));
  addNvvmLowering(pm, chip);
}

std::vector<KernelInfo> describeKernels(ModuleOp module) {
  std::vector<KernelInfo> kernels;
  module.walk([&](mlir::gpu::GPUFuncOp function) {
    if (!function.isKernel())
      return;
    KernelInfo kernel;
    kernel.entryPoint = function.getName().str();
    for (Type argument : function.getArgumentTypes())
      if (isa<MemRefType>(argument))
        ++kernel.bindings;
    if (std::optional<llvm::ArrayRef<int32_t>> size =
            function.getKnownBlockSize())
      for (size_t d = 0; d < 3 && d < size->size(); ++d)
        kernel.workgroupSize[d] = (*size)[d];
    kernels.push_back(std::move(kernel));
  });
  return kernels;
}

bool serializeToPtx(ModuleOp module, llvm::StringRef toolkit, std::string &ptx,
                    std::string &error) {
  std::string diagnostics;
  ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &d) {
    llvm::raw_string_ostream(diagnostics) << d << "\n";
    return success();
  });
  mlir::gpu::TargetOptions options(toolkit, {}, {}, {},
                                   mlir::gpu::CompilationTarget::Assembly);
  if (failed(mlir::gpu::transformGpuModulesToBinaries(module, nullptr,
                                                      options))) {
    error = "the NVVM module does not translate to PTX: " + diagnostics;
    return false;
  }
  int binaries = 0;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    ++binaries;
    auto object = cast<mlir::gpu::ObjectAttr>(binary.getObjects()[0]);
    ptx = object.getObject().str();
  });
  if (binaries != 1) {
    error = "expected one gpu.module to serialize, found " +
            std::to_string(binaries);
    return false;
  }
  return true;
}

std::string cudaToolkitPath() {
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

namespace {

/// Reads ptxas's `-v` report: a "Compiling entry function" line opens each
/// kernel, then its spills and its registers and shared memory.
std::vector<KernelResources> parsePtxasReport(llvm::StringRef report) {
  std::vector<KernelResources> kernels;
  llvm::Regex entry("Compiling entry function '([A-Za-z0-9_$]+)'");
  llvm::Regex spills("([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads");
  llvm::Regex registers("Used ([0-9]+) registers");
  llvm::Regex shared("([0-9]+) bytes smem");
  llvm::SmallVector<llvm::StringRef> lines;
  report.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 3> match;
    if (entry.match(line, &match)) {
      kernels.push_back({});
      kernels.back().name = match[1].str();
      continue;
    }
    if (kernels.empty())
      continue;
    KernelResources &kernel = kernels.back();
    if (spills.match(line, &match)) {
      match[1].getAsInteger(10, kernel.spillStoreBytes);
      match[2].getAsInteger(10, kernel.spillLoadBytes);
    }
    if (registers.match(line, &match))
      match[1].getAsInteger(10, kernel.registers);
    if (shared.match(line, &match))
      match[1].getAsInteger(10, kernel.sharedBytes);
  }
  return kernels;
}

} // namespace

namespace {

/// The toolkit's ptxas and libdevice (the math kernels call), or an error
/// naming what is missing and how to point hetc at a toolkit.
bool checkToolkit(llvm::StringRef toolkit, std::string &error) {
  llvm::SmallString<256> ptxas(toolkit), libdevice(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::can_execute(ptxas)) {
    error = "no ptxas at " + ptxas.str().str() +
            "; install the CUDA toolkit or point CUDA_HOME at it";
    return false;
  }
  if (!llvm::sys::fs::exists(libdevice)) {
    error = "no libdevice at " + libdevice.str().str() +
            "; the CUDA toolkit at " + toolkit.str() +
            " is incomplete (point CUDA_HOME at a whole one)";
    return false;
  }
  return true;
}

} // namespace

bool assemblePtx(llvm::StringRef ptx, llvm::StringRef chip,
                 llvm::StringRef toolkit, std::vector<char> &cubin,
                 std::vector<KernelResources> &resources, std::string &error) {
  if (!checkToolkit(toolkit, error))
    return false;
  llvm::SmallString<256> ptxas(toolkit);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  llvm::SmallString<128> input, output, log;
  if (llvm::sys::fs::createTemporaryFile("hetc-kernels", "ptx", input) ||
      llvm::sys::fs::createTemporaryFile("hetc-kernels", "cubin", output) ||
      llvm::sys::fs::createTemporaryFile("hetc-ptxas", "log", log)) {
    error = "cannot create temporary files for ptxas";
    return false;
  }
  auto removeFiles = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(input);
    llvm::sys::fs::remove(output);
    llvm::sys::fs::remove(log);
  });
  {
    std::error_code failure;
    llvm::raw_fd_ostream stream(input, failure);
    if (failure) {
      error = "cannot write " + input.str().str() + ": " + failure.message();
      return false;
    }
    stream << ptx;
  }
  std::string arch = ("-arch=" + chip).str();
  llvm::StringRef arguments[] = {ptxas,  arch, "-O3",        "-v",
                                 input, "-o", output.str()};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.str(),
                                                log.str()};
  std::string launchError;
  int status = llvm::sys::ExecuteAndWait(ptxas, arguments, std::nullopt,
                                         redirects, 0, 0, &launchError);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> report =
      llvm::MemoryBuffer::getFile(log);
  std::string reportText = report ? (*report)->getBuffer().str() : "";
  if (status != 0) {
    error = "ptxas (" + ptxas.str().str() + ") failed for " + chip.str() +
            (launchError.empty() ? "" : ": " + launchError) + "\n" + reportText;
    return false;
  }
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> code =
      llvm::MemoryBuffer::getFile(output, /*IsText=*/false);
  if (!code) {
    error = "ptxas wrote no cubin for " + chip.str();
    return false;
  }
  llvm::StringRef bytes = (*code)->getBuffer();
  cubin.assign(bytes.begin(), bytes.end());
  resources = parsePtxasReport(reportText);
  return true;
}

bool compileGpuModule(ModuleOp module, llvm::StringRef toolkit,
                      std::vector<Executable> &executables, std::string &error,
                      const AssembledCallback &assembled) {
  if (!checkToolkit(toolkit, error))
    return false;
  MLIRContext *context = module.getContext();
  // The kernels' interface is read once they are prepared (which gives them
  // their block sizes) and before they become LLVM functions.
  PassManager prepare(context);
  prepare.addPass(hetc::gpu::createHetcGpuPrepareKernelsPass(warpOptions()));
  if (failed(prepare.run(module))) {
    error = "the kernels cannot be prepared for NVVM (see the diagnostics "
            "above)";
    return false;
  }
  std::vector<KernelInfo> kernels = describeKernels(module);
  llvm::ArrayRef<llvm::StringRef> chips = cubinChips();
  for (llvm::StringRef chip : chips) {
    OwningOpRef<ModuleOp> copy(module.clone());
    PassManager lower(context);
    addNvvmLowering(lower, chip);
    if (failed(lower.run(*copy))) {
      error = "the kernels do not lower to NVVM for " + chip.str();
      return false;
    }
    std::string ptx;
    if (!serializeToPtx(*copy, toolkit, ptx, error)) {
      error = chip.str() + ": " + error;
      return false;
    }
    Executable cubin;
    std::vector<KernelResources> resources;
    if (!assemblePtx(ptx, chip, toolkit, cubin.code, resources, error))
      return false;
    if (assembled)
      assembled(chip, ptx, resources);
    for (const KernelResources &kernel : resources)
      if (kernel.spillStoreBytes || kernel.spillLoadBytes) {
        error = "kernel " + kernel.name + " spills registers on " +
                chip.str() + " (" + std::to_string(kernel.spillStoreBytes) +
                " bytes stored, " + std::to_string(kernel.spillLoadBytes) +
                " loaded)";
        return false;
      }
    cubin.variant = chip.str();
    cubin.format = "cubin";
    cubin.requiredFeatures = {chip.str()};
    cubin.kernels = kernels;
    executables.push_back(std::move(cubin));
    // The oldest chip's PTX serves every later GPU through the driver's JIT.
    if (chip == chips.front()) {
      Executable portable;
      portable.variant = "compute_" + chip.drop_front(3).str();
      portable.format = "ptx";
      portable.code.assign(ptx.begin(), ptx.end());
      portable.kernels = kernels;
      executables.push_back(std::move(portable));
    }
  }
  return true;
}

bool compileKernelLibrary(MLIRContext *context, llvm::StringRef toolkit,
                          std::vector<Executable> &executables,
                          std::string &error,
                          const AssembledCallback &assembled) {
  OwningOpRef<ModuleOp> library = spirv::parseKernelLibrary(context);
  if (!library) {
    error = "the kernel library does not parse";
    return false;
  }
  // Warps reduce with shuffles: the library's subgroup variant.
  PassManager specialize(context);
  hetc::spirv::HetcSpirvSpecializeKernelsPassOptions variant;
  variant.variant = "subgroup";
  specialize.addPass(hetc::spirv::createHetcSpirvSpecializeKernelsPass(variant));
  if (failed(specialize.run(*library))) {
    error = "the kernel library's subgroup variant does not build";
    return false;
  }
  if (!compileGpuModule(*library, toolkit, executables, error, assembled)) {
    error = "the kernel library for NVIDIA GPUs: " + error;
    return false;
  }
  return true;
}

void registerNvvmPipeline() {
  struct Options : public PassPipelineOptions<Options> {
    Option<std::string> chip{*this, "chip",
                             llvm::cl::desc("NVIDIA GPU architecture (sm_80, "
                                            "sm_90, ...)"),
                             llvm::cl::init("sm_90")};
  };
  PassPipelineRegistration<Options>(
      "hetc-lower-gpu-to-nvvm",
      "Lower gpu.module kernels written in the kernel library's conventions "
      "to the NVVM dialect for an NVIDIA GPU (an #nvvm.target for the chip, "
      "with the PTX ISA version it needs)",
      [](OpPassManager &pm, const Options &options) {
        buildNvvmPipeline(pm, options.chip);
      });
}

} // namespace hetc::target::nvptx
