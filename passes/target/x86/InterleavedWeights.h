// Matmul kernels of weights stored with their rows interleaved in groups of
// 16 (abi/WeightLayout.h): each 32-bit lane of a 512-bit vector holds 4
// consecutive codes of one row, so one vpdpbusd multiplies 4 codes of all 16
// rows with 4 activation codes broadcast to every lane, and the lanes end as
// the rows' sums: no horizontal reduction, and a row's 16 results are one
// vector.
#ifndef HETC_PASSES_TARGET_X86_INTERLEAVEDWEIGHTS_H
#define HETC_PASSES_TARGET_X86_INTERLEAVEDWEIGHTS_H

#include "passes/target/x86/Int8Dot.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace hetc::x86 {

/// Whether a weight of `quant` with `outFeatures` rows can be read
/// interleaved by code with `vectorBits`-bit vectors (and int8 dot products).
bool canInterleave(hetc::llm::QuantType quant, int64_t outFeatures,
                   int64_t vectorBits, bool int8Dot);

/// Whether an f32, f16 or bf16 weight of `outFeatures` rows of `inFeatures` can be
/// read element-major in groups of 16 rows by code with `vectorBits`-bit
/// vectors.
bool canInterleaveFloat(mlir::Type storage, int64_t outFeatures,
                        int64_t inFeatures, int64_t vectorBits);

/// x · wᵀ for an f32, f16 or bf16 weight [N, K] stored element-major in groups of
/// 16 rows: blocks of 8 activation rows × 32 weight rows (f16, bf16: 4 × 64) for
/// a prompt (taken in chunks of `chunkRows` rows), one group of 16 rows
/// along 4 chains for a single row.
mlir::Value buildInterleavedFloatMatmul(mlir::OpBuilder &b, mlir::Location loc,
                                        mlir::Value x, mlir::Value weight,
                                        int64_t outFeatures,
                                        int64_t chunkRows);

/// An element-major weight [N, K] as [N/16, K, 16]: element k of a group's
/// 16 rows is one vector.
mlir::Value elementMajorView(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value weight, int64_t outFeatures,
                             int64_t inFeatures);

/// Whether a prompt's matmul of an element-major f32, f16 or bf16 weight of
/// `outFeatures` rows of `inFeatures` can take bf16 tiles.
bool canUseFloatTiles(mlir::Type storage, int64_t outFeatures,
                      int64_t inFeatures);

/// x · wᵀ for a prompt (dynamic rows of `x`, taken in chunks of `chunkRows`)
/// and an element-major f32, f16 or bf16 weight, through AMX bf16 tiles:
/// blocks of 32 activation rows × 32 weight rows, both rounded to bf16, the
/// products summed in f32 by tdpbf16ps.
mlir::Value buildFloatTileMatmul(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value x, mlir::Value weight,
                                 int64_t outFeatures, int64_t chunkRows);

struct InterleavedReader {
  /// [N/16, steps, 16 × bytes per block]: a block of a group of rows.
  mlir::Value view;
  hetc::llm::QuantType quant;
  /// Elements per step (a block) and groups of 32 per step.
  int64_t chunk;
  int64_t groups;
  /// The weight's bytes as one flat buffer, for the Q6_K prefetches; null
  /// for the other formats and for a weight that is not a static view of a
  /// buffer.
  mlir::Value flatBuffer;

  static constexpr int64_t kCacheLine = 64;
  /// How far ahead of the group being read the Q6_K kernels prefetch.
  static constexpr int64_t kPrefetchDistance = 512;

  /// Codes per activation sum the kernel reads (QuantizedActivations):
  /// Q6_K's scales cover 16 elements, the others' 32.
  int64_t blockSumElements() const;

  /// The reader of `weight` ([N, row bytes], already rewritten).
  static InterleavedReader make(mlir::OpBuilder &b, mlir::Location loc,
                                mlir::Value weight, hetc::llm::QuantType quant,
                                int64_t outFeatures, int64_t inFeatures);

  /// Prefetches group `group`'s share of the lines `kPrefetchDistance`
  /// bytes past block `step` of `rowGroup`, where `flatBuffer` is set. The
  /// Q6_K decode kernels read
  /// DRAM at 18 GB/s on their own, where the other formats reach 29
  /// (llama-1B Q4_K_M's Q6_K down projections, one thread); the prefetches
  /// take llama-1B Q4_K_M decode from 30–31 to 27 ms per token on one
  /// thread and from 21–23 to 16–18 on two. Q4_0, Q8_0 and Q4_K lose with
  /// them (llama-1B Q8_0, one thread: 40 → 47 ms).
  void prefetchAhead(mlir::OpBuilder &b, mlir::Location loc,
                     mlir::Value rowGroup, mlir::Value step,
                     int64_t group) const;

  /// Adds group `group` (32 elements) of step `step` of the 16 rows of
  /// `rowGroup`, times each of the activation rows `rows` (int8 as
  /// `activations` holds them, with block sums), into `sums` (one vector of
  /// 16 row sums per activation row).
  void accumulate(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::ModuleOp module, mlir::Value rowGroup,
                  mlir::Value step, int64_t group,
                  llvm::ArrayRef<mlir::Value> rows,
                  const QuantizedActivations &activations,
                  llvm::MutableArrayRef<mlir::Value> sums) const;

  /// Activation rows per AMX tile product.
  static constexpr int64_t kTileRows = 16;

  /// As accumulate, for the 16 activation rows `firstRow`.. (`rows`, the
  /// same indices) through AMX tiles: their codes are read as one tile from
  /// `codesBuffer` (the codes of `activations` as a buffer, rows padded to
  /// a multiple of 16), the group's decoded weight codes are the other, and
  /// tdpbsud gives all 16 × 16 integer sums at once.
  void accumulateTiles(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value rowGroup, mlir::Value step, int64_t group,
                       mlir::Value firstRow, llvm::ArrayRef<mlir::Value> rows,
                       mlir::Value codesBuffer,
                       const QuantizedActivations &activations,
                       llvm::MutableArrayRef<mlir::Value> sums) const;
};

} // namespace hetc::x86

#endif // HETC_PASSES_TARGET_X86_INTERLEAVEDWEIGHTS_H
