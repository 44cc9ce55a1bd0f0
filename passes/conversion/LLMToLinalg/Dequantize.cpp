// Element-wise decoding of weights inside linalg bodies: float formats are
// extended to f32, block formats decoded from their bytes exactly as ggml's
// dequantize_row_* does, one element at a time, so no dequantized copy of a
// weight is ever materialized.
#include "Patterns.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace hetc::conversion {

namespace {

/// Builds the index and integer arithmetic of one element's decoding.
class ByteReader {
public:
  ByteReader(OpBuilder &b, Location loc, Value bytes, ValueRange outer)
      : b(b), loc(loc), bytes(bytes), outer(outer.begin(), outer.end()) {}

  Value index(int64_t value) { return indexConstant(b, loc, value); }
  Value add(Value lhs, Value rhs) {
    return arith::AddIOp::create(b, loc, lhs, rhs);
  }
  Value add(Value lhs, int64_t rhs) { return add(lhs, index(rhs)); }
  Value mul(Value lhs, int64_t rhs) {
    return arith::MulIOp::create(b, loc, lhs, index(rhs));
  }
  Value div(Value lhs, int64_t rhs) {
    return arith::DivUIOp::create(b, loc, lhs, index(rhs));
  }
  Value rem(Value lhs, int64_t rhs) {
    return arith::RemUIOp::create(b, loc, lhs, index(rhs));
  }

  /// The byte at `offset` in the row, zero-extended to i32.
  Value u8(Value offset) {
    SmallVector<Value> indices = outer;
    indices.push_back(offset);
    Value byte = tensor::ExtractOp::create(b, loc, bytes, indices);
    return arith::ExtUIOp::create(b, loc, b.getI32Type(), byte);
  }
  /// The byte at `offset`, sign-extended to i32.
  Value i8(Value offset) {
    SmallVector<Value> indices = outer;
    indices.push_back(offset);
    Value byte = tensor::ExtractOp::create(b, loc, bytes, indices);
    return arith::ExtSIOp::create(b, loc, b.getI32Type(), byte);
  }
  /// The little-endian f16 at `offset`, as f32.
  Value f16(Value offset) {
    Value low = u8(offset);
    Value high = u8(add(offset, 1));
    Value bits = arith::OrIOp::create(
        b, loc, low, arith::ShLIOp::create(b, loc, high, i32(8)));
    Value bits16 = arith::TruncIOp::create(b, loc, b.getI16Type(), bits);
    Value half = arith::BitcastOp::create(b, loc, b.getF16Type(), bits16);
    return arith::ExtFOp::create(b, loc, b.getF32Type(), half);
  }

  Value i32(int64_t value) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(value));
  }
  Value andI(Value lhs, int64_t mask) {
    return arith::AndIOp::create(b, loc, lhs, i32(mask));
  }
  Value shr(Value lhs, Value amount) {
    return arith::ShRUIOp::create(b, loc, lhs, amount);
  }
  Value shr(Value lhs, int64_t amount) { return shr(lhs, i32(amount)); }
  Value shl(Value lhs, int64_t amount) {
    return arith::ShLIOp::create(b, loc, lhs, i32(amount));
  }
  Value orI(Value lhs, Value rhs) {
    return arith::OrIOp::create(b, loc, lhs, rhs);
  }
  Value subI(Value lhs, int64_t rhs) {
    return arith::SubIOp::create(b, loc, lhs, i32(rhs));
  }
  Value toF32(Value integer) {
    return arith::SIToFPOp::create(b, loc, b.getF32Type(), integer);
  }
  Value fmul(Value lhs, Value rhs) {
    return arith::MulFOp::create(b, loc, lhs, rhs);
  }
  Value fsub(Value lhs, Value rhs) {
    return arith::SubFOp::create(b, loc, lhs, rhs);
  }
  Value ult(Value lhs, int64_t rhs) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lhs,
                                 index(rhs));
  }
  Value select(Value condition, Value ifTrue, Value ifFalse) {
    return arith::SelectOp::create(b, loc, condition, ifTrue, ifFalse);
  }
  Value indexToI32(Value value) {
    return arith::IndexCastOp::create(b, loc, b.getI32Type(), value);
  }

private:
  OpBuilder &b;
  Location loc;
  Value bytes;
  SmallVector<Value> outer;
};

// Q8_0: f16 d, 32 × int8 q; x = d·q.
Value decodeQ8_0(ByteReader &r, Value column) {
  Value base = r.mul(r.div(column, 32), 34);
  Value scale = r.f16(base);
  Value quant = r.i8(r.add(r.add(base, 2), r.rem(column, 32)));
  return r.fmul(scale, r.toF32(quant));
}

