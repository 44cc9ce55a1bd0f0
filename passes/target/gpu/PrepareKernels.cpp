// hetc-gpu-prepare-kernels: the kernel library made ready for the LLVM GPU
// targets (see Passes.td).
#include "passes/target/gpu/Passes.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hetc::gpu {
#define GEN_PASS_DEF_HETCGPUPREPAREKERNELSPASS
#include "passes/target/gpu/Passes.h.inc"
} // namespace hetc::gpu

using namespace mlir;

namespace {

/// The kernel's workgroup size: its known block size, else its SPIR-V entry
/// point's, else none.
std::optional<std::array<int64_t, 3>> workgroupSize(gpu::GPUFuncOp kernel) {
  std::array<int64_t, 3> size = {1, 1, 1};
  if (std::optional<ArrayRef<int32_t>> known = kernel.getKnownBlockSize()) {
    for (size_t d = 0; d < 3 && d < known->size(); ++d)
      size[d] = (*known)[d];
    return size;
  }
  if (spirv::EntryPointABIAttr abi = spirv::lookupEntryPointABI(kernel)) {
    if (DenseI32ArrayAttr values = abi.getWorkgroupSize()) {
      for (size_t d = 0; d < 3 && d < values.asArrayRef().size(); ++d)
        size[d] = values.asArrayRef()[d];
      return size;
    }
  }
  return std::nullopt;
}

/// The thread's index within its workgroup, x fastest.
Value linearThreadId(OpBuilder &builder, Location loc) {
  Value x = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::x);
  Value y = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::y);
  Value z = gpu::ThreadIdOp::create(builder, loc, gpu::Dimension::z);
  Value sizeX = gpu::BlockDimOp::create(builder, loc, gpu::Dimension::x);
  Value sizeY = gpu::BlockDimOp::create(builder, loc, gpu::Dimension::y);
  Value zy = arith::AddIOp::create(builder, loc, arith::MulIOp::create(builder, loc, z, sizeY), y);
  return arith::AddIOp::create(builder, loc, arith::MulIOp::create(builder, loc, zy, sizeX), x);
}

/// Threads in the workgroup: a constant where the kernel's size is known.
Value workgroupThreads(OpBuilder &builder, Location loc,
                       std::optional<std::array<int64_t, 3>> known) {
  if (known)
    return arith::ConstantIndexOp::create(builder, loc, (*known)[0] * (*known)[1] * (*known)[2]);
  Value x = gpu::BlockDimOp::create(builder, loc, gpu::Dimension::x);
  Value y = gpu::BlockDimOp::create(builder, loc, gpu::Dimension::y);
  Value z = gpu::BlockDimOp::create(builder, loc, gpu::Dimension::z);
  return arith::MulIOp::create(builder, loc, arith::MulIOp::create(builder, loc, x, y), z);
}

/// Workgroup memory as the library writes it (memory space 3, which SPIR-V's
/// storage-class mapping reads as Workgroup) or as the gpu dialect does.
bool inWorkgroupMemory(MemRefType type) {
  if (auto space = dyn_cast_or_null<IntegerAttr>(type.getMemorySpace()))
    return space.getInt() == 3;
  return gpu::GPUDialect::hasWorkgroupMemoryAddressSpace(type);
}

/// Bytes every workgroup buffer is aligned to.
constexpr int64_t kWorkgroupAlignment = 16;

