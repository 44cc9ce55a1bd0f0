// The SPIR-V back end end to end: a gpu kernel lowered by hetc's SPIR-V
// pipeline and serialized must pass SPIRV-Tools' validator for Vulkan 1.2,
// and, on every device of the device layer that runs SPIR-V (lavapipe here,
// any Vulkan GPU elsewhere), compute what the kernel says.
#include "hetc/InitAll.h"
#include "hetc/Target/SPIRV.h"
#include "SpirvTestSupport.h"
#include "runtime/hal/Device.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace {

using namespace hetc::target::spirv;

// c[i] = a[i] * scale + b[i] over 1024 elements in workgroups of 64; the
// scalar argument becomes a storage buffer of its own (binding 3).
constexpr const char *kKernel = R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @axpy(%a: memref<1024xf32>, %b: memref<1024xf32>,
                   %c: memref<1024xf32>, %scale: f32) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %dim = gpu.block_dim x
      %base = arith.muli %bid, %dim : index
      %i = arith.addi %base, %tid : index
      %x = memref.load %a[%i] : memref<1024xf32>
      %y = memref.load %b[%i] : memref<1024xf32>
      %ax = arith.mulf %x, %scale : f32
      %z = arith.addf %ax, %y : f32
      memref.store %z, %c[%i] : memref<1024xf32>
      gpu.return
    }
  }
}
)mlir";

std::vector<SpirvExecutable> compileKernel() {
  mlir::DialectRegistry registry;
  hetc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kKernel, &context);
  EXPECT_TRUE(module);
  if (!module)
    return {};
  return hetc::test::compileOrFail(*module);
}

TEST(SpirvTarget, SerializesAValidVulkanModule) {
  std::vector<SpirvExecutable> executables = compileKernel();
  ASSERT_EQ(executables.size(), 1u);
  const SpirvExecutable &executable = executables.front();
  ASSERT_EQ(executable.kernels.size(), 1u);
  EXPECT_EQ(executable.kernels[0].entryPoint, "axpy");
  EXPECT_EQ(executable.kernels[0].bindings, 4);
  EXPECT_EQ(executable.kernels[0].workgroupSize,
            (std::array<int64_t, 3>{64, 1, 1}));
  std::string messages;
  EXPECT_TRUE(hetc::test::validatesForVulkan12(executable.binary, messages))
      << messages;
}

TEST(SpirvTarget, RunsOnEveryDeviceThatRunsSpirv) {
  std::vector<SpirvExecutable> executables = compileKernel();
  ASSERT_EQ(executables.size(), 1u);
  const SpirvExecutable &compiled = executables.front();
  hetc::test::onEverySpirvDevice([&](hetrt::hal::Device &device) {
    hetrt::hal::Error error;
    std::shared_ptr<hetrt::hal::Executable> executable = device.loadExecutable(
        hetrt::hal::ExecutableFormat::SpirV, compiled.binary,
        {{"axpy", compiled.kernels[0].bindings, 0}}, error);
    ASSERT_TRUE(executable) << error.message;
    constexpr size_t kCount = 1024;
    std::vector<float> a(kCount), b(kCount), c(kCount, -1.0f);
    for (size_t i = 0; i < kCount; ++i) {
      a[i] = static_cast<float>(i) * 0.5f;
      b[i] = 1000.0f - static_cast<float>(i);
    }
    float scale = 3.0f;
    auto bufferA = device.allocate(0, kCount * 4, error);
    auto bufferB = device.allocate(0, kCount * 4, error);
    auto bufferC = device.allocate(0, kCount * 4, error);
    auto bufferScale = device.allocate(0, 4, error);
    ASSERT_TRUE(bufferA && bufferB && bufferC && bufferScale) << error.message;
    std::unique_ptr<hetrt::hal::Queue> queue = device.createQueue(error);
    ASSERT_TRUE(queue) << error.message;
    ASSERT_TRUE(queue->write(a.data(), *bufferA, 0, kCount * 4, error));
    ASSERT_TRUE(queue->write(b.data(), *bufferB, 0, kCount * 4, error));
    ASSERT_TRUE(queue->write(&scale, *bufferScale, 0, 4, error));
    ASSERT_TRUE(queue->fill(*bufferC, 0, kCount * 4, 0, 4, error));
    uint32_t groups[3] = {kCount / 64, 1, 1};
    ASSERT_TRUE(queue->dispatch(*executable, 0, groups,
                                {bufferA.get(), bufferB.get(), bufferC.get(),
                                 bufferScale.get()},
                                "", error))
        << error.message;
    ASSERT_TRUE(queue->read(*bufferC, 0, c.data(), kCount * 4, error));
    ASSERT_TRUE(queue->finish(error)) << error.message;
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(c[i], a[i] * scale + b[i]) << "element " << i;
    // Dispatches with the wrong bindings or no workgroups are refused.
    EXPECT_FALSE(queue->dispatch(*executable, 0, groups, {bufferA.get()}, "",
                                 error));
    EXPECT_NE(error.message.find("takes 4 buffers"), std::string::npos)
        << error.message;
    uint32_t none[3] = {0, 1, 1};
    EXPECT_FALSE(queue->dispatch(*executable, 0, none,
                                 {bufferA.get(), bufferB.get(), bufferC.get(),
                                  bufferScale.get()},
                                 "", error));
    EXPECT_FALSE(device.loadExecutable(hetrt::hal::ExecutableFormat::SpirV,
                                        "not spir-v", {{"axpy", 4, 0}}, error));
    EXPECT_NE(error.message.find("not a SPIR-V module"), std::string::npos)
        << error.message;
    EXPECT_FALSE(device.loadExecutable(hetrt::hal::ExecutableFormat::SpirV,
                                        compiled.binary, {{"missing", 4, 0}},
                                        error));
  });
}

} // namespace
