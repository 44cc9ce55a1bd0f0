// The back-end seam (cf. IREE's TargetBackend, Triton's TargetInfo): a target
// generates code for one kind of device. It builds the pass pipeline that
// lowers an imported llm module for a `#het.device`, and serializes the
// result into executables that a pack stores and the runtime's device layer
// loads. Targets are found by device through the registry, so the driver
// never names one.
#ifndef HETC_TARGET_TARGET_H
#define HETC_TARGET_TARGET_H

#include "dialects/het/HetAttrs.h"
#include "hetc/Pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hetc::target {

/// A kernel of an executable whose device dispatches kernels by name (SPIR-V):
/// its entry point, the storage buffers it binds (descriptor set 0,
/// bindings 0..bindings-1 in argument order) and its workgroup size.
struct KernelInfo {
  std::string entryPoint;
  int bindings = 0;
  std::array<int64_t, 3> workgroupSize = {1, 1, 1};
};

/// Code for one device, as a pack stores it.
struct Executable {
  /// The code variant: a CPU variant ("avx512-vnni", "x86-64-v2"), or the
  /// device architecture it was compiled for ("vulkan1.2").
  std::string variant;
  /// How the runtime loads it: "elf-shared-object" (x86) or "spirv".
  std::string format;
  std::vector<char> code;
  /// Features the device must have to run it (the runtime's CPU feature
  /// names for x86); the runtime picks the best variant its device meets.
  std::vector<std::string> requiredFeatures;
  /// Kernels, for formats dispatched by entry point (empty for x86, whose
  /// entry points the code record describes).
  std::vector<KernelInfo> kernels;
};

/// What a compilation asks of a target beyond the device.
struct CompileRequest {
  /// x86: the CPU variants to build ("all", "host" or names).
  std::vector<std::string> cpuVariants = {"all"};
  /// AMDGPU: the code object version (4, which HIP 5.x loads, or 5).
  int amdgpuCodeObject = 4;
  /// Called with a line per step, for progress display.
  std::function<void(const std::string &)> progress;
};

class Target {
public:
  virtual ~Target();
  /// The target's name: "x86", "spirv", "nvptx", "amdgpu".
  virtual llvm::StringRef name() const = 0;
  /// The devices it generates code for, in words, for error messages.
  virtual llvm::StringRef devices() const = 0;
  /// Whether it generates code for `device`.
  virtual bool supports(het::DeviceAttr device) const = 0;
  /// Adds the passes that take an imported llm module to phase `to` (Linalg,
  /// Loops or LLVM) for `device`. False with `error` when the target cannot
  /// lower llm modules that far for this device.
  virtual bool buildPipeline(mlir::OpPassManager &pm, het::DeviceAttr device,
                             pipeline::Phase to, std::string &error) const = 0;
  /// Lowers `module` for `device` (the target works on copies where it needs
  /// several lowerings; the module may be changed) and serializes it into
  /// `executables`. False with `error` naming the module, the step and the
  /// cause.
  virtual bool compile(mlir::ModuleOp module, het::DeviceAttr device,
                       const CompileRequest &request,
                       std::vector<Executable> &executables,
                       std::string &error) const = 0;
};

/// A target whose code is the GPU kernel library (SPIR-V, NVPTX, AMDGPU): it
/// compiles modules of gpu kernels, and a model reaches its devices as a
/// program of the library's dispatches, so it lowers no llm module itself.
class KernelLibraryTarget : public Target {
public:
  bool buildPipeline(mlir::OpPassManager &pm, het::DeviceAttr device,
                     pipeline::Phase to, std::string &error) const override {
    error = llmNotLowered(device);
    return false;
  }
  /// Refuses a module without gpu.modules (an llm module) with the reason,
  /// else compiles its kernels.
  bool compile(mlir::ModuleOp module, het::DeviceAttr device,
               const CompileRequest &request,
               std::vector<Executable> &executables,
               std::string &error) const final;

protected:
  /// The hetc-opt pipeline that lowers its kernels, for messages
  /// ("hetc-lower-gpu-to-nvvm").
  virtual llvm::StringRef kernelPipeline() const = 0;
  /// Compiles the gpu.modules of `module` into `executables`.
  virtual bool compileKernels(mlir::ModuleOp module, het::DeviceAttr device,
                              const CompileRequest &request,
                              std::vector<Executable> &executables,
                              std::string &error) const = 0;

private:
  std::string llmNotLowered(het::DeviceAttr device) const;
};

/// Every target built into hetc: x86, SPIR-V, NVPTX, then AMDGPU.
llvm::ArrayRef<const Target *> registeredTargets();

/// The target that generates code for `device`, or null with `error` naming
/// the device and the targets there are.
const Target *findTarget(het::DeviceAttr device, std::string &error);

} // namespace hetc::target

#endif // HETC_TARGET_TARGET_H
