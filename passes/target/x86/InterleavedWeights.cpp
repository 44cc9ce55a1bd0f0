#include "passes/target/x86/InterleavedWeights.h"

#include "passes/target/x86/BlockBytes.h"

#include "abi/WeightLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
namespace llm = hetc::llm;
using hetrt::format::kInterleavedRows;

namespace hetc::x86 {

namespace {

struct Emitter {
  OpBuilder &b;
  Location loc;

  VectorType bytes(int64_t count) const {
    return VectorType::get({count}, b.getI8Type());
  }
  VectorType lanes(Type element) const {
    return VectorType::get({kInterleavedRows}, element);
  }
  Value byteSplat(int8_t value) const {
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(bytes(64), b.getI8IntegerAttr(value)));
  }
  Value intSplat(int32_t value) const {
    return arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(lanes(b.getI32Type()),
                               b.getI32IntegerAttr(value)));
  }
  /// 16 f16 values at `offset` of a group's block, as f32.
  Value halves(BlockBytes &block, int64_t offset) const {
    Value raw = vector::BitCastOp::create(b, loc, lanes(b.getF16Type()),
                                          block.bytes(offset, 32));
    return arith::ExtFOp::create(b, loc, lanes(b.getF32Type()), raw);
  }
  /// 16 bytes at `offset` (one per row), zero-extended to i32.
  Value rowBytes(BlockBytes &block, int64_t offset) const {
    return arith::ExtUIOp::create(b, loc, lanes(b.getI32Type()),
                                  block.bytes(offset, kInterleavedRows));
  }
  Value lowNibbles(Value packed) const {
    return arith::AndIOp::create(b, loc, packed, byteSplat(15));
  }
  Value highNibbles(Value packed) const {
    return arith::ShRUIOp::create(b, loc, packed, byteSplat(4));
  }
  Value toFloat(Value integers) const {
    return arith::SIToFPOp::create(b, loc, lanes(b.getF32Type()), integers);
  }
  Value broadcast(Value scalar) const {
    return vector::BroadcastOp::create(b, loc, lanes(scalar.getType()), scalar);
  }
};

/// The sub-block scale and min of sub-block `s` of each of the 16 rows of a
/// Q4_K group (get_scale_min_k4 lane by lane), from the 12 scale bytes
/// stored byte-major: byte j of row r at 64 + 16j + r.
std::pair<Value, Value> q4kScaleAndMin(Emitter &e, BlockBytes &block,
                                       int64_t s) {
  auto byte = [&](int64_t j) { return e.rowBytes(block, 64 + 16 * j); };
  auto andMask = [&](Value v, int32_t mask) -> Value {
    return arith::AndIOp::create(e.b, e.loc, v, e.intSplat(mask));
  };
  auto topTwo = [&](Value v) -> Value {
    // (v >> 6) << 4
    return arith::ShLIOp::create(
        e.b, e.loc, arith::ShRUIOp::create(e.b, e.loc, v, e.intSplat(6)),
        e.intSplat(4));
  };
  if (s < 4)
    return {andMask(byte(s), 63), andMask(byte(s + 4), 63)};
  Value packed = byte(s + 4);
  Value scale = arith::OrIOp::create(e.b, e.loc, andMask(packed, 15),
                                     topTwo(byte(s - 4)));
  Value min = arith::OrIOp::create(
      e.b, e.loc, arith::ShRUIOp::create(e.b, e.loc, packed, e.intSplat(4)),
      topTwo(byte(s)));
  return {scale, min};
}

} // namespace

bool canInterleave(llm::QuantType quant, int64_t outFeatures,
                   int64_t vectorBits, bool int8Dot) {
  if (!quant || !int8Dot || vectorBits != 512 ||
      outFeatures % kInterleavedRows != 0)
    return false;
  return quant.getFormat() == llm::QuantFormat::q4_0 ||
         quant.getFormat() == llm::QuantFormat::q8_0 ||
         quant.getFormat() == llm::QuantFormat::q4_k ||
         quant.getFormat() == llm::QuantFormat::q6_k;
}

