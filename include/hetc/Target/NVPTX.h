// The NVPTX back end: the gpu-dialect kernel library → PTX through upstream
// MLIR (convert-gpu-to-nvvm, the NVVM target's serializer with libdevice),
// and PTX → cubin through the CUDA toolkit's ptxas.
#ifndef HETC_TARGET_NVPTX_H
#define HETC_TARGET_NVPTX_H

#include "hetc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>
#include <vector>

namespace hetc::target::nvptx {

/// The chips hetc assembles cubins for (A100-class and Hopper); any other
/// NVIDIA GPU the driver serves runs the PTX built for the oldest of them,
/// which the driver compiles for it when the module loads.
llvm::ArrayRef<llvm::StringRef> cubinChips();

/// The PTX ISA version the NVPTX back end writes for `chip` ("+ptx70" for
/// sm_80, "+ptx80" for sm_90 and later), as an `#nvvm.target` feature; an
/// empty string for a chip that is not an `sm_NN`.
std::string ptxFeaturesFor(llvm::StringRef chip);

/// gpu.module kernels (the kernel library's conventions; see
/// hetc-gpu-prepare-kernels) → gpu.modules of the LLVM and NVVM dialects
/// with an `#nvvm.target` for `chip`.
void buildNvvmPipeline(mlir::OpPassManager &pm, llvm::StringRef chip);

/// The CUDA toolkit to assemble with: $CUDA_HOME, else /usr/local/cuda.
std::string cudaToolkitPath();

/// What ptxas said about one kernel (`-v`).
struct KernelResources {
  std::string name;
  int registers = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int sharedBytes = 0;
};

/// Assembles `ptx` for `chip` with the toolkit's ptxas (-O3 -v) into
/// `cubin`, and reads each kernel's resources from its report. False with
/// `error` naming the toolkit, the chip and ptxas's own message.
bool assemblePtx(llvm::StringRef ptx, llvm::StringRef chip,
                 llvm::StringRef toolkit, std::vector<char> &cubin,
                 std::vector<KernelResources> &resources, std::string &error);

/// The one gpu.module of `module` (the kernel library's conventions)
/// compiled for NVIDIA GPUs: a cubin per cubinChips() (format "cubin",
/// variant and required feature the chip) and the PTX of the oldest chip
/// (format "ptx", variant "compute_NN"). A kernel that spills registers is
/// an error naming it: the library's hot loops are written to fit.
/// `assembled`, when given, sees each chip's PTX and what ptxas reported.
using AssembledCallback =
    std::function<void(llvm::StringRef chip, llvm::StringRef ptx,
                       llvm::ArrayRef<KernelResources> resources)>;
bool compileGpuModule(mlir::ModuleOp module, llvm::StringRef toolkit,
                      std::vector<Executable> &executables, std::string &error,
                      const AssembledCallback &assembled = {});

/// The kernel library's subgroup variant, compiled by compileGpuModule.
bool compileKernelLibrary(mlir::MLIRContext *context, llvm::StringRef toolkit,
                          std::vector<Executable> &executables,
                          std::string &error,
                          const AssembledCallback &assembled = {});

/// Registers the "hetc-lower-gpu-to-nvvm" pipeline with hetc-opt.
void registerNvvmPipeline();

/// The NVPTX target (hetc/Target/Target.h): `#het.device`s of kind cuda.
const Target &nvptxTarget();

} // namespace hetc::target::nvptx

#endif // HETC_TARGET_NVPTX_H
