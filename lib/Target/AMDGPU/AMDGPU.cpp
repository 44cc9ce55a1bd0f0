// The AMDGPU back end (see include/hetc/Target/AMDGPU.h).
#include "hetc/Target/AMDGPU.h"

#include "hetc/Target/ExternalTool.h"
#include "hetc/Target/GpuKernels.h"
#include "passes/target/gpu/Passes.h"

#include "mlir/Conversion/AMDGPUToROCDL/AMDGPUToROCDL.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/ROCDL/Utils.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Frontend/Offloading/Utility.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

namespace hetc::target::amdgpu {

namespace {

/// Lanes of a CDNA wavefront.
constexpr unsigned kWavefrontLanes = 64;
constexpr llvm::StringLiteral kTriple = "amdgcn-amd-amdhsa";

/// "400" for code object 4: the ROCDL target's ABI version spelling.
std::string abiVersion(int codeObject) {
  return std::to_string(codeObject * 100);
}

/// Prepared kernels → ROCDL, for `chip`.
void addRocdlLowering(OpPassManager &pm, llvm::StringRef chip,
                      int codeObject) {
  GpuROCDLAttachTargetOptions attach;
  attach.triple = kTriple.str();
  attach.chip = chip.str();
  attach.abiVersion = abiVersion(codeObject);
  attach.optLevel = 3;
  attach.wave64Flag = true;
  pm.addPass(createGpuROCDLAttachTarget(attach));
  OpPassManager &kernels = pm.nest<mlir::gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  // Matrix-core products (amdgpu.mfma) become ROCDL intrinsics for `chip`.
  ConvertAMDGPUToROCDLPassOptions matrixCores;
  matrixCores.chipset = chip.str();
  kernels.addPass(createConvertAMDGPUToROCDLPass(matrixCores));
  ConvertGpuOpsToROCDLOpsOptions convert;
  convert.chipset = chip.str();
  convert.runtime = mlir::gpu::amd::Runtime::HIP;
  kernels.addPass(createConvertGpuOpsToROCDLOps(convert));
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// Assembles `isa` for `chip` and links the code object.
bool linkCodeObject(MLIRContext *context, llvm::StringRef isa,
                    llvm::StringRef chip, std::vector<char> &hsaco,
                    std::string &error) {
  std::string diagnostics;
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &d) {
    llvm::raw_string_ostream(diagnostics) << d << "\n";
    return success();
  });
  FailureOr<SmallVector<char, 0>> object =
      ROCDL::assembleIsa(isa, kTriple, chip, "", [&] {
        return emitError(UnknownLoc::get(context));
      });
  if (failed(object)) {
    error = "the AMDGPU assembler failed for " + chip.str() + ": " +
            diagnostics;
    return false;
  }
  std::string lld = HETC_LLD_PATH;
  std::string log;
  // --no-undefined: a device-library function that did not resolve would
  // otherwise pass the link and fail only when the GPU loads the module.
  auto arguments = [&](llvm::StringRef input, llvm::StringRef output) {
    return std::vector<std::string>{lld, "-flavor", "gnu", "-shared",
                                    "--no-undefined", input.str(), "-o",
                                    output.str()};
  };
  if (!runFileTool(lld, *object, "o", "hsaco", arguments, hsaco, log,
                   error)) {
    error = "linking the code object for " + chip.str() + ": " + error;
    return false;
  }
  return true;
}

} // namespace

llvm::ArrayRef<llvm::StringRef> chips() {
  static const llvm::StringRef kChips[] = {"gfx90a", "gfx942"};
  return kChips;
}

bool isCodeObjectVersion(int version) { return version == 4 || version == 5; }

void buildRocdlPipeline(OpPassManager &pm, llvm::StringRef chip,
                        int codeObject) {
  hetc::gpu::HetcGpuPrepareKernelsPassOptions prepare;
  prepare.subgroupSize = kWavefrontLanes;
  pm.addPass(hetc::gpu::createHetcGpuPrepareKernelsPass(prepare));
  addRocdlLowering(pm, chip, codeObject);
}

std::string deviceLibraryRoot() {
  std::vector<std::string> candidates;
  if (const char *rocm = std::getenv("ROCM_PATH"); rocm && *rocm)
    candidates.push_back(rocm);
  candidates.push_back("/opt/rocm");
  candidates.push_back("/usr/lib/x86_64-linux-gnu");
  for (const std::string &root : candidates) {
    llvm::SmallString<256> ocml(root);
    llvm::sys::path::append(ocml, "amdgcn", "bitcode", "ocml.bc");
    if (llvm::sys::fs::exists(ocml))
      return root;
  }
  return "";
}

bool readKernelResources(llvm::ArrayRef<char> hsaco,
                         std::vector<KernelResources> &resources,
                         int &codeObject, std::string &error) {
  llvm::StringMap<llvm::offloading::amdgpu::AMDGPUKernelMetaData> kernels;
  uint16_t abiVersion = 0;
  llvm::MemoryBufferRef buffer(llvm::StringRef(hsaco.data(), hsaco.size()),
                               "code object");
  if (llvm::Error failure =
          llvm::offloading::amdgpu::getAMDGPUMetaDataFromImage(
              buffer, kernels, abiVersion)) {
    error = "the code object's amdhsa.kernels metadata does not read: " +
            llvm::toString(std::move(failure));
    return false;
  }
  // The ELF ABI version counts from code object 2 (ELFABIVERSION 0).
  codeObject = abiVersion + 2;
  auto known = [](uint32_t value) {
    return value == llvm::offloading::amdgpu::AMDGPUKernelMetaData::KInvalidValue
               ? 0
               : static_cast<int>(value);
  };
  resources.clear();
  for (const auto &entry : kernels) {
    const llvm::offloading::amdgpu::AMDGPUKernelMetaData &kernel =
        entry.getValue();
    KernelResources described;
    described.name = entry.getKey().str();
    described.vgprs = known(kernel.VGPRCount);
    described.agprs = known(kernel.AGPRCount);
    described.sgprs = known(kernel.SGPRCount);
    described.vgprSpills = known(kernel.VGPRSpillCount);
    described.sgprSpills = known(kernel.SGPRSpillCount);
    described.ldsBytes = known(kernel.GroupSegmentList);
    described.privateBytes = known(kernel.PrivateSegmentSize);
    described.wavefrontSize = known(kernel.WavefrontSize);
    resources.push_back(std::move(described));
  }
  llvm::sort(resources, [](const KernelResources &a, const KernelResources &b) {
    return a.name < b.name;
  });
  return true;
}