// Q4_0: f16 d, 16 bytes; element j < 16 is the low nibble of byte j, element
// j >= 16 the high nibble of byte j - 16; x = d·(nibble − 8).
Value decodeQ4_0(ByteReader &r, Value column) {
  Value base = r.mul(r.div(column, 32), 18);
  Value j = r.rem(column, 32);
  Value byte = r.u8(r.add(r.add(base, 2), r.rem(j, 16)));
  Value shift = r.select(r.ult(j, 16), r.i32(0), r.i32(4));
  Value nibble = r.andI(r.shr(byte, shift), 0xF);
  return r.fmul(r.f16(base), r.toF32(r.subI(nibble, 8)));
}

// Where element `column` lies in the k-quant super-blocks of `bytesPerBlock`
// bytes that Q2_K, Q3_K and Q6_K lay out as halves of 128 elements, each
// four quarters of 32: its block's first byte, half n, quarter t and index l
// within the quarter.
struct QuarterPosition {
  Value base, half, quarter, l;
};
QuarterPosition quarterPosition(ByteReader &r, Value column,
                                int64_t bytesPerBlock) {
  Value base = r.mul(r.div(column, 256), bytesPerBlock);
  Value i = r.rem(column, 256);
  Value rest = r.rem(i, 128);
  return {base, r.div(i, 128), r.div(rest, 32), r.rem(rest, 32)};
}

// get_scale_min_k4 of the 12 bytes at `scales` (Q4_K and Q5_K): sub-blocks
// 0-3 keep 6-bit values in bytes j and j + 4; 4-7 assemble them from the low
// nibbles of byte j + 4 and the top two bits of bytes j - 4 and j.
std::pair<Value, Value> kQuantScaleAndMin(ByteReader &r, Value scales,
                                          Value subBlock) {
  Value sj = r.u8(r.add(scales, subBlock));
  Value sj4 = r.u8(r.add(scales, r.add(subBlock, 4)));
  Value sjm4 = r.u8(r.add(scales, r.rem(subBlock, 4)));
  Value firstHalf = r.ult(subBlock, 4);
  Value scale =
      r.select(firstHalf, r.andI(sj, 63),
               r.orI(r.andI(sj4, 0xF), r.shl(r.shr(sjm4, 6), 4)));
  Value min = r.select(firstHalf, r.andI(sj4, 63),
                       r.orI(r.shr(sj4, 4), r.shl(r.shr(sj, 6), 4)));
  return {scale, min};
}

// Q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins for the 8
// sub-blocks of 32, then 128 bytes of nibbles: chunk c of 64 elements uses byte
// 32c + l, low nibble for sub-block 2c, high nibble for 2c + 1;
// x = (d·scale)·q − dmin·min. Q5_K (`fifthBits`, 176-byte blocks) has 32
// bytes holding bit s of byte l for sub-block s before its nibbles, which
// start at 48.
Value decodeQ4_K(ByteReader &r, Value column, bool fifthBits = false) {
  Value base = r.mul(r.div(column, 256), fifthBits ? 176 : 144);
  Value i = r.rem(column, 256);
  Value chunk = r.div(i, 64);
  Value l = r.rem(i, 32);
  Value lowHalf = r.ult(r.rem(i, 64), 32);
  Value subBlock =
      r.add(r.mul(chunk, 2), r.select(lowHalf, r.index(0), r.index(1)));
  Value packed = r.u8(r.add(r.add(base, fifthBits ? 48 : 16),
                            r.add(r.mul(chunk, 32), l)));
  Value quant = r.select(lowHalf, r.andI(packed, 0xF), r.shr(packed, 4));
  if (fifthBits) {
    Value fifth = r.andI(
        r.shr(r.u8(r.add(base, r.add(r.index(16), l))), r.indexToI32(subBlock)),
        1);
    quant = r.orI(quant, r.shl(fifth, 4));
  }
  auto [scale, min] = kQuantScaleAndMin(r, r.add(base, 4), subBlock);
  Value d = r.fmul(r.f16(base), r.toF32(scale));
  Value m = r.fmul(r.f16(r.add(base, 2)), r.toF32(min));
  return r.fsub(r.fmul(d, r.toF32(quant)), m);
}

// Q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8
// scales (one per 16 elements), f16 d. Half n of 128 elements, quarter t of 32:
// low bits from byte 64n + l + 32(t mod 2) (low nibble for t < 2), high bits
// from bits 2t of byte 32n + l; x = (d·scale)·(q − 32).
Value decodeQ6_K(ByteReader &r, Value column) {
  auto [base, half, quarter, l] = quarterPosition(r, column, 210);
  Value lowBits = r.u8(r.add(
      base, r.add(r.mul(half, 64), r.add(l, r.mul(r.rem(quarter, 2), 32)))));
  Value nibble = r.select(r.ult(quarter, 2), r.andI(lowBits, 0xF),
                          r.shr(lowBits, 4));
  Value highBits =
      r.u8(r.add(base, r.add(r.index(128), r.add(r.mul(half, 32), l))));
  Value shift = r.shl(r.indexToI32(quarter), 1);
  Value high = r.andI(r.shr(highBits, shift), 3);
  Value quant = r.subI(r.orI(nibble, r.shl(high, 4)), 32);
  Value scale = r.i8(r.add(
      base, r.add(r.index(192),
                  r.add(r.mul(half, 8),
                        r.add(r.div(l, 16), r.mul(quarter, 2))))));
  Value d = r.fmul(r.f16(r.add(base, 208)), r.toF32(scale));
  return r.fmul(d, r.toF32(quant));
}

