// het-page-kv-cache: the model's KV caches as pools of blocks found through a
// block table (see Passes.td).
#include "passes/het/Passes.h"

#include "abi/CodeRecord.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMOps.h"
#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <limits>

namespace hetc::het {
#define GEN_PASS_DEF_HETPAGEKVCACHEPASS
#include "passes/het/Passes.h.inc"
} // namespace hetc::het

using namespace mlir;
namespace llm = hetc::llm;

namespace {

bool isCache(Type type) { return isa<llm::KVCacheType>(type); }

struct PageKVCachePass
    : hetc::het::impl::HetPageKVCachePassBase<PageKVCachePass> {
  using HetPageKVCachePassBase::HetPageKVCachePassBase;

  void runOnOperation() override {
    if (blockSize <= 0) {
      getOperation().emitError()
          << "het-page-kv-cache: block-size must be positive, not "
          << static_cast<int64_t>(blockSize);
      return signalPassFailure();
    }
    if (poolBlocks < 0) {
      getOperation().emitError()
          << "het-page-kv-cache: pool-blocks must be 0 (the cache's "
             "capacity) or positive, not "
          << static_cast<int64_t>(poolBlocks);
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && llvm::any_of(func.getArgumentTypes(), isCache))
        if (failed(page(func)))
          return signalPassFailure();
    for (auto tiers : getOperation().getOps<hetc::het::KVTiersOp>())
      pageTiers(tiers);
  }

  /// Blocks of the pool a cache of `capacity` positions is paged into.
  int64_t poolBlocksFor(int64_t capacity) const {
    return poolBlocks > 0 ? poolBlocks : llvm::divideCeil(capacity, blockSize);
  }

  /// A plan's het.kv_tiers declare the caches the functions now page: the
  /// paged type, in blocks of the pages' size. The first tier (where the
  /// code reads the cache) holds the pool; a later tier holds at least the
  /// positions it held.
  void pageTiers(hetc::het::KVTiersOp tiers) {
    MLIRContext *ctx = &getContext();
    auto cache = cast<llm::KVCacheType>(tiers.getCacheType());
    int64_t pool = poolBlocksFor(cache.getCapacity());
    int64_t oldTokens = tiers.getBlockTokens();
    SmallVector<Attribute> paged;
    for (auto [index, attribute] : llvm::enumerate(tiers.getTiers())) {
      auto tier = cast<hetc::het::KVTierAttr>(attribute);
      int64_t blocks =
          index == 0 ? pool
                     : llvm::divideCeil(tier.getBlocks() * oldTokens, blockSize);
      paged.push_back(hetc::het::KVTierAttr::get(ctx, tier.getKind(),
                                                 tier.getOwner(), blocks));
    }
    tiers.setCacheType(llm::KVCacheType::get(
        ctx, pool * blockSize, cache.getKvHeads(), cache.getHeadDim(),
        cache.getElementType()));
    tiers.setBlockTokens(blockSize);
    tiers.setTiersAttr(ArrayAttr::get(ctx, paged));
  }

  LogicalResult page(func::FuncOp func) {
    MLIRContext *ctx = &getContext();
    if (func->hasAttr(hetrt::format::kKvBlockSizeAttrName))
      return func.emitOpError() << "already pages its KV caches";
    auto firstCache = llvm::find_if(func.getArgumentTypes(), isCache);
    unsigned tableIndex = static_cast<unsigned>(
        std::distance(func.getArgumentTypes().begin(), firstCache));
    auto cacheType = cast<llm::KVCacheType>(*firstCache);
    int64_t blocks = poolBlocksFor(cacheType.getCapacity());
    // Slots are 32-bit block ids times the block size, as positions are.
    constexpr int64_t maxSlots = std::numeric_limits<int32_t>::max();
    if (blocks > maxSlots / blockSize)
      return func.emitOpError()
             << "would page its caches into " << blocks << " blocks of "
             << static_cast<int64_t>(blockSize) << " slots, past the " << maxSlots
             << " slots hetc addresses; give fewer pool-blocks";
    int64_t slots = blocks * blockSize;

    // Every cache value, argument or result, becomes a pool of `slots`.
    auto paged = [&](Type type) -> Type {
      auto cache = dyn_cast<llm::KVCacheType>(type);
      if (!cache)
        return type;
      return llm::KVCacheType::get(ctx, slots, cache.getKvHeads(),
                                   cache.getHeadDim(), cache.getElementType());
    };
    for (BlockArgument argument : func.getArguments())
      argument.setType(paged(argument.getType()));
    WalkResult walked = func.walk([&](Operation *op) {
      if (auto call = dyn_cast<CallOpInterface>(op))
        if (llvm::any_of(op->getOperandTypes(), isCache)) {
          op->emitOpError() << "passes a KV cache to another function; "
                               "het-page-kv-cache pages entry points that "
                               "use their caches themselves";
          return WalkResult::interrupt();
        }
      for (Value result : op->getResults())
        result.setType(paged(result.getType()));
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return failure();

    // One table for the function's tokens, or a row per token where each
    // token is a sequence of its own.
    bool perToken = func->hasAttr(llm::kSequencePerTokenAttrName);
    SmallVector<int64_t, 2> tableShape(perToken ? 2 : 1, ShapedType::kDynamic);
    auto tableType =
        RankedTensorType::get(tableShape, IntegerType::get(ctx, 32));
    if (failed(func.insertArgument(
            tableIndex, tableType,
            DictionaryAttr::get(
                ctx, {NamedAttribute(
                         StringAttr::get(
                             ctx, hetrt::format::kKvBlockTableAttrName),
                         UnitAttr::get(ctx))}),
            func.getLoc())))
      return failure();
    Value table = func.getArgument(tableIndex);
    SmallVector<Type> results = llvm::map_to_vector(func.getResultTypes(), paged);
    // The arguments' types as the body now has them (the caches paged).
    func.setType(FunctionType::get(
        ctx, func.getBody().front().getArgumentTypes(), results));

    auto size = IntegerAttr::get(IntegerType::get(ctx, 64), blockSize);
    func->setAttr(hetrt::format::kKvBlockSizeAttrName, size);
    func.walk([&](Operation *op) {
      if (auto append = dyn_cast<llm::KVAppendOp>(op)) {
        append.getBlocksMutable().assign(table);
        append.setBlockSizeAttr(size);
      } else if (auto attention = dyn_cast<llm::AttentionOp>(op)) {
        attention.getBlocksMutable().assign(table);
        attention.setBlockSizeAttr(size);
      }
    });
    return success();
  }
};

} // namespace
