// Integer dot products for the x86 matmul kernels of quantized weights: the
// activation rows quantized once per matmul into int8 blocks, the weights read
// as unsigned byte codes, and vpdpbusd (AVX-512 VNNI) multiplying 4 byte
// pairs per 32-bit lane.
#ifndef HETC_PASSES_TARGET_X86_INT8DOT_H
#define HETC_PASSES_TARGET_X86_INT8DOT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace hetc::x86 {

/// Elements that share one activation scale.
constexpr int64_t kActivationBlock = 32;
/// Elements of one 32-bit lane of vpdpbusd.
constexpr int64_t kLaneElements = 4;

/// The rows of x [M, K] quantized in blocks of 32 elements: scale d =
/// max|x| / 127 (f32) and codes q = roundeven(x · (1/d)), so x ≈ d·q. Lane
/// arrays hold one value per 4 elements (one vpdpbusd lane).
struct QuantizedActivations {
  /// [M, K] i8: the codes.
  mlir::Value codes;
  /// [M, 1 or 2, K/4] f32: [., 0, .] the scale d of each lane's block;
  /// [., 1, .] (with mins) d times the sum of the lane's codes.
  mlir::Value laneFloats;
  /// [M, K/4] i32 (with offset sums): minus the sum of each lane's 4 codes,
  /// the correction of a weight code offset (shifted left by its log2).
  mlir::Value negatedLaneSums;
  /// [M, K/S] i32 (with block sums of S = 32 or 16 codes): minus the sum of
  /// each block's (or half block's) codes, the same correction for kernels
  /// that sum whole blocks in one lane.
  mlir::Value negatedBlockSums;
};

/// The rows of a copy of `x` ([M, K]) padded to a multiple of `padRowsTo`,
/// each padding row repeating the last: whatever reads a whole tile or
/// block of rows computes, for them, the last row's values (MatmulGrid
/// writes them over the last row, so they must be equal).
struct PaddedRows {
  /// The padded row count.
  mlir::OpFoldResult rows;
  /// The index of x's last row; null when `padRowsTo` is 1 (no padding).
  mlir::Value lastSourceRow;

  static PaddedRows of(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                       int64_t padRowsTo);
  /// The row of x that padded row `row` copies.
  mlir::Value sourceRow(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value row) const;
};

/// Builds the quantization of `x` ([M, K] f32, K a multiple of 32) as one
/// parallel loop over its rows, with the lane sums a weight format with a
/// code offset or with mins reads, and the sums of `blockSumElements` codes
/// (32 or 16; 0 for none) interleaved weights read. With `padRowsTo` > 1
/// the arrays have M rounded up to a multiple of it rows, the extra ones
/// copies of the last (for kernels that read whole tiles of rows).
QuantizedActivations quantizeActivations(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::Value x, bool withOffsetSums,
                                         bool withMinSums,
                                         int64_t blockSumElements = 0,
                                         int64_t padRowsTo = 1);

/// One vector of weight codes of a row and what turns their dot products
/// into values: x = laneScale·(code − offset) − laneMin.
struct Int8WeightGroup {
  /// vector<E x i8> of unsigned codes.
  mlir::Value codes;
  /// vector<E/4 x f32>: each lane's weight scale.
  mlir::Value laneScales;
  /// vector<E/4 x f32> of minus each lane's min, or null (no min).
  mlir::Value negatedLaneMins;
};

/// Reads the rows of a Q8_0, Q4_0, Q4_K or Q6_K weight as unsigned codes, a
/// vector of E = vectorBits / 8 elements at a time.
struct Int8WeightReader {
  /// [N, blocks, bytes per block].
  mlir::Value view;
  mlir::Type storage;
  /// Elements per step (E for 32-element blocks, a 256-element super-block
  /// for K-quants) and vectors per step.
  int64_t chunk;
  int64_t groups;
  int64_t vectorBytes;
  /// log2 of the offset added to every code to make it unsigned (Q8_0 128,
  /// Q4_0 8, Q6_K 32), or -1 when the format has none.
  int64_t offsetShift;

  Int8WeightGroup load(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
                       mlir::Value step, int64_t group) const;
  /// Whether the format has per-block mins (Q4_K).
  bool hasMins() const { return offsetShift < 0; }
};

/// The integer reader of `weight` ([N, row bytes]), or nothing when its
/// storage has no integer decoding or its rows are not whole vectors.
std::optional<Int8WeightReader>
makeInt8Reader(mlir::OpBuilder &b, mlir::Location loc, mlir::Value weight,
               mlir::Type storage, int64_t inFeatures, int64_t vectorBits);

/// acc + the sums of each lane's 4 products of the unsigned bytes of
/// `unsignedBytes` and the signed bytes of `signedBytes` (vpdpbusd), as a
/// call of the intrinsic declared in `module`.
mlir::Value dotUnsignedSigned(mlir::OpBuilder &b, mlir::Location loc,
                              mlir::ModuleOp module, mlir::Value acc,
                              mlir::Value unsignedBytes,
                              mlir::Value signedBytes);

} // namespace hetc::x86

#endif // HETC_PASSES_TARGET_X86_INT8DOT_H
