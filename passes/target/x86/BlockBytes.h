// Reading and decoding the bytes of a quantization block of a weight row
// inside the x86 matmul kernels: vectors of bytes, nibbles, small integers
// turned into floats through the float mantissa, and the block's scales;
// and the vector widths the x86 blocking passes take.
#ifndef HETC_PASSES_TARGET_X86_BLOCKBYTES_H
#define HETC_PASSES_TARGET_X86_BLOCKBYTES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <utility>

namespace hetc::x86 {

/// Whether `vectorBits` is an x86 vector register width; if not, reports it
/// on `op` in the words of `pass`.
inline bool checkVectorBits(mlir::Operation *op, llvm::StringRef pass,
                            int64_t vectorBits) {
  if (vectorBits == 128 || vectorBits == 256 || vectorBits == 512)
    return true;
  op->emitError() << pass << ": vector-bits is " << vectorBits
                  << "; x86 vector registers hold 128 (SSE), 256 (AVX2) or "
                     "512 (AVX-512) bits";
  return false;
}

inline mlir::Value indexConstant(mlir::OpBuilder &b, mlir::Location loc,
                                 int64_t value) {
  return mlir::arith::ConstantIndexOp::create(b, loc, value);
}

/// The byte rows of a block-format weight ([N, row bytes]) as [N, blocks,
/// bytes per block], so a block is addressed by (row, block, byte).
inline mlir::Value blockView(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Value weight, int64_t bytesPerBlock) {
  auto rowsType = mlir::cast<mlir::RankedTensorType>(weight.getType());
  return mlir::tensor::ExpandShapeOp::create(
      b, loc,
      mlir::RankedTensorType::get({rowsType.getDimSize(0),
                                   rowsType.getDimSize(1) / bytesPerBlock,
                                   bytesPerBlock},
                                  rowsType.getElementType()),
      weight, llvm::ArrayRef<mlir::ReassociationIndices>{{0}, {1, 2}});
}

/// Reads and decodes the bytes of one block of one weight row.
struct BlockBytes {
  using Value = mlir::Value;
  mlir::OpBuilder &b;
  mlir::Location loc;
  Value view;
  Value row;
  Value step;
  int64_t lanes;

