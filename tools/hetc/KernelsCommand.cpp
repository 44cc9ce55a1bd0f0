// `hetc kernels`: the kernel library compiled for a GPU target, written out
// for inspection (what a pack carries for that target's devices).
#include "Commands.h"

#include "hetc/InitAll.h"
#include "hetc/Target/AMDGPU.h"
#include "hetc/Target/NVPTX.h"
#include "hetc/Target/SPIRV.h"
#include "runtime/format/OutputFile.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <memory>

namespace hetc::cli {

namespace {

struct KernelsFlags {
  std::string target;
  std::string output;
  bool ptx = false;
  int codeObject = 4;
};

bool writeFile(const std::filesystem::path &path, llvm::StringRef bytes,
               std::string &error) {
  return hetrt::format::writeFileAtomically(
      path.string(), std::string_view(bytes.data(), bytes.size()), error);
}

/// Writes each executable as VARIANT.FORMAT.
int writeExecutables(const std::vector<target::Executable> &executables,
                     const std::filesystem::path &directory) {
  std::string error;
  for (const target::Executable &executable : executables) {
    std::filesystem::path path =
        directory / (executable.variant + "." + executable.format);
    if (!writeFile(path,
                   llvm::StringRef(executable.code.data(),
                                   executable.code.size()),
                   error)) {
      std::cerr << "hetc kernels: " << error << "\n";
      return 1;
    }
    std::cout << "wrote " << path.string() << " ("
              << executable.kernels.size() << " kernels)\n";
  }
  return 0;
}

int writeNvptx(mlir::MLIRContext &context, const KernelsFlags &flags,
               const std::filesystem::path &directory) {
  std::vector<target::Executable> executables;
  std::string error;
  bool written = true;
  auto assembled = [&](llvm::StringRef chip, llvm::StringRef ptx,
                       llvm::ArrayRef<target::nvptx::KernelResources> kernels) {
    std::cout << chip.str() << ":\n";
    for (const target::nvptx::KernelResources &kernel : kernels)
      std::cout << "  " << kernel.name << ": " << kernel.registers
                << " registers, " << kernel.sharedBytes << " B shared, "
                << kernel.spillStoreBytes + kernel.spillLoadBytes
                << " B spilled\n";
    if (flags.ptx && written)
      written = writeFile(directory / (chip.str() + ".ptx"), ptx, error);
  };
  std::string toolkit = target::nvptx::cudaToolkitPath();
  if (!target::nvptx::compileKernelLibrary(&context, toolkit, executables,
                                           error, assembled) ||
      !written) {
    std::cerr << "hetc kernels: " << error << "\n";
    return 1;
  }
  return writeExecutables(executables, directory);
}

int writeAmdgpu(mlir::MLIRContext &context, const KernelsFlags &flags,
                const std::filesystem::path &directory) {
  std::vector<target::Executable> executables;
  std::string error;
  auto assembled =
      [&](llvm::StringRef chip, llvm::ArrayRef<char>,
          llvm::ArrayRef<target::amdgpu::KernelResources> kernels) {
        std::cout << chip.str() << ":\n";
        for (const target::amdgpu::KernelResources &kernel : kernels)
          std::cout << "  " << kernel.name << ": " << kernel.vgprs
                    << " VGPRs, " << kernel.sgprs << " SGPRs, "
                    << kernel.ldsBytes << " B LDS, "
                    << kernel.privateBytes << " B scratch, wave"
                    << kernel.wavefrontSize << ", "
                    << kernel.vgprSpills + kernel.sgprSpills
                    << " registers spilled\n";
      };
  if (!target::amdgpu::compileKernelLibrary(&context, flags.codeObject,
                                            executables, error, assembled)) {
    std::cerr << "hetc kernels: " << error << "\n";
    return 1;
  }
  return writeExecutables(executables, directory);
}

int writeSpirv(mlir::MLIRContext &context,
               const std::filesystem::path &directory) {
  for (llvm::StringRef variant : target::spirv::kernelLibraryVariants()) {
    target::spirv::SpirvExecutable executable;
    std::string error;
    if (!target::spirv::compileKernelLibrary(&context, variant, executable,
                                             error) ||
        !writeFile(directory / (variant.str() + ".spv"), executable.binary,
                   error)) {
      std::cerr << "hetc kernels: " << error << "\n";
      return 1;
    }
    std::cout << "wrote " << (directory / (variant.str() + ".spv")).string()
              << " (SPIR-V " << executable.requirements.version << ", "
              << executable.kernels.size() << " kernels)\n";
  }
  return 0;
}

} // namespace

Action registerKernelsCommand(CLI::App &app) {
  auto flags = std::make_shared<KernelsFlags>();
  CLI::App *command = app.add_subcommand(
      "kernels", "Compile the GPU kernel library for a target and write its "
                 "code to a directory (what a pack carries for such devices)");
  command
      ->add_option("--target", flags->target,
                   "nvptx (a cubin per chip and the PTX newer GPUs compile; "
                   "ptxas from $CUDA_HOME, else /usr/local/cuda), amdgpu (a "
                   "code object per CDNA chip, linked against the ROCm device "
                   "libraries), or spirv (each variant's module)")
      ->check(CLI::IsMember({"nvptx", "amdgpu", "spirv"}))
      ->required();
  command->add_option("-o,--output", flags->output,
                      "The directory to write (created if missing)")
      ->required();
  command->add_flag("--ptx", flags->ptx,
                    "nvptx: also write the PTX each chip's cubin was "
                    "assembled from (CHIP.ptx)");
  command
      ->add_option("--code-object", flags->codeObject,
                   "amdgpu: the code object version, 4 (what HIP 5.x loads) "
                   "or 5")
      ->check(CLI::IsMember({4, 5}));
  return [command, flags]() -> int {
    if (!*command)
      return -1;
    std::error_code failure;
    std::filesystem::path directory(flags->output);
    std::filesystem::create_directories(directory, failure);
    if (failure || !std::filesystem::is_directory(directory)) {
      std::cerr << "hetc kernels: -o " << flags->output
                << " is not a directory that can be created"
                << (failure ? " (" + failure.message() + ")" : "") << "\n";
      return 1;
    }
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    if (flags->target == "nvptx")
      return writeNvptx(context, *flags, directory);
    if (flags->target == "amdgpu")
      return writeAmdgpu(context, *flags, directory);
    return writeSpirv(context, directory);
  };
}

} // namespace hetc::cli
