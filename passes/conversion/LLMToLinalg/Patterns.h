// Patterns and shared helpers of convert-llm-to-linalg, by op family.
#ifndef HETC_PASSES_CONVERSION_LLMTOLINALG_PATTERNS_H
#define HETC_PASSES_CONVERSION_LLMTOLINALG_PATTERNS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>

namespace hetc::conversion {

/// Converts llm types to upstream ones: a block-quantized tensor to its byte
/// rows (`tensor<... x rowBytes x i8>`), a KV cache to
/// `tensor<2 x capacity x kvHeads x headDim x T>`; everything else unchanged.
class LLMToLinalgTypeConverter : public mlir::TypeConverter {
public:
  LLMToLinalgTypeConverter();
};

/// Embedding, matmul, logits, get_weight.
void populateLLMToLinalgMatmulPatterns(const mlir::TypeConverter &converter,
                                       mlir::RewritePatternSet &patterns);
/// RoPE, KV append, attention.
void populateLLMToLinalgAttentionPatterns(const mlir::TypeConverter &converter,
                                          mlir::RewritePatternSet &patterns);
/// Norms, activations, adds, scale, softmax.
void populateLLMToLinalgElementwisePatterns(
    const mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);

/// The argument of the enclosing function that holds the mapped weight data.
inline constexpr llvm::StringLiteral kWeightsArgAttrName = "llm.weights";

//===----------------------------------------------------------------------===//
// Helpers shared by the pattern files.
//===----------------------------------------------------------------------===//

/// Sizes of `tensor` as OpFoldResults (dynamic ones via tensor.dim).
llvm::SmallVector<mlir::OpFoldResult>
getMixedSizes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor);

/// A tensor of `sizes` filled with `value` (a float of `elementType`).
mlir::Value createFilled(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::ArrayRef<mlir::OpFoldResult> sizes,
                         mlir::Type elementType, double value);

/// An f32 constant.
mlir::Value f32Constant(mlir::OpBuilder &b, mlir::Location loc, double value);
/// An index constant.
mlir::Value indexConstant(mlir::OpBuilder &b, mlir::Location loc,
                          int64_t value);

/// Element `[row, column]` of a weight matrix as f32: `weight` is the converted
/// tensor (floats, or byte rows for a block format) and `storageType` the
/// original llm element type that says how to decode it. `row` and `column`
/// are index values; for 3-D expert weights pass `expert` too.
mlir::Value loadWeightElement(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::Type storageType, mlir::Value weight,
                              mlir::ValueRange outerIndices, mlir::Value column);

/// Fast-math flags for dot-product accumulations: reassociation lets the
/// reduction be vectorized and split, contraction fuses multiply-adds. The
/// result differs from strict order only by rounding (well within the 1e-4
/// relative agreement the reference checks demand).
mlir::arith::FastMathFlagsAttr accumulationFastMath(mlir::OpBuilder &b);

/// `accumulator + lhs · rhs` with accumulationFastMath; `rhs` is widened to
/// f32 first when stored narrower (f16/bf16 weights or caches).
mlir::Value multiplyAccumulate(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value lhs, mlir::Value rhs,
                               mlir::Value accumulator);

/// Identity and projected affine maps over `rank` loops.
mlir::AffineMap identityMap(mlir::MLIRContext *ctx, unsigned rank);

/// What an llm.attention asks of its scores besides the products.
struct TiledAttentionParams {
  double scale;
  bool causal;
  std::optional<double> softcap;
  std::optional<int64_t> window;
  /// A paged cache's block table (1-D integers, or 2-D with a row per
  /// token) and slots per block; null for a cache whose slot is the
  /// position.
  mlir::Value blocks = nullptr;
  int64_t blockSize = 0;
};

/// Keys per step of the tiled attention's recurrence.
inline constexpr int64_t kAttentionKeyTile = 64;

/// The keys a step of the recurrence takes from a cache paged in blocks of
/// `blockSize` slots (0: not paged): a step never crosses a block, so its
/// keys are contiguous. 0 when no such tile exists (a block size neither a
/// multiple nor a divisor of kAttentionKeyTile).
inline int64_t attentionKeyTile(int64_t blockSize) {
  if (blockSize == 0 || blockSize % kAttentionKeyTile == 0)
    return kAttentionKeyTile;
  return kAttentionKeyTile % blockSize == 0 ? blockSize : 0;
}

/// The cache slot of `position` (an index): itself, or through a paged
/// cache's block table `blocks` in blocks of `blockSize`: a 1-D table the
/// tokens share, or a 2-D one with a row per token (`token`'s is read).
mlir::Value cacheSlot(mlir::OpBuilder &b, mlir::Location loc,
                      mlir::Value position, mlir::Value blocks,
                      int64_t blockSize, mlir::Value token = nullptr);

/// Attention of `query` ([tokens, heads, headDim], f32) at `positions` over
/// the converted `cache` ([2, kvHeads, capacity, headDim]) up to the largest
/// position, as tiles of queries walking blocks of keys with an online
/// softmax (see TiledAttention.cpp); a paged cache's keys are found through
/// its block table.
mlir::Value buildTiledAttention(mlir::OpBuilder &b, mlir::Location loc,
                                const TiledAttentionParams &params,
                                mlir::Value query, mlir::Value cache,
                                mlir::Value positions);

} // namespace hetc::conversion

#endif // HETC_PASSES_CONVERSION_LLMTOLINALG_PATTERNS_H
