// The SPIR-V target pass group: declarations and registration (from
// Passes.td).
#ifndef HETC_PASSES_TARGET_SPIRV_PASSES_H
#define HETC_PASSES_TARGET_SPIRV_PASSES_H

#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVDialect.h"
#include "mlir/Pass/Pass.h"

namespace hetc::spirv {

/// The Vulkan 1.2 environment hetc compiles for when a module names none:
/// SPIR-V 1.3 with Shader and the storage-buffer storage class (SPIR-V 1.4
/// changes which variables an entry point lists, and MLIR deduces the
/// version to declare from the capabilities alone). Narrower integer and
/// float storage is emulated with 32-bit words in this environment.
mlir::spirv::TargetEnvAttr defaultVulkanTargetEnv(mlir::MLIRContext *context);

#define GEN_PASS_DECL
#include "passes/target/spirv/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/target/spirv/Passes.h.inc"

} // namespace hetc::spirv

#endif // HETC_PASSES_TARGET_SPIRV_PASSES_H
