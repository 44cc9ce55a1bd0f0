// The SPIR-V back end: GPU-dialect kernels → SPIR-V modules for Vulkan
// compute devices, through upstream MLIR (convert-gpu-to-spirv, the
// interface ABI lowering, VCE deduction) and its serializer.
#ifndef HETC_TARGET_SPIRV_H
#define HETC_TARGET_SPIRV_H

#include "hetc/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hetc::target::spirv {

/// A kernel of a serialized module: the seam's description of a kernel
/// dispatched by entry point.
using SpirvKernel = KernelInfo;

/// What a SPIR-V module needs of a device, as its spirv.module declares
/// after deduction: the SPIR-V version ("1.3"), capabilities and extensions
/// by their SPIR-V names.
struct SpirvRequirements {
  std::string version;
  std::vector<std::string> capabilities;
  std::vector<std::string> extensions;
};

/// One SPIR-V module: its binary (little-endian words), its kernels and
/// what it requires.
struct SpirvExecutable {
  std::string name;
  std::string binary;
  std::vector<SpirvKernel> kernels;
  SpirvRequirements requirements;
};

/// Gives `module` hetc's default Vulkan 1.2 environment
/// (spirv::defaultVulkanTargetEnv) when it names none. Device-specific
/// capabilities (f16, int8, subgroups) are added from the device's
/// description where it is known.
void attachDefaultTargetEnv(mlir::ModuleOp module);

/// gpu.module kernels → spirv.module ops beside them, with the interface
/// ABI lowered and the minimal version, capabilities and extensions
/// deduced. The module must be a gpu.container_module.
void buildSpirvPipeline(mlir::OpPassManager &pm);

/// Serializes every spirv.module of `module` (after buildSpirvPipeline) and
/// describes its kernels. Returns false with `error` when there is none or
/// one fails to serialize.
bool serializeSpirvModules(mlir::ModuleOp module,
                           std::vector<SpirvExecutable> &executables,
                           std::string &error);

/// Gives `module` the default environment when it names none, lowers its
/// gpu kernels (buildSpirvPipeline) and serializes them
/// (serializeSpirvModules). Returns false with `error` on failure.
bool compileToSpirv(mlir::ModuleOp module,
                    std::vector<SpirvExecutable> &executables,
                    std::string &error);

/// The kernel library parsed into `context` (which must have the gpu, arith,
/// math, memref, scf, func, vector, nvgpu and amdgpu dialects): the llm ops as
/// gpu kernels (lib/Target/SPIRV/kernels/Kernels.mlir, in the conventions its
/// header describes) with the matrix-unit products of MatrixUnits.mlir merged
/// into its gpu.module; null, with diagnostics emitted, when it does not parse
/// or verify.
mlir::OwningOpRef<mlir::ModuleOp> parseKernelLibrary(mlir::MLIRContext *context);

/// The kernel library's variants, best first: "subgroup" (reductions in
/// subgroup arithmetic) and "portable" (trees through workgroup memory, for
/// every Vulkan device); see hetc-spirv-specialize-kernels.
llvm::ArrayRef<llvm::StringRef> kernelLibraryVariants();

/// The kernel library specialized to `variant`, compiled and serialized into
/// `executable`. Returns false with `error` on failure.
bool compileKernelLibrary(mlir::MLIRContext *context, llvm::StringRef variant,
                          SpirvExecutable &executable, std::string &error);

/// Registers the "hetc-lower-gpu-to-spirv" pipeline with hetc-opt.
void registerSpirvPipeline();

/// The SPIR-V target (hetc/Target/Target.h): `#het.device`s of kind spirv.
/// It compiles modules of gpu kernels; llm modules are refused with the
/// reason until the llm ops lower to gpu kernels.
const Target &spirvTarget();

} // namespace hetc::target::spirv

#endif // HETC_TARGET_SPIRV_H