/// Moves the kernel's statically shaped workgroup allocations into
/// workgroup attributions.
LogicalResult promoteWorkgroupAllocations(gpu::GPUFuncOp kernel) {
  SmallVector<memref::AllocOp> allocations;
  kernel.walk([&](memref::AllocOp allocation) {
    if (inWorkgroupMemory(allocation.getType()))
      allocations.push_back(allocation);
  });
  for (memref::AllocOp allocation : allocations) {
    // A buffer only a helper's portable form used (the native form inlined
    // in its place needs none) takes no workgroup memory.
    if (allocation->use_empty()) {
      allocation.erase();
      continue;
    }
    MemRefType type = allocation.getType();
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return allocation.emitError()
             << "workgroup memory must have a static shape and the identity "
                "layout to become a workgroup attribution; got "
             << type;
    BlockArgument buffer =
        kernel.addWorkgroupAttribution(type, allocation.getLoc());
    // 16-byte alignment, so 128-bit accesses (vectorized stores, ldmatrix)
    // are legal wherever the offsets are multiples of 16 bytes.
    kernel.setWorkgroupAttributionAttr(
        kernel.getNumWorkgroupAttributions() - 1,
        LLVM::LLVMDialect::getAlignAttrName(),
        IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                         kWorkgroupAlignment));
    for (Operation *user :
         llvm::make_early_inc_range(allocation->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    allocation.replaceAllUsesWith(buffer);
    allocation.erase();
  }
  return success();
}

/// Computes the subgroup ids and counts a kernel reads from its thread id
/// and workgroup size, for targets that have no such registers.
void lowerSubgroupIds(gpu::GPUFuncOp kernel, unsigned subgroupSize) {
  std::optional<std::array<int64_t, 3>> known = workgroupSize(kernel);
  SmallVector<Operation *> ops;
  kernel.walk([&](Operation *op) {
    if (isa<gpu::SubgroupIdOp, gpu::NumSubgroupsOp, gpu::SubgroupSizeOp>(op))
      ops.push_back(op);
  });
  OpBuilder builder(kernel.getContext());
  for (Operation *op : ops) {
    builder.setInsertionPoint(op);
    Location loc = op->getLoc();
    Value lanes = arith::ConstantIndexOp::create(builder, loc, subgroupSize);
    Value replacement;
    if (isa<gpu::SubgroupSizeOp>(op)) {
      replacement = lanes;
    } else if (isa<gpu::SubgroupIdOp>(op)) {
      replacement = arith::DivUIOp::create(builder, loc, linearThreadId(builder, loc), lanes);
    } else {
      Value threads = workgroupThreads(builder, loc, known);
      replacement = arith::CeilDivUIOp::create(builder, loc, threads, lanes);
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
}

struct PrepareKernelsPass
    : hetc::gpu::impl::HetcGpuPrepareKernelsPassBase<PrepareKernelsPass> {
  using HetcGpuPrepareKernelsPassBase::HetcGpuPrepareKernelsPassBase;

  void runOnOperation() override {
    unsigned lanes = subgroupSize;
    if (lanes == 0 || (lanes & (lanes - 1)) != 0) {
      getOperation().emitError()
          << "subgroup-size=" << lanes
          << " is not a power of two; NVIDIA warps have 32 lanes, AMD "
             "wavefronts 32 or 64";
      return signalPassFailure();
    }
    SmallVector<gpu::GPUModuleOp> modules;
    getOperation().walk([&](gpu::GPUModuleOp kernels) {
      modules.push_back(kernels);
    });
    for (gpu::GPUModuleOp kernels : modules) {
      if (failed(hetc::gpu::inlineKernelHelpers(kernels)))
        return signalPassFailure();
      for (auto kernel : kernels.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel())
          continue;
        if (std::optional<std::array<int64_t, 3>> size =
                workgroupSize(kernel)) {
          SmallVector<int32_t, 3> block((*size).begin(), (*size).end());
          kernel.setKnownBlockSizeAttr(
              DenseI32ArrayAttr::get(kernel.getContext(), block));
        }
        if (failed(promoteWorkgroupAllocations(kernel)))
          return signalPassFailure();
        lowerSubgroupIds(kernel, lanes);
      }
      RewritePatternSet patterns(&getContext());
      populateGpuLowerSubgroupReduceToShufflePatterns(patterns, lanes);
      populateGpuLowerClusteredSubgroupReduceToShufflePatterns(patterns, lanes);
      if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
        return signalPassFailure();
    }
  }
};

} // namespace
