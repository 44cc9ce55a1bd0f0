// The AMDGPU back end: the gpu-dialect kernel library → AMDGPU code objects
// (HSACO) through upstream MLIR (convert-gpu-to-rocdl, the ROCDL target's
// serializer with the ROCm device libraries, its assembler) and ld.lld.
#ifndef HETC_TARGET_AMDGPU_H
#define HETC_TARGET_AMDGPU_H

#include "hetc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <string>
#include <vector>

namespace hetc::target::amdgpu {

/// The chips hetc builds code objects for: CDNA2 (gfx90a, MI200) and CDNA3
/// (gfx942, MI300). Both run wavefronts of 64 lanes.
llvm::ArrayRef<llvm::StringRef> chips();

/// Code object versions hetc writes: 4 (what HIP 5.2, Debian's, loads; the
/// default) and 5.
bool isCodeObjectVersion(int version);

/// gpu.module kernels (the kernel library's conventions; see
/// hetc-gpu-prepare-kernels) → gpu.modules of the LLVM and ROCDL dialects
/// with a `#rocdl.target` for `chip` and code object `codeObject`.
void buildRocdlPipeline(mlir::OpPassManager &pm, llvm::StringRef chip,
                        int codeObject);

/// The directory whose amdgcn/bitcode holds the ROCm device libraries:
/// $ROCM_PATH, /opt/rocm, then Debian's /usr/lib/x86_64-linux-gnu; empty
/// when none has them.
std::string deviceLibraryRoot();

/// What a code object's metadata (`amdhsa.kernels`) says of one kernel.
struct KernelResources {
  std::string name;
  int vgprs = 0;
  int agprs = 0;
  int sgprs = 0;
  int vgprSpills = 0;
  int sgprSpills = 0;
  int ldsBytes = 0;
  /// Scratch per work-item: spills, or arrays the compiler could not keep
  /// in registers.
  int privateBytes = 0;
  int wavefrontSize = 0;
};

/// The kernels' resources as the code object `hsaco` records them (sorted
/// by name), and its code object version.
bool readKernelResources(llvm::ArrayRef<char> hsaco,
                         std::vector<KernelResources> &resources,
                         int &codeObject, std::string &error);

/// `assembled`, when given, sees each chip's code object and resources.
using AssembledCallback =
    std::function<void(llvm::StringRef chip, llvm::ArrayRef<char> hsaco,
                       llvm::ArrayRef<KernelResources> resources)>;

/// The one gpu.module of `module` compiled for each of chips(): a code
/// object linked with `ld.lld --no-undefined` (so a device-library symbol
/// that did not resolve is an error, not a load failure on the GPU), format
/// "hsaco", variant and required feature the chip. A kernel that spills
/// registers or uses scratch memory is an error naming it.
bool compileGpuModule(mlir::ModuleOp module, int codeObject,
                      std::vector<Executable> &executables, std::string &error,
                      const AssembledCallback &assembled = {});

/// The kernel library's subgroup variant, compiled by compileGpuModule.
bool compileKernelLibrary(mlir::MLIRContext *context, int codeObject,
                          std::vector<Executable> &executables,
                          std::string &error,
                          const AssembledCallback &assembled = {});

/// Registers the "hetc-lower-gpu-to-rocdl" pipeline with hetc-opt.
void registerRocdlPipeline();

/// The AMDGPU target (hetc/Target/Target.h): `#het.device`s of kind hip
/// whose arch is one of chips().
const Target &amdgpuTarget();

} // namespace hetc::target::amdgpu

#endif // HETC_TARGET_AMDGPU_H
