// The back-end seam: targets are found by device, each builds its pipeline
// from the device's attributes, and a device no target serves is an error
// that names the targets there are.
#include "hetc/InitAll.h"
#include "hetc/Target/SPIRV.h"
#include "hetc/Target/Target.h"
#include "hetc/Target/X86.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using namespace hetc;

class TargetRegistry : public ::testing::Test {
protected:
  TargetRegistry() {
    registerAllDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  het::DeviceAttr device(het::DeviceKind kind, llvm::StringRef arch) {
    return het::DeviceAttr::get(context.get(), "dev0", kind, arch, 0);
  }

  /// The textual pipeline `target` builds for `dev` up to LLVM.
  std::string pipelineText(const target::Target &target, het::DeviceAttr dev) {
    mlir::OpPassManager pm(mlir::ModuleOp::getOperationName());
    std::string error;
    EXPECT_TRUE(target.buildPipeline(pm, dev, pipeline::Phase::LLVM, error))
        << error;
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    return text;
  }

  mlir::DialectRegistry registry;
  std::unique_ptr<mlir::MLIRContext> context;
};

TEST_F(TargetRegistry, FindsTheTargetOfEachDeviceKind) {
  std::string error;
  const target::Target *cpu =
      target::findTarget(device(het::DeviceKind::cpu, "x86-64-v3"), error);
  ASSERT_TRUE(cpu) << error;
  EXPECT_EQ(cpu->name(), "x86");
  const target::Target *named =
      target::findTarget(device(het::DeviceKind::cpu, "sapphirerapids"), error);
  ASSERT_TRUE(named) << error;
  EXPECT_EQ(named->name(), "x86");
  const target::Target *spirv =
      target::findTarget(device(het::DeviceKind::spirv, "vulkan1.2"), error);
  ASSERT_TRUE(spirv) << error;
  EXPECT_EQ(spirv->name(), "spirv");
  for (llvm::StringRef chip : {"sm_80", "sm_89", "sm_90", "sm_100"}) {
    const target::Target *nvidia =
        target::findTarget(device(het::DeviceKind::cuda, chip), error);
    ASSERT_TRUE(nvidia) << chip.str() << ": " << error;
    EXPECT_EQ(nvidia->name(), "nvptx");
  }
  for (llvm::StringRef chip : {"gfx90a", "gfx942"}) {
    const target::Target *amd =
        target::findTarget(device(het::DeviceKind::hip, chip), error);
    ASSERT_TRUE(amd) << chip.str() << ": " << error;
    EXPECT_EQ(amd->name(), "amdgpu");
  }
  ASSERT_EQ(target::registeredTargets().size(), 4u);
}

TEST_F(TargetRegistry, ADeviceNoTargetServesNamesTheTargets) {
  std::string error;
  EXPECT_FALSE(target::findTarget(device(het::DeviceKind::cuda, "sm_75"), error));
  EXPECT_NE(error.find("no target generates code for device \"dev0\" (kind "
                       "cuda, arch \"sm_75\")"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("nvptx (kind cuda: NVIDIA GPUs, sm_80 and later)"),
            std::string::npos)
      << error;
  // An RDNA GPU (wavefronts of 32) is not a chip the AMDGPU target builds.
  EXPECT_FALSE(target::findTarget(device(het::DeviceKind::hip, "gfx1100"), error));
  EXPECT_NE(error.find("amdgpu (kind hip: AMD Instinct gfx90a and gfx942)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("x86 (kind cpu"), std::string::npos) << error;
  EXPECT_NE(error.find("spirv (kind spirv"), std::string::npos) << error;
  // A CPU LLVM does not know is not an x86 device.
  EXPECT_FALSE(
      target::findTarget(device(het::DeviceKind::cpu, "neoverse-v2"), error));
}

TEST_F(TargetRegistry, TheX86PipelineTakesTheDevicesVectorWidth) {
  const target::Target &x86 = target::x86::x86Target();
  EXPECT_NE(pipelineText(x86, device(het::DeviceKind::cpu, "x86-64-v4"))
                .find("hetc-x86-block-matmuls{amx-tiles=false float-weights-bf16=false int8-dot=false vector-bits=512}"),
            std::string::npos);
  EXPECT_NE(pipelineText(x86, device(het::DeviceKind::cpu, "haswell"))
                .find("hetc-x86-block-matmuls{amx-tiles=false float-weights-bf16=false int8-dot=false vector-bits=256}"),
            std::string::npos);
  EXPECT_NE(pipelineText(x86, device(het::DeviceKind::cpu, "x86-64-v2"))
                .find("hetc-x86-block-matmuls{amx-tiles=false float-weights-bf16=false int8-dot=false vector-bits=128}"),
            std::string::npos);
  // CPUs with AVX-512 VNNI multiply quantized weights with int8 dot products.
  EXPECT_NE(pipelineText(x86, device(het::DeviceKind::cpu, "znver4"))
                .find("hetc-x86-block-matmuls{amx-tiles=false float-weights-bf16=false int8-dot=true vector-bits=512}"),
            std::string::npos);
  EXPECT_EQ(target::x86::vectorBitsOf("znver4"), 512);
  EXPECT_EQ(target::x86::vectorBitsOf("not-a-cpu"), std::nullopt);
  EXPECT_TRUE(target::x86::hasInt8DotOf("sapphirerapids"));
  EXPECT_FALSE(target::x86::hasInt8DotOf("skylake-avx512"));
  EXPECT_FALSE(target::x86::hasInt8DotOf("not-a-cpu"));
}

// "all" builds every variant a host might run, best first (AMX tiles, then
// AVX-512 VNNI); the emulated AMX variant, a check and never a host's best
// choice, only when named.
TEST(CpuVariants, AllIsBestFirstAndTheEmulatedVariantOnlyByName) {
  using target::x86::AmxTiles;
  using target::x86::CpuVariant;
  std::vector<CpuVariant> all;
  std::string error;
  ASSERT_TRUE(target::x86::selectVariants({"all"}, all, error)) << error;
  std::vector<std::string> names;
  for (const CpuVariant &variant : all)
    names.push_back(variant.name);
  EXPECT_EQ(names, (std::vector<std::string>{"avx512-amx", "avx512-vnni",
                                             "x86-64-v4", "x86-64-v3",
                                             "x86-64-v2"}));
  EXPECT_EQ(all[0].amxTiles, AmxTiles::Hardware);
  EXPECT_TRUE(all[0].int8Dot);
  // f32 and f16 weights keep their precision unless a variant that rounds
  // them is named.
  EXPECT_FALSE(all[0].floatWeightsBf16);
  for (const char *feature :
       {"amx-tile", "amx-int8", "amx-bf16", "avx512vnni"})
    EXPECT_NE(std::find(all[0].requiredFeatures.begin(),
                        all[0].requiredFeatures.end(), feature),
              all[0].requiredFeatures.end())
        << feature;

  std::vector<CpuVariant> host;
  ASSERT_TRUE(target::x86::selectVariants({"host"}, host, error)) << error;
  ASSERT_EQ(host.size(), 1u);
  EXPECT_NE(host[0].name, "avx512-amx-emulated");

  std::vector<CpuVariant> emulated;
  ASSERT_TRUE(target::x86::selectVariants({"avx512-amx-emulated"}, emulated,
                                          error))
      << error;
  ASSERT_EQ(emulated.size(), 1u);
  EXPECT_EQ(emulated[0].amxTiles, AmxTiles::Emulated);
  // It checks every tile kernel, the bf16 ones of f32 and f16 weights too.
  EXPECT_TRUE(emulated[0].floatWeightsBf16);
  // It runs wherever avx512-vnni does: no AMX feature is required.
  for (const std::string &feature : emulated[0].requiredFeatures)
    EXPECT_EQ(feature.rfind("amx", 0), std::string::npos) << feature;

  std::vector<CpuVariant> rounded;
  ASSERT_TRUE(
      target::x86::selectVariants({"avx512-amx-bf16"}, rounded, error))
      << error;
  ASSERT_EQ(rounded.size(), 1u);
  EXPECT_TRUE(rounded[0].onlyByName);
  EXPECT_TRUE(rounded[0].floatWeightsBf16);
  EXPECT_EQ(rounded[0].amxTiles, AmxTiles::Hardware);

  std::vector<CpuVariant> none;
  EXPECT_FALSE(target::x86::selectVariants({"amx"}, none, error));
  EXPECT_NE(error.find("avx512-amx-emulated"), std::string::npos) << error;
}

TEST_F(TargetRegistry, TheHostIsACpuDeviceTheX86TargetServes) {
  het::DeviceAttr host = target::x86::hostDevice(context.get());
  EXPECT_EQ(host.getKind(), het::DeviceKind::cpu);
  EXPECT_TRUE(target::x86::x86Target().supports(host)) << host.getArch().str();
}

TEST_F(TargetRegistry, SpirvCompilesKernelsAndRefusesLlmModules) {
  const target::Target &spirv = target::spirv::spirvTarget();
  het::DeviceAttr vulkan = device(het::DeviceKind::spirv, "vulkan1.2");
  mlir::OwningOpRef<mlir::ModuleOp> kernels =
      mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<256xf32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [32, 1, 1]>} {
      %i = gpu.global_id x
      %x = memref.load %a[%i] : memref<256xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %a[%i] : memref<256xf32>
      gpu.return
    }
  }
}
)mlir",
                                              context.get());
  ASSERT_TRUE(kernels);
  std::vector<target::Executable> executables;
  std::string error;
  ASSERT_TRUE(spirv.compile(*kernels, vulkan, {}, executables, error)) << error;
  ASSERT_EQ(executables.size(), 1u);
  EXPECT_EQ(executables[0].format, "spirv");
  EXPECT_EQ(executables[0].variant, "vulkan1.2");
  ASSERT_EQ(executables[0].kernels.size(), 1u);
  EXPECT_EQ(executables[0].kernels[0].entryPoint, "scale");
  EXPECT_EQ(executables[0].kernels[0].bindings, 1);
  EXPECT_EQ(executables[0].kernels[0].workgroupSize[0], 32);
  // SPIR-V's magic number opens the code.
  ASSERT_GE(executables[0].code.size(), 4u);
  uint32_t magic;
  std::memcpy(&magic, executables[0].code.data(), 4);
  EXPECT_EQ(magic, 0x07230203u);

  mlir::OwningOpRef<mlir::ModuleOp> model =
      mlir::parseSourceString<mlir::ModuleOp>(
          "llm.weight @w {data_offset = 0 : i64} : tensor<4x4xf32>",
          context.get());
  ASSERT_TRUE(model);
  executables.clear();
  EXPECT_FALSE(spirv.compile(*model, vulkan, {}, executables, error));
  EXPECT_NE(error.find("the spirv target compiles gpu kernels (hetc-opt "
                       "--hetc-lower-gpu-to-spirv), not llm modules: device"),
            std::string::npos)
      << error;
  mlir::OpPassManager pm(mlir::ModuleOp::getOperationName());
  EXPECT_FALSE(spirv.buildPipeline(pm, vulkan, pipeline::Phase::Linalg, error));
}

} // namespace