  Value i32Splat(int32_t value) {
    auto type = mlir::VectorType::get({lanes}, b.getI32Type());
    return mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(type, b.getI32IntegerAttr(value)));
  }
  Value f32Splat(float value) {
    auto type = mlir::VectorType::get({lanes}, b.getF32Type());
    return mlir::arith::ConstantOp::create(
        b, loc, mlir::DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }
  /// `lanes` bytes from `offset`.
  Value vector(int64_t offset) { return bytes(offset, lanes); }
  /// `count` bytes from `offset`.
  Value bytes(int64_t offset, int64_t count) {
    Value pad = mlir::arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
    return mlir::vector::TransferReadOp::create(
        b, loc, mlir::VectorType::get({count}, b.getI8Type()), view,
        mlir::ValueRange{row, step, indexConstant(b, loc, offset)}, pad,
        llvm::ArrayRef<bool>{true});
  }
  /// `lanes` bytes from `offset`, zero-extended to i32.
  Value widened(int64_t offset) {
    return mlir::arith::ExtUIOp::create(
        b, loc, mlir::VectorType::get({lanes}, b.getI32Type()), vector(offset));
  }
  Value lowNibbles(Value bytes) {
    return mlir::arith::AndIOp::create(b, loc, bytes, i32Splat(15));
  }
  Value highNibbles(Value bytes) {
    return mlir::arith::ShRUIOp::create(b, loc, bytes, i32Splat(4));
  }
  /// Small non-negative integers q < 2^23 as the floats q - offset: q
  /// placed in the mantissa of 2^23 is the float 2^23 + q, so one OR and
  /// one exact subtraction replace an integer-to-float conversion.
  Value smallIntegers(Value values, int32_t offset) {
    Value biased = mlir::arith::BitcastOp::create(
        b, loc, mlir::VectorType::get({lanes}, b.getF32Type()),
        mlir::arith::OrIOp::create(b, loc, values, i32Splat(0x4B000000)));
    return mlir::arith::SubFOp::create(b, loc, biased,
                                 f32Splat(8388608.0f + float(offset)));
  }
  /// The byte at `offset`, zero-extended to i32.
  Value scalarByte(int64_t offset) {
    Value byte = mlir::tensor::ExtractOp::create(
        b, loc, view, mlir::ValueRange{row, step, indexConstant(b, loc, offset)});
    return mlir::arith::ExtUIOp::create(b, loc, b.getI32Type(), byte);
  }
  /// The little-endian f16 at `offset`.
  Value half(int64_t offset) {
    Value pad = mlir::arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
    Value pair = mlir::vector::TransferReadOp::create(
        b, loc, mlir::VectorType::get({2}, b.getI8Type()), view,
        mlir::ValueRange{row, step, indexConstant(b, loc, offset)}, pad,
        llvm::ArrayRef<bool>{true});
    return mlir::vector::ExtractOp::create(
        b, loc,
        mlir::vector::BitCastOp::create(
            b, loc, mlir::VectorType::get({1}, b.getF16Type()), pair),
        llvm::ArrayRef<int64_t>{0});
  }
  /// The f16 at `offset` as an f32 scalar.
  Value f16(int64_t offset) {
    return mlir::arith::ExtFOp::create(b, loc, b.getF32Type(), half(offset));
  }
  /// The f16 at `offset` in every lane, as f32: broadcast as f16, then
  /// widened, one broadcast load and one conversion.
  Value f16Splat(int64_t offset) {
    return mlir::arith::ExtFOp::create(
        b, loc, mlir::VectorType::get({lanes}, b.getF32Type()),
        broadcast(half(offset)));
  }
  Value broadcast(Value scalar) {
    return mlir::vector::BroadcastOp::create(
        b, loc, mlir::VectorType::get({lanes}, scalar.getType()), scalar);
  }
  Value i32(int32_t value) {
    return mlir::arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
  }
  Value toF32(Value integer) {
    return mlir::arith::SIToFPOp::create(b, loc, b.getF32Type(), integer);
  }

  /// A Q4_K sub-block's scale and min as f32 scalars, already multiplied by
  /// the block's f16 d and dmin: x = scale·q − min.
  std::pair<Value, Value> q4kScaleAndMin(int64_t subBlock) {
    // get_scale_min_k4: sub-blocks 0-3 keep 6-bit values in bytes j and
    // j + 4; 4-7 assemble them from the low nibbles of byte j + 4 and the top
    // two bits of bytes j - 4 and j.
    auto scaleByte = [&](int64_t j) { return scalarByte(4 + j); };
    auto bits = [&](Value value, int32_t shift, int32_t mask) -> Value {
      if (shift)
        value = mlir::arith::ShRUIOp::create(b, loc, value, i32(shift));
      return mlir::arith::AndIOp::create(b, loc, value, i32(mask));
    };
    auto combine = [&](Value low, Value highTwo) -> Value {
      return mlir::arith::OrIOp::create(
          b, loc, low, mlir::arith::ShLIOp::create(b, loc, highTwo, i32(4)));
    };
    Value scale, min;
    if (subBlock < 4) {
      scale = bits(scaleByte(subBlock), 0, 63);
      min = bits(scaleByte(subBlock + 4), 0, 63);
    } else {
      Value shared = scaleByte(subBlock + 4);
      scale = combine(bits(shared, 0, 15), bits(scaleByte(subBlock - 4), 6, 3));
      min = combine(bits(shared, 4, 15), bits(scaleByte(subBlock), 6, 3));
    }
    return {mlir::arith::MulFOp::create(b, loc, f16(0), toF32(scale)),
            mlir::arith::MulFOp::create(b, loc, f16(2), toF32(min))};
  }
};

} // namespace hetc::x86

#endif // HETC_PASSES_TARGET_X86_BLOCKBYTES_H
