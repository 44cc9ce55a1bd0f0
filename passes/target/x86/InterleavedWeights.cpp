#include "passes/target/x86/InterleavedWeights.h"

#include "passes/target/x86/BlockBytes.h"

#include "abi/WeightLayout.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
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

namespace {

/// Group `group` of a block of the 16 interleaved rows, decoded.
struct DecodedGroup {
  /// Code vector k holds elements 4k..4k+3 of the group of each row, as
  /// unsigned bytes (in every format).
  SmallVector<Value> codes;
  /// The rows' f32 scale of the group.
  Value rowScales;
  /// The group's codes form runs of equal length (parts), each with its own
  /// integer row scales when there is more than one (Q6_K: 16 elements
  /// each), which weight the parts' integer sums before the one conversion
  /// to f32.
  SmallVector<Value> partIntScales;
  Value rowMins;
  /// log2 of the offset every code carries (Q4_0 8, Q8_0 128, Q6_K 32),
  /// taken off with the activation sums; -1 for none.
  int64_t offsetShift = -1;

  int64_t parts() const {
    return std::max<int64_t>(static_cast<int64_t>(partIntScales.size()), 1);
  }
};

DecodedGroup decodeGroup(Emitter &e, BlockBytes &block,
                         llm::QuantFormat format, int64_t group) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  DecodedGroup decoded;
  SmallVector<Value> &codes = decoded.codes;
  switch (format) {
  case llm::QuantFormat::q4_0: {
    // The rows' f16 scales, then 4 runs of 64 packed bytes: low nibbles
    // elements 4v..4v+3 of the block, high nibbles 16+4v...
    decoded.rowScales = e.halves(block, 0);
    SmallVector<Value> highs;
    for (int64_t run = 0; run < 4; ++run) {
      Value packed = block.bytes(32 + 64 * run, 64);
      codes.push_back(e.lowNibbles(packed));
      highs.push_back(e.highNibbles(packed));
    }
    codes.append(highs);
    decoded.offsetShift = 3;
    break;
  }
  case llm::QuantFormat::q8_0: {
    // The rows' f16 scales, then 8 runs of 64 bytes: elements 4v..4v+3 of
    // each row, signed; flipping the sign bit makes them unsigned codes
    // with an offset of 128.
    decoded.rowScales = e.halves(block, 0);
    for (int64_t run = 0; run < 8; ++run)
      codes.push_back(arith::XOrIOp::create(
          b, loc, block.bytes(32 + 64 * run, 64), e.byteSplat(-128)));
    decoded.offsetShift = 7;
    break;
  }
  case llm::QuantFormat::q4_k: {
    // d, dmin, the 12 scale bytes byte-major, then per sub-block pair c 8
    // runs of 64 bytes (low nibbles sub-block 2c, high 2c + 1).
    auto [scale, min] = q4kScaleAndMin(e, block, group);
    decoded.rowScales =
        arith::MulFOp::create(b, loc, e.halves(block, 0), e.toFloat(scale));
    decoded.rowMins =
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
    decoded.rowScales = e.halves(block, 0);
    for (int64_t part = 0; part < 2; ++part)
      decoded.partIntScales.push_back(arith::ExtSIOp::create(
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
    decoded.offsetShift = 5;
    break;
  }
  default:
    llvm_unreachable("canInterleave admits Q4_0, Q8_0, Q4_K and Q6_K only");
  }
  return decoded;
}

/// What the group adds to one activation row's 16 row sums: `partDots`
/// the integer dot products of each part (offset already taken off),
/// `activationScale` the row's block scale and `negatedSum` minus the sum of
/// its codes (for the mins).
Value addGroup(Emitter &e, const DecodedGroup &decoded,
               ArrayRef<Value> partDots, Value activationScale,
               Value negatedSum, Value sum) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value dot = partDots[0];
  if (decoded.parts() == 2)
    dot = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(b, loc, partDots[0], decoded.partIntScales[0]),
        arith::MulIOp::create(b, loc, partDots[1], decoded.partIntScales[1]));
  else
    for (Value more : partDots.drop_front())
      dot = arith::AddIOp::create(b, loc, dot, more);
  sum = vector::FMAOp::create(
      b, loc, arith::MulFOp::create(b, loc, decoded.rowScales, activationScale),
      e.toFloat(dot), sum);
  if (decoded.rowMins)
    // - min · d_a · Σ codes = (min · d_a) · (negated sum)
    sum = vector::FMAOp::create(
        b, loc, arith::MulFOp::create(b, loc, decoded.rowMins, activationScale),
        e.toFloat(e.broadcast(negatedSum)), sum);
  return sum;
}

