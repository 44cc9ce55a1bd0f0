// Shared by the SPIR-V tests: compiling a module of gpu kernels the way the
// target does, and SPIRV-Tools' validation for Vulkan 1.2.
#ifndef HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
#define HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H

#include "hetc/InitAll.h"
#include "hetc/Target/SPIRV.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>
#include <spirv-tools/libspirv.hpp>

#include <cstring>
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

/// The kernel library compiled as the target compiles it, once per process.
inline const target::spirv::SpirvExecutable &kernelLibrary() {
  static const target::spirv::SpirvExecutable compiled = [] {
    mlir::DialectRegistry registry;
    hetc::registerAllDialects(registry);
    mlir::MLIRContext context(registry);
    mlir::OwningOpRef<mlir::ModuleOp> module =
        target::spirv::parseKernelLibrary(&context);
    EXPECT_TRUE(module);
    if (!module)
      return target::spirv::SpirvExecutable{};
    std::vector<target::spirv::SpirvExecutable> executables =
        compileOrFail(*module);
    EXPECT_EQ(executables.size(), 1u);
    return executables.empty() ? target::spirv::SpirvExecutable{}
                               : executables.front();
  }();
  return compiled;
}

} // namespace hetc::test

#endif // HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
