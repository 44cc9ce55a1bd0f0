// The NVPTX back end (see include/hetc/Target/NVPTX.h).
#include "hetc/Target/NVPTX.h"

#include "hetc/Target/ExternalTool.h"
#include "hetc/Target/GpuKernels.h"
#include "passes/target/gpu/Passes.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
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

/// Lanes of an NVIDIA warp.
constexpr unsigned kWarpLanes = 32;

hetc::gpu::HetcGpuPrepareKernelsPassOptions warpOptions() {
  hetc::gpu::HetcGpuPrepareKernelsPassOptions prepare;
  prepare.subgroupSize = kWarpLanes;
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
  // Tensor-core products (nvgpu.mma.sync) first: their fragments become
  // the LLVM structs the NVVM intrinsics take.
  kernels.addPass(createConvertNVGPUToNVVMPass());
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
  std::string log;
  auto arguments = [&](llvm::StringRef input, llvm::StringRef output) {
    return std::vector<std::string>{ptxas.str().str(), "-arch=" + chip.str(),
                                    "-O3", "-v", input.str(), "-o",
                                    output.str()};
  };
  if (!runFileTool(ptxas, llvm::ArrayRef<char>(ptx.data(), ptx.size()), "ptx",
                   "cubin", arguments, cubin, log, error)) {
    error = "assembling for " + chip.str() + ": " + error;
    return false;
  }
  resources = parsePtxasReport(log);
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
  if (!prepareGpuKernels(module, kWarpLanes, error))
    return false;
  std::vector<KernelInfo> kernels = describeGpuKernels(module);
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
    if (!serializeToAssembly(*copy, toolkit, ptx, error)) {
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
  OwningOpRef<ModuleOp> library = subgroupKernelLibrary(context, "nvptx", error);
  if (!library)
    return false;
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
