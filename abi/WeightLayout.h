// Weight layouts the generated CPU code reads instead of the model file's
// own. A quantized weight that only matmuls read may be stored with its rows
// interleaved in groups, so one vector instruction multiplies a block of
// every row of a group at once. The compiler decides per weight and lists
// its choices in the code (hetc-x86-block-matmuls records them,
// hetc-x86-export-entries writes the table); before the code runs, the
// runtime rewrites those tensors, in a private copy of the mapped model
// file, into the layout the code reads.
#ifndef HETC_ABI_WEIGHTLAYOUT_H
#define HETC_ABI_WEIGHTLAYOUT_H

#include <cstdint>

namespace hetrt::format {

/// The exported symbol of the table: an int64 array, the number of entries
/// then kWeightLayoutFields values per entry (WeightLayoutField), in
/// increasing data offset.
inline constexpr const char *kWeightLayoutsSymbol = "hetc_weight_layouts";

/// The module attribute (an array of i64, the entries without the count)
/// through which hetc-x86-block-matmuls hands its choices to the pass that
/// writes the table.
inline constexpr const char *kWeightLayoutsAttrName = "hetc.x86.weight_layouts";

enum WeightLayoutField : int {
  /// Offset of the tensor from the start of the model file's data section.
  WeightLayoutDataOffset = 0,
  /// Rows (output features) and bytes per row in the model file's format.
  WeightLayoutRows,
  WeightLayoutRowBytes,
  /// The tensor's BlockFormat (BlockFormats.h).
  WeightLayoutFormat,
  /// The layout, a WeightLayoutKind.
  WeightLayoutId,
  kWeightLayoutFields,
};

enum class WeightLayoutKind : int64_t {
  /// Q4_0 rows in groups of kInterleavedRows: for each group (in row order)
  /// and each block b of 32 elements (in order), 32 + 256 bytes: the f16
  /// scales of the group's 16 rows, then 4 runs of 64 bytes, where bytes
  /// 4r..4r+3 of run v are quant bytes 4v..4v+3 of block b of row r of the
  /// group (low nibbles elements 4v..4v+3, high nibbles 16+4v..16+4v+3).
  /// Q4_K rows likewise, per group and super-block of 256 elements, 16 ×
  /// 144 bytes: the 16 rows' f16 d, their f16 dmin, the 12 packed scale
  /// bytes byte-major (byte j of row r at 64 + 16j + r), then per sub-block
  /// pair c (quant bytes 32c..32c+31) 8 runs of 64 bytes, bytes 4r..4r+3 of
  /// run v being quant bytes 32c+4v..32c+4v+3 of row r (low nibbles
  /// sub-block 2c, high nibbles 2c+1).
  /// Q6_K rows, 16 × 210 bytes per super-block, not a byte permutation but
  /// each 32-element quarter with bytes of its own: the 16 rows' f16 d, then
  /// per quarter q (at 32 + 416q) the rows' two int8 scales (the quarter's
  /// elements 0-15, then 16-31; row r at 16p + r), 4 runs of 64 bytes whose
  /// byte 4r+i holds the low 4 bits of the codes of elements 4v+i (low
  /// nibble) and 16+4v+i (high nibble) of row r, and 2 vectors of 64 bytes
  /// whose byte 4r+i holds at bits 2v the top 2 bits of the code of element
  /// 16h+4v+i (vector h).
  /// Q8_0 rows as Q4_0's, with 8 runs (quant bytes 4v..4v+3, signed).
  /// F32, F16 and BF16 rows element-major: per group, element k of its 16
  /// rows together (64 or 32 bytes), for k in order.
  /// The tensor keeps its size and offset.
  InterleavedRows16 = 1,
  /// The bytes of InterleavedRows16 written to a copy after the data
  /// section, the tensor itself keeping the file's layout: a weight that
  /// other code reads too (a tied embedding, which the token gather reads).
  /// The copies follow in table order, each at a multiple of
  /// kWeightCopyAlignment, the first at the data section's size rounded up
  /// to it; the weights buffer ends with the last copy, so the code finds a
  /// copy at the buffer's size less weightCopiesBytes of the table plus the
  /// copy's offset among them.
  InterleavedRows16Copy = 2,
};

/// Alignment of the weight copies after the data section.
inline constexpr int64_t kWeightCopyAlignment = 64;

/// Bytes a copy of `rows` rows of `rowBytes` takes among the copies.
inline constexpr int64_t weightCopyBytes(int64_t rows, int64_t rowBytes) {
  return (rows * rowBytes + kWeightCopyAlignment - 1) /
         kWeightCopyAlignment * kWeightCopyAlignment;
}

/// Rows per interleaved group: one per 32-bit lane of a 512-bit vector.
inline constexpr int64_t kInterleavedRows = 16;

/// Entries a table may hold (far past any model's weights).
inline constexpr int64_t kMaxWeightLayouts = 1 << 20;

} // namespace hetrt::format

#endif // HETC_ABI_WEIGHTLAYOUT_H
