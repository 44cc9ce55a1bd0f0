// Shared by the SPIR-V tests: compiling a module of gpu kernels the way the
// target does, and SPIRV-Tools' validation for Vulkan 1.2.
#ifndef HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
#define HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H

#include "hetc/InitAll.h"
#include "hetc/Target/SPIRV.h"
#include "runtime/hal/Device.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>
#include <spirv-tools/libspirv.hpp>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace hetc::test {

/// The executables of `module` (its gpu kernels), with any failure recorded
/// as a test failure.
inline std::vector<target::spirv::SpirvExecutable>
compileOrFail(mlir::ModuleOp module) {
  std::vector<target::spirv::SpirvExecutable> executables;
  std::string error;
  EXPECT_TRUE(target::spirv::compileToSpirv(module, executables, error))
      << error;
  return executables;
}

/// Whether `binary` validates for Vulkan 1.2; `messages` gets the
/// validator's reasons.
inline bool validatesForVulkan12(const std::string &binary,
                                 std::string &messages) {
  std::vector<uint32_t> words(binary.size() / 4);
  std::memcpy(words.data(), binary.data(), words.size() * 4);
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  tools.SetMessageConsumer([&](spv_message_level_t, const char *,
                               const spv_position_t &, const char *message) {
    messages += std::string(message) + "\n";
  });
  return tools.Validate(words);
}

/// Runs `body(device)` on every device that runs SPIR-V; skips the test,
/// with the reasons the runtime gives, when there is none.
template <typename Body> void onEverySpirvDevice(Body body) {
  int ran = 0;
  std::vector<std::string> unavailable;
  for (const std::shared_ptr<hetrt::hal::Device> &device :
       hetrt::hal::enumerateDevices(&unavailable)) {
    if (!device->runs(hetrt::hal::ExecutableFormat::SpirV))
      continue;
    SCOPED_TRACE(device->info().name);
    body(*device);
    ++ran;
  }
  if (ran == 0) {
    std::string reasons;
    for (const std::string &line : unavailable)
      reasons += "\n  " + line;
    GTEST_SKIP() << "no device runs SPIR-V on this machine:" << reasons;
  }
}

/// Variant `variant` of the kernel library, compiled as the target compiles
/// it, once per process.
inline const target::spirv::SpirvExecutable &
kernelLibrary(llvm::StringRef variant = "portable") {
  static std::map<std::string, target::spirv::SpirvExecutable> compiled;
  auto found = compiled.find(variant.str());
  if (found != compiled.end())
    return found->second;
  mlir::DialectRegistry registry;
  hetc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  target::spirv::SpirvExecutable executable;
  std::string error;
  EXPECT_TRUE(target::spirv::compileKernelLibrary(&context, variant,
                                                  executable, error))
      << error;
  return compiled[variant.str()] = std::move(executable);
}

} // namespace hetc::test

#endif // HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