int64_t InterleavedReader::blockSumElements() const {
  return quant.getFormat() == llm::QuantFormat::q6_k ? 16 : kActivationBlock;
}

InterleavedReader InterleavedReader::make(OpBuilder &b, Location loc,
                                          Value weight, llm::QuantType quant,
                                          int64_t outFeatures,
                                          int64_t inFeatures) {
  auto rowsType = cast<RankedTensorType>(weight.getType());
  int64_t totalBytes = rowsType.getDimSize(0) * rowsType.getDimSize(1);
  Value flat = tensor::CollapseShapeOp::create(
      b, loc, RankedTensorType::get({totalBytes}, rowsType.getElementType()),
      weight, ArrayRef<ReassociationIndices>{{0, 1}});
  InterleavedReader reader;
  reader.quant = quant;
  reader.chunk = quant.getBlockSize();
  reader.groups = reader.chunk / kActivationBlock;
  reader.view = tensor::ExpandShapeOp::create(
      b, loc,
      RankedTensorType::get({outFeatures / kInterleavedRows,
                             inFeatures / reader.chunk,
                             kInterleavedRows * quant.getBytesPerBlock()},
                            rowsType.getElementType()),
      flat, ArrayRef<ReassociationIndices>{{0, 1, 2}});
  // Only the Q6_K kernels prefetch (prefetchAhead).
  auto toTensor = weight.getDefiningOp<bufferization::ToTensorOp>();
  if (toTensor && quant.getFormat() == llm::QuantFormat::q6_k) {
    Value buffer = toTensor.getBuffer();
    auto type = dyn_cast<MemRefType>(buffer.getType());
    if (type && type.getLayout().isIdentity() && type.hasStaticShape())
      reader.flatBuffer = memref::CollapseShapeOp::create(
          b, loc, buffer, ArrayRef<ReassociationIndices>{{0, 1}});
  }
  return reader;
}

void InterleavedReader::prefetchAhead(OpBuilder &b, Location loc,
                                      Value rowGroup, Value step,
                                      int64_t group) const {
  if (!flatBuffer)
    return;
  int64_t blockBytes = kInterleavedRows * quant.getBytesPerBlock();
  int64_t blockLines = llvm::divideCeil(blockBytes, kCacheLine);
  int64_t total = cast<MemRefType>(flatBuffer.getType()).getDimSize(0);
  Value block = arith::MulIOp::create(
      b, loc,
      arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, rowGroup,
              indexConstant(b, loc,
                            cast<RankedTensorType>(view.getType()).getDimSize(1))),
          step),
      indexConstant(b, loc, blockBytes));
  // The group's share of the block's lines, each clamped on its own: the
  // separate address computations let the scheduler spread the prefetches
  // between the loads, where one burst per group gained nothing.
  for (int64_t line = blockLines * group / groups;
       line < blockLines * (group + 1) / groups; ++line) {
    Value at = arith::AddIOp::create(
        b, loc, block,
        indexConstant(b, loc, kCacheLine * line + kPrefetchDistance));
    at = arith::MinUIOp::create(b, loc, at, indexConstant(b, loc, total - 1));
    memref::PrefetchOp::create(b, loc, flatBuffer, ValueRange{at},
                               /*isWrite=*/false, /*localityHint=*/3,
                               /*isDataCache=*/true);
  }
}

