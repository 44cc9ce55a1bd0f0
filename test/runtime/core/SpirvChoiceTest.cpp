// The kernel library variant a device runs: the first, best first, whose
// SPIR-V version, capabilities and extensions the device has; none, with
// what the device lacks, when it has too little.
#include "runtime/core/ProgramSession.h"

#include <gtest/gtest.h>

namespace {

using hetrt::core::chooseSpirvLibrary;

hetrt::format::SpirvCode twoVariants() {
  hetrt::format::SpirvCode code;
  code.libraries = {{"subgroup", "code/spirv/kernels-subgroup.spv", "1.3",
                     {"Shader", "GroupNonUniform", "GroupNonUniformArithmetic"},
                     {"SPV_KHR_storage_buffer_storage_class"}},
                    {"portable", "code/spirv/kernels-portable.spv", "1.0",
                     {"Shader", "Matrix"},
                     {"SPV_KHR_storage_buffer_storage_class"}}};
  return code;
}

hetrt::hal::SpirvSupport device(int version,
                                std::vector<std::string> capabilities) {
  hetrt::hal::SpirvSupport support;
  support.version = version;
  support.capabilities = std::move(capabilities);
  support.extensions = {"SPV_KHR_storage_buffer_storage_class"};
  return support;
}

TEST(SpirvChoice, ADeviceWithSubgroupArithmeticRunsTheSubgroupVariant) {
  std::string why;
  const hetrt::format::SpirvCode code = twoVariants();
  const hetrt::format::SpirvLibrary *chosen = chooseSpirvLibrary(
      code,
      device(105, {"Shader", "Matrix", "GroupNonUniform",
                   "GroupNonUniformArithmetic"}),
      why);
  ASSERT_TRUE(chosen) << why;
  EXPECT_EQ(chosen->variant, "subgroup");
}

TEST(SpirvChoice, ADeviceWithoutItRunsThePortableVariant) {
  std::string why;
  const hetrt::format::SpirvCode code = twoVariants();
  const hetrt::format::SpirvLibrary *chosen = chooseSpirvLibrary(
      code, device(105, {"Shader", "Matrix", "GroupNonUniform"}),
      why);
  ASSERT_TRUE(chosen) << why;
  EXPECT_EQ(chosen->variant, "portable");
  // SPIR-V 1.0 has no subgroup operations at all.
  chosen = chooseSpirvLibrary(
      code,
      device(100, {"Shader", "Matrix", "GroupNonUniform",
                   "GroupNonUniformArithmetic"}),
      why);
  ASSERT_TRUE(chosen) << why;
  EXPECT_EQ(chosen->variant, "portable");
}

TEST(SpirvChoice, ADeviceThatRunsNoVariantIsToldWhatItLacks) {
  std::string why;
  hetrt::hal::SpirvSupport bare = device(100, {"Shader"});
  bare.extensions.clear();
  EXPECT_FALSE(chooseSpirvLibrary(twoVariants(), bare, why));
  EXPECT_EQ(why, "variant subgroup needs SPIR-V 1.3, GroupNonUniform, "
                 "GroupNonUniformArithmetic, "
                 "SPV_KHR_storage_buffer_storage_class; variant portable "
                 "needs Matrix, SPV_KHR_storage_buffer_storage_class");
  // A device that runs no SPIR-V (the CPU) lacks everything.
  EXPECT_FALSE(chooseSpirvLibrary(twoVariants(), hetrt::hal::SpirvSupport{},
                                  why));
}

} // namespace