/// Where group `group` of step `step` starts along K, its first activation
/// sum and lane.
struct GroupIndices {
  Value firstElement, firstSum, firstLane;
};

GroupIndices groupIndices(OpBuilder &b, Location loc, Value step,
                                 int64_t chunk, int64_t group,
                                 int64_t sumElements) {
  GroupIndices at;
  at.firstElement = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, step, indexConstant(b, loc, chunk)),
      indexConstant(b, loc, group * kActivationBlock));
  at.firstSum = arith::DivUIOp::create(b, loc, at.firstElement,
                                       indexConstant(b, loc, sumElements));
  at.firstLane = arith::DivUIOp::create(b, loc, at.firstElement,
                                        indexConstant(b, loc, kLaneElements));
  return at;
}

/// Minus the sums of the activation codes of row `row` each part (or the
/// whole group, for a single part) multiplies, and the row's block scale.
std::pair<SmallVector<Value>, Value>
rowSumsAndScale(Emitter &e, const QuantizedActivations &activations,
                Value row, const GroupIndices &at, int64_t sumsPerGroup) {
  SmallVector<Value> negatedSums;
  for (int64_t k = 0; k < sumsPerGroup; ++k)
    negatedSums.push_back(tensor::ExtractOp::create(
        e.b, e.loc, activations.negatedBlockSums,
        ValueRange{row, arith::AddIOp::create(e.b, e.loc, at.firstSum,
                                              indexConstant(e.b, e.loc, k))}));
  Value scale = e.broadcast(tensor::ExtractOp::create(
      e.b, e.loc, activations.laneFloats,
      ValueRange{row, indexConstant(e.b, e.loc, 0), at.firstLane}));
  return {negatedSums, scale};
}

/// The offset correction a part's integer sum starts from: the negated sum
/// of the activation codes times the codes' offset.
Value offsetStart(Emitter &e, int64_t offsetShift, Value negatedSum) {
  if (offsetShift < 0)
    return e.intSplat(0);
  Value shift =
      arith::ConstantOp::create(e.b, e.loc, e.b.getI32IntegerAttr(offsetShift));
  return e.broadcast(arith::ShLIOp::create(e.b, e.loc, negatedSum, shift));
}

} // namespace

void InterleavedReader::accumulate(OpBuilder &b, Location loc, ModuleOp module,
                                   Value rowGroup, Value step, int64_t group,
                                   ArrayRef<Value> rows,
                                   const QuantizedActivations &activations,
                                   MutableArrayRef<Value> sums) const {
  Emitter e{b, loc};
  BlockBytes block{b, loc, view, rowGroup, step, kInterleavedRows};
  prefetchAhead(b, loc, rowGroup, step, group);
  DecodedGroup decoded = decodeGroup(e, block, quant.getFormat(), group);
  const SmallVector<Value> &codes = decoded.codes;
  int64_t parts = decoded.parts();
  GroupIndices at = groupIndices(b, loc, step, chunk, group,
                                 blockSumElements());
  Value i8Pad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
  for (size_t i = 0; i < rows.size(); ++i) {
    Value activationCodes = vector::BitCastOp::create(
        b, loc, VectorType::get({kActivationBlock / 4}, b.getI32Type()),
        vector::TransferReadOp::create(b, loc, e.bytes(kActivationBlock),
                                       activations.codes,
                                       ValueRange{rows[i], at.firstElement},
                                       i8Pad, ArrayRef<bool>{true}));
    auto [negatedSums, activationScale] = rowSumsAndScale(
        e, activations, rows[i], at, kActivationBlock / blockSumElements());
    // Two chains: one per part, or the runs alternating for a single part;
    // either way their latencies overlap.
    Value chains[2] = {e.intSplat(0), e.intSplat(0)};
    for (int64_t part = 0; part < parts; ++part)
      chains[part] = offsetStart(e, decoded.offsetShift, negatedSums[part]);
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
    sums[i] = addGroup(e, decoded, ArrayRef<Value>(chains, 2),
                       activationScale, negatedSums[0], sums[i]);
  }
}