void InterleavedReader::accumulate(OpBuilder &b, Location loc, ModuleOp module,
                                   Value rowGroup, Value step, int64_t group,
                                   ArrayRef<Value> rows,
                                   const QuantizedActivations &activations,
                                   MutableArrayRef<Value> sums) const {
  Emitter e{b, loc};
  BlockBytes block{b, loc, view, rowGroup, step, kInterleavedRows};
  // Per format: 4 runs of 64 packed bytes whose low nibbles are elements
  // 4v..4v+3 of the group's 32 and high nibbles 16+4v.. (Q4_0), or one
  // sub-block of a pair (Q4_K: low nibbles sub-block 2c, high 2c + 1, 8 runs
  // of 4 elements each); the rows' scales, and Q4_K's mins.
  // Code vector k holds elements 4k..4k+3 of the group, in every format.
  SmallVector<Value> codes;
  // The rows' f32 scale of the group.
  Value rowScales;
  // The group's codes form runs of equal length, each with its own chain of
  // vpdpbusd; with more than one (Q6_K: 16 elements each), each run has its
  // own integer row scales, which weight the chains' sums before the one
  // conversion to f32.
  SmallVector<Value> partIntScales;
  Value rowMins;
  // log2 of the offset every code carries (Q4_0 8, Q6_K 32), taken off with
  // the activation sums; -1 for none.
  int64_t offsetShift = -1;
  prefetchAhead(b, loc, rowGroup, step, group);
  switch (quant.getFormat()) {
  case llm::QuantFormat::q4_0: {
    // The rows' f16 scales, then 4 runs of 64 packed bytes: low nibbles
    // elements 4v..4v+3 of the block, high nibbles 16+4v...
    rowScales = e.halves(block, 0);
    SmallVector<Value> highs;
    for (int64_t run = 0; run < 4; ++run) {
      Value packed = block.bytes(32 + 64 * run, 64);
      codes.push_back(e.lowNibbles(packed));
      highs.push_back(e.highNibbles(packed));
    }
    codes.append(highs);
    offsetShift = 3;
    break;
  }
  case llm::QuantFormat::q8_0: {
    // The rows' f16 scales, then 8 runs of 64 bytes: elements 4v..4v+3 of
    // each row, signed; flipping the sign bit makes them unsigned codes
    // with an offset of 128.
    rowScales = e.halves(block, 0);
    for (int64_t run = 0; run < 8; ++run)
      codes.push_back(arith::XOrIOp::create(
          b, loc, block.bytes(32 + 64 * run, 64), e.byteSplat(-128)));
    offsetShift = 7;
    break;
  }
  case llm::QuantFormat::q4_k: {
    // d, dmin, the 12 scale bytes byte-major, then per sub-block pair c 8
    // runs of 64 bytes (low nibbles sub-block 2c, high 2c + 1).
    auto [scale, min] = q4kScaleAndMin(e, block, group);
    rowScales =
        arith::MulFOp::create(b, loc, e.halves(block, 0), e.toFloat(scale));
    rowMins =
        arith::MulFOp::create(b, loc, e.halves(block, 32), e.toFloat(min));
    int64_t pair = group / 2;
    for (int64_t run = 0; run < 8; ++run) {
      Value packed = block.bytes(256 + 512 * pair + 64 * run, 64);
      codes.push_back(group % 2 ? e.highNibbles(packed) : e.lowNibbles(packed));
    }
    break;
  }
  case llm::QuantFormat::q6_k: {
    // d, then per quarter of 32 elements: the rows' two int8 scales (one
    // per 16 elements), 4 runs of low nibbles (elements 4v.., and 16+4v..
    // in the high nibbles) and 2 vectors of high bits (bits 2v of byte i:
    // element 4v+i of each half).
    int64_t quarter = 32 + 416 * group;
    rowScales = e.halves(block, 0);
    for (int64_t part = 0; part < 2; ++part)
      partIntScales.push_back(arith::ExtSIOp::create(
          b, loc, e.lanes(b.getI32Type()),
          block.bytes(quarter + 16 * part, kInterleavedRows)));
    Value highBits[2] = {block.bytes(quarter + 288, 64),
                         block.bytes(quarter + 352, 64)};
    SmallVector<Value> upper;
    for (int64_t run = 0; run < 4; ++run) {
      Value packed = block.bytes(quarter + 32 + 64 * run, 64);
      // ((bits >> 2v) & 3) << 4 as one shift and a mask.
      auto high = [&](Value bits) -> Value {
        int64_t shift = 4 - 2 * run;
        Value moved = bits;
        if (shift > 0)
          moved = arith::ShLIOp::create(b, loc, bits, e.byteSplat(shift));
        else if (shift < 0)
          moved = arith::ShRUIOp::create(b, loc, bits, e.byteSplat(-shift));
        return arith::AndIOp::create(b, loc, moved, e.byteSplat(0x30));
      };
      codes.push_back(arith::OrIOp::create(b, loc, e.lowNibbles(packed),
                                           high(highBits[0])));
      upper.push_back(arith::OrIOp::create(b, loc, e.highNibbles(packed),
                                           high(highBits[1])));
    }
    codes.append(upper);
    offsetShift = 5;
    break;
  }
  default:
    llvm_unreachable("canInterleave admits Q4_0, Q8_0, Q4_K and Q6_K only");
  }
  Value firstElement = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, step, indexConstant(b, loc, chunk)),
      indexConstant(b, loc, group * kActivationBlock));
  int64_t parts = std::max<int64_t>(partIntScales.size(), 1);
  int64_t sumElements = blockSumElements();
  Value firstSum = arith::DivUIOp::create(
      b, loc, firstElement, indexConstant(b, loc, sumElements));
  Value firstLane = arith::DivUIOp::create(
      b, loc, firstElement, indexConstant(b, loc, kLaneElements));
  Value i8Pad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
  Value zero = indexConstant(b, loc, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    Value activationCodes = vector::BitCastOp::create(
        b, loc, VectorType::get({kActivationBlock / 4}, b.getI32Type()),
        vector::TransferReadOp::create(b, loc, e.bytes(kActivationBlock),
                                       activations.codes,
                                       ValueRange{rows[i], firstElement},
                                       i8Pad, ArrayRef<bool>{true}));
    // Minus the sums of the activation codes each part (or the whole group,
    // for a single part) multiplies.
    SmallVector<Value> negatedSums;
    for (int64_t k = 0; k < kActivationBlock / sumElements; ++k)
      negatedSums.push_back(tensor::ExtractOp::create(
          b, loc, activations.negatedBlockSums,
          ValueRange{rows[i], arith::AddIOp::create(
                                  b, loc, firstSum, indexConstant(b, loc, k))}));
    // Two chains: one per part, or the runs alternating for a single part;
    // either way their latencies overlap.
    Value chains[2] = {e.intSplat(0), e.intSplat(0)};
    if (offsetShift >= 0) {
      Value shift =
          arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(offsetShift));
      for (int64_t part = 0; part < parts; ++part)
        chains[part] = e.broadcast(
            arith::ShLIOp::create(b, loc, negatedSums[part], shift));
    }
    int64_t runsPerPart = static_cast<int64_t>(codes.size()) / parts;
    for (size_t run = 0; run < codes.size(); ++run) {
      Value quad = vector::BitCastOp::create(
          b, loc, e.bytes(64),
          e.broadcast(vector::ExtractOp::create(b, loc, activationCodes,
                                                static_cast<int64_t>(run))));
      Value &chain = parts == 1 ? chains[run % 2]
                                : chains[static_cast<int64_t>(run) /
                                         runsPerPart];
      chain = dotUnsignedSigned(b, loc, module, chain, codes[run], quad);
    }
    Value activationScale = e.broadcast(tensor::ExtractOp::create(
        b, loc, activations.laneFloats, ValueRange{rows[i], zero, firstLane}));
    Value first = chains[0], second = chains[1];
    if (parts == 2) {
      first = arith::MulIOp::create(b, loc, first, partIntScales[0]);
      second = arith::MulIOp::create(b, loc, second, partIntScales[1]);
    }
    Value dot = arith::AddIOp::create(b, loc, first, second);
    sums[i] = vector::FMAOp::create(
        b, loc, arith::MulFOp::create(b, loc, rowScales, activationScale),
        e.toFloat(dot), sums[i]);
    if (rowMins)
      // - min · d_a · Σ codes = (min · d_a) · (negated sum)
      sums[i] = vector::FMAOp::create(
          b, loc, arith::MulFOp::create(b, loc, rowMins, activationScale),
          e.toFloat(e.broadcast(negatedSums[0])), sums[i]);
  }
}

} // namespace hetc::x86
