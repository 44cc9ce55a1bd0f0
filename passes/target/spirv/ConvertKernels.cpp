// hetc-spirv-convert-kernels: gpu.module kernels → spirv.module, with the
// math dialect (see Passes.td).
#include "passes/target/spirv/Passes.h"
#include "passes/target/gpu/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace hetc::spirv {
#define GEN_PASS_DEF_HETCSPIRVCONVERTKERNELSPASS
#include "passes/target/spirv/Passes.h.inc"
} // namespace hetc::spirv

using namespace mlir;

mlir::spirv::TargetEnvAttr
hetc::spirv::defaultVulkanTargetEnv(MLIRContext *context) {
  auto triple = mlir::spirv::VerCapExtAttr::get(
      mlir::spirv::Version::V_1_3, {mlir::spirv::Capability::Shader},
      {mlir::spirv::Extension::SPV_KHR_storage_buffer_storage_class}, context);
  return mlir::spirv::TargetEnvAttr::get(
      triple, mlir::spirv::getDefaultResourceLimits(context),
      mlir::spirv::ClientAPI::Vulkan, mlir::spirv::Vendor::Unknown,
      mlir::spirv::DeviceType::Unknown,
      mlir::spirv::TargetEnvAttr::kUnknownDeviceID);
}

namespace {

/// Upstream's scf.for → SPIR-V conversion keeps a loop's results in function
/// variables that only the loop body stores: a loop that runs no iteration
/// leaves them undefined instead of holding the initial values (a thread
/// whose strided range is empty). Each loop with results is put under an
/// scf.if that yields the initial values when the range is empty.
void guardEmptyLoops(Operation *kernels) {
  SmallVector<scf::ForOp> loops;
  kernels->walk([&](scf::ForOp loop) {
    if (loop.getNumResults() > 0)
      loops.push_back(loop);
  });
  for (scf::ForOp loop : loops) {
    OpBuilder builder(loop);
    Location loc = loop.getLoc();
    Value runs = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt,
                                       loop.getLowerBound(),
                                       loop.getUpperBound());
    auto guard = scf::IfOp::create(builder, loc, loop.getResultTypes(), runs,
                                   /*withElseRegion=*/true);
    loop->replaceAllUsesWith(guard.getResults());
    loop->moveBefore(guard.thenBlock(), guard.thenBlock()->end());
    builder.setInsertionPointToEnd(guard.thenBlock());
    scf::YieldOp::create(builder, loc, loop.getResults());
    builder.setInsertionPointToEnd(guard.elseBlock());
    scf::YieldOp::create(builder, loc, loop.getInitArgs());
  }
}

struct ConvertKernelsPass
    : hetc::spirv::impl::HetcSpirvConvertKernelsPassBase<ConvertKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    // The host side keeps the gpu.module for its launches; the conversion
    // works on a clone beside it, which becomes the spirv.module.
    SmallVector<Operation *> clones;
    OpBuilder builder(context);
    module.walk([&](gpu::GPUModuleOp kernels) {
      builder.setInsertionPoint(kernels);
      clones.push_back(builder.clone(*kernels));
    });
    for (Operation *kernels : clones) {
      if (failed(hetc::gpu::inlineKernelHelpers(kernels)))
        return signalPassFailure();
      guardEmptyLoops(kernels);
      mlir::spirv::TargetEnvAttr environment =
          mlir::spirv::lookupTargetEnv(kernels);
      if (!environment) {
        environment = hetc::spirv::defaultVulkanTargetEnv(context);
        kernels->setAttr(mlir::spirv::getTargetEnvAttrName(), environment);
      }
      mlir::spirv::MemorySpaceToStorageClassConverter memorySpaces(
          mlir::spirv::mapMemorySpaceToVulkanStorageClass);
      mlir::spirv::convertMemRefTypesAndAttrs(kernels, memorySpaces);

      std::unique_ptr<ConversionTarget> target =
          SPIRVConversionTarget::get(environment);
      SPIRVConversionOptions options;
      SPIRVTypeConverter types(environment, options);
      RewritePatternSet patterns(context);
      populateGPUToSPIRVPatterns(types, patterns);
      ScfToSPIRVContext scfContext;
      populateSCFToSPIRVPatterns(types, scfContext, patterns);
      arith::populateArithToSPIRVPatterns(types, patterns);
      populateMathToSPIRVPatterns(types, patterns);
      populateMemRefToSPIRVPatterns(types, patterns);
      populateFuncToSPIRVPatterns(types, patterns);
      populateBuiltinFuncToSPIRVPatterns(types, patterns);
      populateVectorToSPIRVPatterns(types, patterns);
      if (failed(applyFullConversion(kernels, *target, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