// Q2_K: 16 bytes of (scale, min) nibble pairs, one per 16 elements, 64 bytes
// of 2-bit levels, f16 d, f16 dmin. Half n of 128 elements, quarter t of 32,
// element l of it: level bits 2t..2t+1 of byte 32n + l, pair 8n + 2t + l/16;
// x = (d·scale)·q − dmin·min.
Value decodeQ2_K(ByteReader &r, Value column) {
  auto [base, half, quarter, l] = quarterPosition(r, column, 84);
  Value packed = r.u8(r.add(base, r.add(r.index(16), r.add(r.mul(half, 32), l))));
  Value quant = r.andI(r.shr(packed, r.shl(r.indexToI32(quarter), 1)), 3);
  Value pair = r.u8(r.add(
      base, r.add(r.mul(half, 8), r.add(r.mul(quarter, 2), r.div(l, 16)))));
  Value d = r.fmul(r.f16(r.add(base, 80)), r.toF32(r.andI(pair, 0xF)));
  Value m = r.fmul(r.f16(r.add(base, 82)), r.toF32(r.shr(pair, 4)));
  return r.fsub(r.fmul(d, r.toF32(quant)), m);
}

// Q3_K: 32 bytes of third bits, 64 bytes of 2-bit levels, 12 bytes of 6-bit
// scales (offset 32), f16 d. Half n, quarter t, element l as Q2_K; the third
// bit is bit 4n + t of byte l, set meaning "no −4"; scale j = 8n + 2t + l/16
// has its low 4 bits in the low (j < 8) or high nibble of byte j mod 8 and its
// top 2 bits at bits 2(j/4) of byte 8 + j mod 4; x = (d·(scale − 32))·q.
Value decodeQ3_K(ByteReader &r, Value column) {
  auto [base, half, quarter, l] = quarterPosition(r, column, 110);
  Value packed = r.u8(r.add(base, r.add(r.index(32), r.add(r.mul(half, 32), l))));
  Value low = r.andI(r.shr(packed, r.shl(r.indexToI32(quarter), 1)), 3);
  Value highBit = r.andI(
      r.shr(r.u8(r.add(base, l)),
            r.indexToI32(r.add(r.mul(half, 4), quarter))),
      1);
  Value quant = r.subI(r.orI(low, r.shl(highBit, 2)), 4);
  Value j = r.add(r.mul(half, 8), r.add(r.mul(quarter, 2), r.div(l, 16)));
  Value scales = r.add(base, 96);
  Value nibbleByte = r.u8(r.add(scales, r.rem(j, 8)));
  Value lowBits = r.select(r.ult(j, 8), r.andI(nibbleByte, 0xF),
                           r.shr(nibbleByte, 4));
  Value highByte = r.u8(r.add(scales, r.add(r.index(8), r.rem(j, 4))));
  Value highBits =
      r.andI(r.shr(highByte, r.shl(r.indexToI32(r.div(j, 4)), 1)), 3);
  Value scale = r.subI(r.orI(lowBits, r.shl(highBits, 4)), 32);
  Value d = r.fmul(r.f16(r.add(base, 108)), r.toF32(scale));
  return r.fmul(d, r.toF32(quant));
}

} // namespace

Value loadWeightElement(OpBuilder &b, Location loc, Type storageType,
                        Value weight, ValueRange outerIndices, Value column) {
  auto quant = dyn_cast<llm::QuantType>(storageType);
  if (!quant) {
    SmallVector<Value> indices(outerIndices.begin(), outerIndices.end());
    indices.push_back(column);
    Value element = tensor::ExtractOp::create(b, loc, weight, indices);
    if (element.getType().isF32())
      return element;
    return arith::ExtFOp::create(b, loc, b.getF32Type(), element);
  }
  ByteReader r(b, loc, weight, outerIndices);
  switch (quant.getFormat()) {
  case llm::QuantFormat::q8_0:
    return decodeQ8_0(r, column);
  case llm::QuantFormat::q4_0:
    return decodeQ4_0(r, column);
  case llm::QuantFormat::q4_k:
    return decodeQ4_K(r, column);
  case llm::QuantFormat::q6_k:
    return decodeQ6_K(r, column);
  case llm::QuantFormat::q2_k:
    return decodeQ2_K(r, column);
  case llm::QuantFormat::q3_k:
    return decodeQ3_K(r, column);
  case llm::QuantFormat::q5_k:
    return decodeQ4_K(r, column, /*fifthBits=*/true);
  }
  return {};
}

} // namespace hetc::conversion