bool compileGpuModule(ModuleOp module, int codeObject,
                      std::vector<Executable> &executables, std::string &error,
                      const AssembledCallback &assembled) {
  if (!isCodeObjectVersion(codeObject)) {
    error = "code object version " + std::to_string(codeObject) +
            " is not one hetc writes; choose 4 (HIP 5.x) or 5";
    return false;
  }
  std::string libraries = deviceLibraryRoot();
  if (libraries.empty()) {
    error = "the ROCm device libraries (amdgcn/bitcode/ocml.bc) are in none "
            "of $ROCM_PATH, /opt/rocm and /usr/lib/x86_64-linux-gnu; install "
            "rocm-device-libs or set ROCM_PATH";
    return false;
  }
  MLIRContext *context = module.getContext();
  if (!prepareGpuKernels(module, kWavefrontLanes, error))
    return false;
  std::vector<KernelInfo> kernels = describeGpuKernels(module);
  for (llvm::StringRef chip : chips()) {
    OwningOpRef<ModuleOp> copy(module.clone());
    PassManager lower(context);
    addRocdlLowering(lower, chip, codeObject);
    if (failed(lower.run(*copy))) {
      error = "the kernels do not lower to ROCDL for " + chip.str();
      return false;
    }
    std::string isa;
    if (!serializeToAssembly(*copy, libraries, isa, error)) {
      error = chip.str() + ": " + error;
      return false;
    }
    Executable hsaco;
    std::vector<KernelResources> resources;
    int written = 0;
    if (!linkCodeObject(context, isa, chip, hsaco.code, error) ||
        !readKernelResources(hsaco.code, resources, written, error))
      return false;
    if (written != codeObject) {
      error = chip.str() + ": asked for code object " +
              std::to_string(codeObject) + ", the compiler wrote " +
              std::to_string(written);
      return false;
    }
    if (assembled)
      assembled(chip, hsaco.code, resources);
    for (const KernelResources &kernel : resources)
      if (kernel.vgprSpills || kernel.sgprSpills || kernel.privateBytes) {
        error = "kernel " + kernel.name + " spills registers on " +
                chip.str() + " (" + std::to_string(kernel.vgprSpills) +
                " VGPRs, " + std::to_string(kernel.sgprSpills) + " SGPRs, " +
                std::to_string(kernel.privateBytes) + " B of scratch)";
        return false;
      }
    hsaco.variant = chip.str();
    hsaco.format = "hsaco";
    hsaco.requiredFeatures = {chip.str()};
    hsaco.kernels = kernels;
    executables.push_back(std::move(hsaco));
  }
  return true;
}

bool compileKernelLibrary(MLIRContext *context, int codeObject,
                          std::vector<Executable> &executables,
                          std::string &error,
                          const AssembledCallback &assembled) {
  OwningOpRef<ModuleOp> library = subgroupKernelLibrary(context, "amdgpu", error);
  if (!library)
    return false;
  if (!compileGpuModule(*library, codeObject, executables, error, assembled)) {
    error = "the kernel library for AMD GPUs: " + error;
    return false;
  }
  return true;
}

namespace {

struct RocdlPipelineOptions : public PassPipelineOptions<RocdlPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("AMD GPU architecture (gfx90a, "
                                          "gfx942, ...)"),
                           llvm::cl::init("gfx942")};
  Option<int> codeObject{*this, "code-object",
                         llvm::cl::desc("Code object version: 4 (what HIP "
                                        "5.x loads) or 5"),
                         llvm::cl::init(4)};
};

} // namespace

void registerRocdlPipeline() {
  // Registered by hand rather than through PassPipelineRegistration so that
  // a code object version hetc does not write is an error, not an ABI the
  // runtime cannot load.
  registerPassPipeline(
      "hetc-lower-gpu-to-rocdl",
      "Lower gpu.module kernels written in the kernel library's conventions "
      "to the ROCDL dialect for an AMD GPU (a #rocdl.target for the chip and "
      "code object version, wavefronts of 64 lanes)",
      [](OpPassManager &pm, llvm::StringRef text,
         llvm::function_ref<LogicalResult(const llvm::Twine &)> fail) {
        RocdlPipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        if (!isCodeObjectVersion(options.codeObject))
          return fail("hetc-lower-gpu-to-rocdl: code-object=" +
                      llvm::Twine(options.codeObject.getValue()) +
                      " is not a version hetc writes; choose 4 or 5");
        buildRocdlPipeline(pm, options.chip, options.codeObject);
        return success();
      },
      [](llvm::function_ref<void(const detail::PassOptions &)> describe) {
        describe(RocdlPipelineOptions());
      });
}

} // namespace hetc::target::amdgpu
