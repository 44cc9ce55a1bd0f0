// Shared by the SPIR-V tests: compiling a module of gpu kernels the way the
// target does, and SPIRV-Tools' validation for Vulkan 1.2.
#ifndef HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
#define HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H

#include "hetc/Target/SPIRV.h"

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

} // namespace hetc::test

#endif // HETC_TEST_UNIT_TARGET_SPIRVTESTSUPPORT_H
