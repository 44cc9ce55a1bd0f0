// Registration of every pass and pipeline hetc's tools expose.
#include "hetc/InitAll.h"

#include "hetc/Target/X86.h"
#include "hetc/Target/AMDGPU.h"
#include "hetc/Target/NVPTX.h"
#include "hetc/Target/SPIRV.h"
#include "passes/conversion/Passes.h"
#include "passes/het/Passes.h"
#include "passes/target/gpu/Passes.h"
#include "passes/target/spirv/Passes.h"
#include "passes/target/x86/Passes.h"

#include "mlir/InitAllPasses.h"

namespace hetc {

void registerAllPasses() {
  // The registries are global and reject duplicates, and both tools may call
  // this from several places.
  static const bool registered = [] {
    mlir::registerAllPasses();
    het::registerHetPasses();
    conversion::registerConversionPasses();
    x86::registerX86Passes();
    gpu::registerGpuPasses();
    spirv::registerSpirvPasses();
    target::x86::registerCpuPipeline();
    target::spirv::registerSpirvPipeline();
    target::nvptx::registerNvvmPipeline();
    target::amdgpu::registerRocdlPipeline();
    return true;
  }();
  (void)registered;
}

} // namespace hetc