void InterleavedReader::accumulateTiles(OpBuilder &b, Location loc,
                                        Value rowGroup, Value step,
                                        int64_t group, Value firstRow,
                                        ArrayRef<Value> rows,
                                        Value codesBuffer,
                                        const QuantizedActivations &activations,
                                        MutableArrayRef<Value> sums) const {
  assert(static_cast<int64_t>(rows.size()) == kTileRows &&
         "a tile multiplies 16 activation rows");
  Emitter e{b, loc};
  BlockBytes block{b, loc, view, rowGroup, step, kInterleavedRows};
  prefetchAhead(b, loc, rowGroup, step, group);
  DecodedGroup decoded = decodeGroup(e, block, quant.getFormat(), group);
  int64_t parts = decoded.parts();
  // Each part is one tile product: the 16 activation rows' codes of the
  // part (16 × its elements) times the part's code vectors, which are, as
  // they stand, the rows of a tile in the VNNI layout tdpbsud reads (row k:
  // elements 4k..4k+3 of each of the 16 weight rows).
  int64_t partElements = kActivationBlock / parts;
  int64_t partVectors = static_cast<int64_t>(decoded.codes.size()) / parts;
  GroupIndices at = groupIndices(b, loc, step, chunk, group,
                                 blockSumElements());
  Type i8 = b.getI8Type(), i32 = b.getI32Type();
  auto rowType = e.lanes(i32);
  SmallVector<Type> rowTypes(parts * kTileRows, rowType);
  // The tiles come in and go out through memory: the decoded codes and the
  // products live in stack buffers released at the end of the group.
  auto scope = memref::AllocaScopeOp::create(b, loc, rowTypes);
  {
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&scope.getBodyRegion());
    Value codeRows = memref::AllocaOp::create(
        b, loc,
        MemRefType::get({static_cast<int64_t>(decoded.codes.size()), 64}, i8),
        b.getI64IntegerAttr(64));
    for (auto [k, codes] : llvm::enumerate(decoded.codes))
      vector::StoreOp::create(
          b, loc, codes, codeRows,
          ValueRange{indexConstant(b, loc, static_cast<int64_t>(k)),
                     indexConstant(b, loc, 0)});
    Value products = memref::AllocaOp::create(
        b, loc, MemRefType::get({parts * kTileRows, kInterleavedRows}, i32),
        b.getI64IntegerAttr(64));
    auto productType =
        amx::TileType::get({kTileRows, kInterleavedRows}, i32);
    for (int64_t part = 0; part < parts; ++part) {
      Value activationTile = amx::TileLoadOp::create(
          b, loc, amx::TileType::get({kTileRows, partElements}, i8),
          codesBuffer,
          ValueRange{firstRow,
                     arith::AddIOp::create(
                         b, loc, at.firstElement,
                         indexConstant(b, loc, part * partElements))});
      Value weightTile = amx::TileLoadOp::create(
          b, loc, amx::TileType::get({partVectors, 64}, i8), codeRows,
          ValueRange{indexConstant(b, loc, part * partVectors),
                     indexConstant(b, loc, 0)});
      Value zero = amx::TileZeroOp::create(b, loc, productType);
      // Signed activation codes times unsigned weight codes: tdpbsud.
      Value product = amx::TileMulIOp::create(
          b, loc, productType, activationTile, weightTile, zero,
          /*isZextLhs=*/nullptr, /*isZextRhs=*/b.getUnitAttr());
      amx::TileStoreOp::create(
          b, loc, products,
          ValueRange{indexConstant(b, loc, part * kTileRows),
                     indexConstant(b, loc, 0)},
          product);
    }
    SmallVector<Value> productRows;
    for (int64_t row = 0; row < parts * kTileRows; ++row)
      productRows.push_back(vector::LoadOp::create(
          b, loc, rowType, products,
          ValueRange{indexConstant(b, loc, row), indexConstant(b, loc, 0)}));
    memref::AllocaScopeReturnOp::create(b, loc, productRows);
  }
  for (int64_t i = 0; i < kTileRows; ++i) {
    auto [negatedSums, activationScale] = rowSumsAndScale(
        e, activations, rows[i], at, kActivationBlock / blockSumElements());
    SmallVector<Value> partDots;
    for (int64_t part = 0; part < parts; ++part)
      partDots.push_back(arith::AddIOp::create(
          b, loc, scope.getResult(part * kTileRows + i),
          offsetStart(e, decoded.offsetShift, negatedSums[part])));
    sums[i] = addGroup(e, decoded, partDots, activationScale, negatedSums[0],
                       sums[i]);
  }
}

} // namespace hetc::x86
