// hetc-spirv-convert-kernels: gpu.module kernels → spirv.module, with the
// math dialect (see Passes.td).
#include "passes/target/spirv/Passes.h"

#include "mlir/Conversion/ArithToSPIRV/ArithToSPIRV.h"
#include "mlir/Conversion/FuncToSPIRV/FuncToSPIRV.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRV.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRV.h"
#include "mlir/Conversion/MemRefToSPIRV/MemRefToSPIRV.h"
#include "mlir/Conversion/SCFToSPIRV/SCFToSPIRV.h"
#include "mlir/Conversion/VectorToSPIRV/VectorToSPIRV.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/SPIRVConversion.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/Inliner.h"
#include "mlir/Transforms/InliningUtils.h"

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

/// Upstream's inliner, except that calls at a gpu.func's top level inline
/// too (the gpu dialect admits its ops into inlined code, but no region of
/// a gpu.func as a destination).
struct KernelInliner : InlinerInterface {
  using InlinerInterface::InlinerInterface;
  bool isLegalToInline(Region *dest, Region *src, bool wouldBeCloned,
                       IRMapping &mapping) const override {
    return isa<gpu::GPUFuncOp>(dest->getParentOp()) ||
           InlinerInterface::isLegalToInline(dest, src, wouldBeCloned, mapping);
  }
};

/// Inlines every call of a helper function in `kernels` and erases the
/// helpers: a kernel becomes one SPIR-V function, so a buffer is never an
/// argument (which would need the VariablePointers capability) and the
/// entry point lists every builtin its reductions read (an interface in
/// SPIR-V before 1.4 lists what the entry function itself reads, not its
/// callees). Recursion is an error.
LogicalResult inlineHelpers(Operation *kernels) {
  KernelInliner inliner(kernels->getContext());
  InlinerConfig config;
  SymbolTable symbols(kernels);
  for (int round = 0;; ++round) {
    // Calls in the kernels only: inlining a helper into itself would grow
    // without bound.
    SmallVector<func::CallOp> calls;
    kernels->walk([&](gpu::GPUFuncOp kernel) {
      kernel.walk([&](func::CallOp call) { calls.push_back(call); });
    });
    if (calls.empty())
      break;
    if (round == 16)
      return calls.front().emitError()
             << "@" << calls.front().getCallee()
             << " still calls helpers after 16 rounds of inlining; the SPIR-V "
                "target needs helpers that do not recurse";
    for (func::CallOp call : calls) {
      auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return call.emitError() << "@" << call.getCallee()
                                << " has no body in the gpu.module to inline";
      if (failed(inlineCall(inliner, config.getCloneCallback(), call, callee,
                            &callee.getBody())))
        return call.emitError() << "@" << call.getCallee()
                                << " cannot be inlined into its kernel";
      call.erase();
    }
  }
  for (auto helper :
       llvm::make_early_inc_range(kernels->getRegion(0).getOps<func::FuncOp>()))
    helper.erase();
  return success();
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
      if (failed(inlineHelpers(kernels)))
        return signalPassFailure();
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
