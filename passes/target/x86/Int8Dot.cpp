// Integer dot products for the x86 matmul kernels of quantized weights. The
// activations are quantized once per matmul (int8 blocks of 32 with an f32
// scale, as llama.cpp's Q8_0 activations), the weight bytes become unsigned
// codes in registers, and vpdpbusd multiplies 64 byte pairs per instruction:
// the offset that makes a signed weight unsigned is taken back out with the
// activation's per-lane sums, a Q4_K min with their scaled sums.
#include "passes/target/x86/Int8Dot.h"

#include "passes/target/x86/BlockBytes.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <string>

using namespace mlir;
namespace llm = hetc::llm;

namespace hetc::x86 {

namespace {

Value splat(OpBuilder &b, Location loc, VectorType type, Attribute value) {
  return arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, cast<TypedAttr>(value)));
}

/// The vectors of `parts` (all of one type) end to end.
Value concat(OpBuilder &b, Location loc, ArrayRef<Value> parts) {
  SmallVector<Value> level(parts.begin(), parts.end());
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2) {
      int64_t width = cast<VectorType>(level[i].getType()).getNumElements();
      SmallVector<int64_t> mask;
      for (int64_t k = 0; k < 2 * width; ++k)
        mask.push_back(k);
      next.push_back(
          vector::ShuffleOp::create(b, loc, level[i], level[i + 1], mask));
    }
    if (level.size() % 2)
      next.push_back(level.back());
    level = std::move(next);
  }
  return level.front();
}

/// Each element of `values` repeated `times` times in a row.
Value repeatEach(OpBuilder &b, Location loc, Value values, int64_t times) {
  int64_t width = cast<VectorType>(values.getType()).getNumElements();
  SmallVector<int64_t> mask;
  for (int64_t k = 0; k < width * times; ++k)
    mask.push_back(k / times);
  return vector::ShuffleOp::create(b, loc, values, values, mask);
}

Value broadcast(OpBuilder &b, Location loc, Value scalar, int64_t width) {
  return vector::BroadcastOp::create(
      b, loc, VectorType::get({width}, scalar.getType()), scalar);
}

/// The 8 sub-block scales and mins of a Q4_K super-block as vector<8xf32>,
/// multiplied by its d and dmin: get_scale_min_k4 over all sub-blocks at once.
/// Sub-blocks j < 4 keep 6-bit values in bytes j and j + 4; j >= 4 assemble
/// them from the nibbles of byte j + 4 and the top two bits of bytes j - 4
/// (scale) and j (min).
std::pair<Value, Value> q4kScalesAndMins(OpBuilder &b, Location loc,
                                         BlockBytes &bytes) {
  auto i32x8 = VectorType::get({8}, b.getI32Type());
  auto f32x8 = VectorType::get({8}, b.getF32Type());
  Value packed = arith::ExtUIOp::create(
      b, loc, VectorType::get({12}, b.getI32Type()), bytes.bytes(4, 12));
  auto pick = [&](ArrayRef<int64_t> indices) -> Value {
    return vector::ShuffleOp::create(b, loc, packed, packed, indices);
  };
  auto constant = [&](ArrayRef<int32_t> values) -> Value {
    SmallVector<Attribute> attributes;
    for (int32_t value : values)
      attributes.push_back(b.getI32IntegerAttr(value));
    return arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(i32x8, attributes));
  };
  auto topBits = [&](Value source) -> Value {
    // (byte >> 6) << 4 for sub-blocks 4-7, 0 for 0-3.
    Value top = arith::ShRUIOp::create(
        b, loc, source, constant({6, 6, 6, 6, 6, 6, 6, 6}));
    top = arith::AndIOp::create(b, loc, top, constant({0, 0, 0, 0, 3, 3, 3, 3}));
    return arith::ShLIOp::create(b, loc, top, constant({4, 4, 4, 4, 4, 4, 4, 4}));
  };
  // Scales: byte j masked to 6 bits (j < 4), or the low nibble of byte j + 4
  // with two bits from byte j - 4.
  Value scaleBytes = pick({0, 1, 2, 3, 8, 9, 10, 11});
  Value scales = arith::OrIOp::create(
      b, loc,
      arith::AndIOp::create(b, loc, scaleBytes,
                            constant({63, 63, 63, 63, 15, 15, 15, 15})),
      topBits(pick({0, 0, 0, 0, 0, 1, 2, 3})));
  // Mins: byte j + 4 masked to 6 bits (j < 4), or its high nibble with two
  // bits from byte j.
  Value minBytes = pick({4, 5, 6, 7, 8, 9, 10, 11});
  Value mins = arith::OrIOp::create(
      b, loc,
      arith::AndIOp::create(
          b, loc,
          arith::ShRUIOp::create(b, loc, minBytes,
                                 constant({0, 0, 0, 0, 4, 4, 4, 4})),
          constant({63, 63, 63, 63, 15, 15, 15, 15})),
      topBits(pick({4, 5, 6, 7, 4, 5, 6, 7})));
  Value d = broadcast(b, loc, bytes.f16(0), 8);
  Value dMin = broadcast(b, loc, bytes.f16(2), 8);
  return {arith::MulFOp::create(
              b, loc, d, arith::SIToFPOp::create(b, loc, f32x8, scales)),
          arith::MulFOp::create(
              b, loc, dMin, arith::SIToFPOp::create(b, loc, f32x8, mins))};
}

} // namespace

PaddedRows PaddedRows::of(OpBuilder &b, Location loc, Value x,
                          int64_t padRowsTo) {
  PaddedRows padded;
  padded.rows = tensor::getMixedSize(b, loc, x, 0);
  if (padRowsTo <= 1)
    return padded;
  Value count = getValueOrCreateConstantIndexOp(b, loc, padded.rows);
  Value pad = indexConstant(b, loc, padRowsTo);
  padded.rows = arith::MulIOp::create(
                    b, loc, arith::CeilDivUIOp::create(b, loc, count, pad), pad)
                    .getResult();
  padded.lastSourceRow =
      arith::SubIOp::create(b, loc, count, indexConstant(b, loc, 1));
  return padded;
}

Value PaddedRows::sourceRow(OpBuilder &b, Location loc, Value row) const {
  if (!lastSourceRow)
    return row;
  return arith::MinUIOp::create(b, loc, row, lastSourceRow);
}

QuantizedActivations quantizeActivations(OpBuilder &b, Location loc, Value x,
                                         bool withOffsetSums,
                                         bool withMinSums,
                                         int64_t blockSumElements,
                                         int64_t padRowsTo) {
  bool withBlockSums = blockSumElements > 0;
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t columns = xType.getDimSize(1);
  int64_t laneCount = columns / kLaneElements;
  int64_t blockLanes = kActivationBlock / kLaneElements;
  Type i8 = b.getI8Type(), i32 = b.getI32Type(), f32 = b.getF32Type();
  PaddedRows padded = PaddedRows::of(b, loc, x, padRowsTo);
  OpFoldResult rows = padded.rows;
  // The lane scales and scaled sums share one tensor: two empty tensors of
  // one type would be merged by CSE into a single destination.
  // Only the arrays the weight format reads are built: an unread output
  // would become a buffer allocated inside the kernel.
  SmallVector<SmallVector<int64_t>> shapes = {{columns},
                                              {withMinSums ? 2 : 1, laneCount}};
  SmallVector<Type> elements = {i8, f32};
  if (withOffsetSums) {
    shapes.push_back({laneCount});
    elements.push_back(i32);
  }
  if (withBlockSums) {
    shapes.push_back({columns / blockSumElements});
    elements.push_back(i32);
  }
  SmallVector<Value> outs;
  for (auto [shape, element] : llvm::zip(shapes, elements)) {
    SmallVector<OpFoldResult> sizes = {rows};
    for (int64_t size : shape)
      sizes.push_back(b.getIndexAttr(size));
    outs.push_back(tensor::EmptyOp::create(b, loc, sizes, element));
  }
  auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{rows},
                                      outs, std::nullopt);
  Block *body = forall.getBody();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  Value row = body->getArgument(0);
  Value sourceRow = padded.sourceRow(b, loc, row);
  Value zero = indexConstant(b, loc, 0);
  // Row `row` of output k.
  auto rowSlice = [&](size_t k) {
    SmallVector<OpFoldResult> offsets = {row}, sizes = {b.getIndexAttr(1)},
                              strides = {b.getIndexAttr(1)};
    for (int64_t size : shapes[k]) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(size));
      strides.push_back(b.getIndexAttr(1));
    }
    return std::make_tuple(offsets, sizes, strides);
  };
  SmallVector<Value> slices;
  for (size_t k = 0; k < outs.size(); ++k) {
    auto [offsets, sizes, strides] = rowSlice(k);
    slices.push_back(tensor::ExtractSliceOp::create(
        b, loc, body->getArgument(1 + k), offsets, sizes, strides));
  }

  auto blockType = VectorType::get({kActivationBlock}, f32);
  auto loop = scf::ForOp::create(
      b, loc, zero, indexConstant(b, loc, columns / kActivationBlock),
      indexConstant(b, loc, 1), slices,
      [&](OpBuilder &lb, Location lloc, Value block, ValueRange current) {
        Value first = arith::MulIOp::create(
            lb, lloc, block, indexConstant(lb, lloc, kActivationBlock));
        Value firstLane = arith::MulIOp::create(
            lb, lloc, block, indexConstant(lb, lloc, blockLanes));
        Value pad = arith::ConstantOp::create(lb, lloc, lb.getF32FloatAttr(0));
        Value values = vector::TransferReadOp::create(
            lb, lloc, blockType, x, ValueRange{sourceRow, first}, pad,
            ArrayRef<bool>{true});
        // maximumf keeps a NaN, so a non-finite row stays non-finite.
        Value largest = vector::ReductionOp::create(
            lb, lloc, vector::CombiningKind::MAXIMUMF,
            math::AbsFOp::create(lb, lloc, values));
        Value scale = arith::DivFOp::create(
            lb, lloc, largest,
            arith::ConstantOp::create(lb, lloc, lb.getF32FloatAttr(127.0f)));
        Value zeroF = arith::ConstantOp::create(lb, lloc, lb.getF32FloatAttr(0));
        Value isZero = arith::CmpFOp::create(lb, lloc, arith::CmpFPredicate::OEQ,
                                             scale, zeroF);
        Value inverse = arith::SelectOp::create(
            lb, lloc, isZero, zeroF,
            arith::DivFOp::create(
                lb, lloc,
                arith::ConstantOp::create(lb, lloc, lb.getF32FloatAttr(1.0f)),
                scale));
        Value rounded = math::RoundEvenOp::create(
            lb, lloc,
            arith::MulFOp::create(lb, lloc, values,
                                  broadcast(lb, lloc, inverse, kActivationBlock)));
        Value codes = arith::TruncIOp::create(
            lb, lloc, VectorType::get({kActivationBlock}, lb.getI8Type()),
            arith::FPToSIOp::create(
                lb, lloc, VectorType::get({kActivationBlock}, lb.getI32Type()),
                rounded));
        // The sum of each lane's 4 codes, exact in f32.
        Value sums;
        for (int64_t k = 0; k < kLaneElements; ++k) {
          SmallVector<int64_t> mask;
          for (int64_t lane = 0; lane < blockLanes; ++lane)
            mask.push_back(lane * kLaneElements + k);
          Value part =
              vector::ShuffleOp::create(lb, lloc, rounded, rounded, mask);
          sums = sums ? arith::AddFOp::create(lb, lloc, sums, part).getResult()
                      : part;
        }
        Value negatedSums = arith::FPToSIOp::create(
            lb, lloc, VectorType::get({blockLanes}, lb.getI32Type()),
            arith::NegFOp::create(lb, lloc, sums));
        Value scales = broadcast(lb, lloc, scale, blockLanes);
        Value scaledSums = arith::MulFOp::create(lb, lloc, sums, scales);
        auto write = [&](Value vector, Value into, ValueRange at) -> Value {
          return vector::TransferWriteOp::create(lb, lloc, vector, into, at,
                                                 ArrayRef<bool>{true})
              .getResult();
        };
        Value floats = write(scales, current[1], {zero, zero, firstLane});
        if (withMinSums)
          floats = write(scaledSums, floats,
                         {zero, indexConstant(lb, lloc, 1), firstLane});
        SmallVector<Value> results = {write(codes, current[0], {zero, first}),
                                      floats};
        if (withOffsetSums)
          results.push_back(
              write(negatedSums, current[2], {zero, firstLane}));
        if (withBlockSums) {
          // The block's sum, or its halves' (each of blockLanes / parts
          // lanes).
          int64_t parts = kActivationBlock / blockSumElements;
          int64_t partLanes = blockLanes / parts;
          Value sumsOut = current[results.size()];
          for (int64_t part = 0; part < parts; ++part) {
            Value lanes = negatedSums;
            if (parts > 1)
              lanes = vector::ExtractStridedSliceOp::create(
                  lb, lloc, negatedSums, ArrayRef<int64_t>{part * partLanes},
                  ArrayRef<int64_t>{partLanes}, ArrayRef<int64_t>{1});
            Value partSum = vector::ReductionOp::create(
                lb, lloc, vector::CombiningKind::ADD, lanes);
            Value index = arith::AddIOp::create(
                lb, lloc,
                arith::MulIOp::create(lb, lloc, block,
                                      indexConstant(lb, lloc, parts)),
                indexConstant(lb, lloc, part));
            sumsOut = tensor::InsertOp::create(lb, lloc, partSum, sumsOut,
                                               ValueRange{zero, index});
          }
          results.push_back(sumsOut);
        }
        scf::YieldOp::create(lb, lloc, results);
      });

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  for (size_t k = 0; k < outs.size(); ++k) {
    auto [offsets, sizes, strides] = rowSlice(k);
    tensor::ParallelInsertSliceOp::create(b, loc, loop.getResult(k),
                                          body->getArgument(1 + k), offsets,
                                          sizes, strides);
  }
  QuantizedActivations quantized;
  quantized.codes = forall.getResult(0);
  quantized.laneFloats = forall.getResult(1);
  if (withOffsetSums)
    quantized.negatedLaneSums = forall.getResult(2);
  if (withBlockSums)
    quantized.negatedBlockSums = forall.getResult(outs.size() - 1);
  return quantized;
}

Int8WeightGroup Int8WeightReader::load(OpBuilder &b, Location loc, Value row,
                                       Value step, int64_t group) const {
  Type i8 = b.getI8Type();
  auto quant = cast<llm::QuantType>(storage);
  auto bytesType = [&](int64_t count) { return VectorType::get({count}, i8); };
  auto lowNibbles = [&](Value bytes) -> Value {
    auto type = cast<VectorType>(bytes.getType());
    return arith::AndIOp::create(b, loc, bytes,
                                 splat(b, loc, type, b.getI8IntegerAttr(15)));
  };
  auto highNibbles = [&](Value bytes) -> Value {
    auto type = cast<VectorType>(bytes.getType());
    return arith::ShRUIOp::create(b, loc, bytes,
                                  splat(b, loc, type, b.getI8IntegerAttr(4)));
  };
  auto blockAt = [&](Value block) {
    return BlockBytes{b, loc, view, row, block, vectorBytes / kLaneElements};
  };
  // Sub-blocks of 32 elements in this vector.
  int64_t parts = vectorBytes / kActivationBlock;
  SmallVector<Value> codes, scales, negatedMins;
  switch (quant.getFormat()) {
  case llm::QuantFormat::q8_0:
  case llm::QuantFormat::q4_0: {
    // A vector spans `parts` consecutive blocks of 32.
    for (int64_t part = 0; part < parts; ++part) {
      Value block = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(b, loc, step, indexConstant(b, loc, parts)),
          indexConstant(b, loc, part));
      BlockBytes bytes = blockAt(block);
      if (quant.getFormat() == llm::QuantFormat::q8_0) {
        // q + 128: flipping the sign bit makes the signed byte unsigned.
        codes.push_back(arith::XOrIOp::create(
            b, loc, bytes.bytes(2, 32),
            splat(b, loc, bytesType(32), b.getI8IntegerAttr(-128))));
      } else {
        // Low nibbles are elements 0-15, high nibbles 16-31; both keep
        // their offset of 8.
        Value packed = bytes.bytes(2, 16);
        codes.push_back(
            concat(b, loc, {lowNibbles(packed), highNibbles(packed)}));
      }
      scales.push_back(broadcast(b, loc, bytes.f16(0),
                                 kActivationBlock / kLaneElements));
    }
    break;
  }
  case llm::QuantFormat::q4_k:
  case llm::QuantFormat::q5_k: {
    BlockBytes bytes = blockAt(step);
    bool fifthBits = quant.getFormat() == llm::QuantFormat::q5_k;
    for (int64_t part = 0; part < parts; ++part) {
      // Sub-block 2c is the low nibbles of bytes 32c..32c+31, 2c + 1 the high
      // (Q5_K's nibbles start at 48, after 32 bytes holding bit s of every
      // level of sub-block s).
      int64_t subBlock = group * parts + part;
      Value packed =
          bytes.bytes((fifthBits ? 48 : 16) + 32 * (subBlock / 2), 32);
      Value code = subBlock % 2 ? highNibbles(packed) : lowNibbles(packed);
      if (fifthBits) {
        Value fifth = bytes.bytes(16, 32);
        if (subBlock)
          fifth = arith::ShRUIOp::create(
              b, loc, fifth,
              splat(b, loc, bytesType(32), b.getI8IntegerAttr(subBlock)));
        fifth = arith::ShLIOp::create(
            b, loc,
            arith::AndIOp::create(
                b, loc, fifth,
                splat(b, loc, bytesType(32), b.getI8IntegerAttr(1))),
            splat(b, loc, bytesType(32), b.getI8IntegerAttr(4)));
        code = arith::OrIOp::create(b, loc, code, fifth);
      }
      codes.push_back(code);
    }
    // All 8 scales and mins of the super-block, unpacked in one vector
    // (every group of the super-block reads the same values), then each
    // sub-block's repeated over its 8 lanes.
    auto [subScales, subMins] = q4kScalesAndMins(b, loc, bytes);
    SmallVector<int64_t> mask;
    for (int64_t lane = 0; lane < vectorBytes / kLaneElements; ++lane)
      mask.push_back(group * parts + lane / (kActivationBlock / kLaneElements));
    scales.push_back(
        vector::ShuffleOp::create(b, loc, subScales, subScales, mask));
    Value negated = arith::NegFOp::create(b, loc, subMins);
    negatedMins.push_back(
        vector::ShuffleOp::create(b, loc, negated, negated, mask));
    break;
  }
  case llm::QuantFormat::q6_k: {
    BlockBytes bytes = blockAt(step);
    // Quarter t of half n (32 elements each): low nibbles (t < 2) or high
    // ones of bytes 64n + 32(t mod 2) + l, two high bits from bits 2t of
    // bytes 128 + 32n + l; codes keep their offset of 32.
    int64_t firstQuarter = group * parts;
    for (int64_t part = 0; part < parts; ++part) {
      int64_t quarter = firstQuarter + part;
      int64_t half = quarter / 4, t = quarter % 4;
      Value low = bytes.bytes(64 * half + 32 * (t % 2), 32);
      low = t < 2 ? lowNibbles(low) : highNibbles(low);
      Value high = bytes.bytes(128 + 32 * half, 32);
      if (t)
        high = arith::ShRUIOp::create(
            b, loc, high,
            splat(b, loc, bytesType(32), b.getI8IntegerAttr(2 * t)));
      high = arith::ShLIOp::create(
          b, loc,
          arith::AndIOp::create(
              b, loc, high, splat(b, loc, bytesType(32), b.getI8IntegerAttr(3))),
          splat(b, loc, bytesType(32), b.getI8IntegerAttr(4)));
      codes.push_back(arith::OrIOp::create(b, loc, low, high));
    }
    // One int8 scale per 16 elements, consecutive for the quarters of a
    // vector (they lie in one half): read together, each repeated over its
    // 4 lanes.
    int64_t half = firstQuarter / 4, t = firstQuarter % 4;
    int64_t count = vectorBytes / 16;
    Value pad = arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0));
    Value scaleBytes = vector::TransferReadOp::create(
        b, loc, bytesType(count), view,
        ValueRange{row, step, indexConstant(b, loc, 192 + 8 * half + 2 * t)},
        pad, ArrayRef<bool>{true});
    auto countType = VectorType::get({count}, b.getF32Type());
    Value perGroup = arith::MulFOp::create(
        b, loc, arith::SIToFPOp::create(b, loc, countType, scaleBytes),
        broadcast(b, loc, bytes.f16(208), count));
    scales.push_back(repeatEach(b, loc, perGroup, 16 / kLaneElements));
    break;
  }
  case llm::QuantFormat::q2_k:
  case llm::QuantFormat::q3_k:
    llvm_unreachable("makeInt8Reader refuses these formats");
  }
  Int8WeightGroup result;
  result.codes = concat(b, loc, codes);
  result.laneScales = concat(b, loc, scales);
  if (!negatedMins.empty())
    result.negatedLaneMins = concat(b, loc, negatedMins);
  return result;
}

std::optional<Int8WeightReader>
makeInt8Reader(OpBuilder &b, Location loc, Value weight, Type storage,
               int64_t inFeatures, int64_t vectorBits) {
  auto quant = dyn_cast<llm::QuantType>(storage);
  int64_t vectorBytes = vectorBits / 8;
  // vpdpbusd works on 256- and 512-bit vectors.
  if (!quant || (vectorBytes != 32 && vectorBytes != 64) ||
      inFeatures % vectorBytes != 0)
    return std::nullopt;
  Int8WeightReader reader;
  reader.storage = storage;
  reader.vectorBytes = vectorBytes;
  switch (quant.getFormat()) {
  case llm::QuantFormat::q8_0:
    reader.offsetShift = 7;
    break;
  case llm::QuantFormat::q4_0:
    reader.offsetShift = 3;
    break;
  case llm::QuantFormat::q4_k:
    reader.offsetShift = -1;
    break;
  case llm::QuantFormat::q6_k:
    reader.offsetShift = 5;
    break;
  case llm::QuantFormat::q5_k:
    reader.offsetShift = -1;
    break;
  case llm::QuantFormat::q2_k:
  case llm::QuantFormat::q3_k:
    // No integer reading of these yet: the float reader serves them.
    return std::nullopt;
  }
  bool superBlocks = quant.getBlockSize() > kActivationBlock;
  reader.chunk = superBlocks ? quant.getBlockSize() : vectorBytes;
  reader.groups = reader.chunk / vectorBytes;
  reader.view = blockView(b, loc, weight, quant.getBytesPerBlock());
  return reader;
}

Value dotUnsignedSigned(OpBuilder &b, Location loc, ModuleOp module,
                        Value acc, Value unsignedBytes, Value signedBytes) {
  auto type = cast<VectorType>(acc.getType());
  // A call of a declared function named after the LLVM intrinsic: LLVM IR
  // takes a function of that name for the intrinsic itself, and a call,
  // unlike llvm.call_intrinsic, passes through bufferization and buffer
  // deallocation (it touches no memory they track).
  std::string name = "llvm.x86.avx512.vpdpbusd." +
                     std::to_string(type.getNumElements() * 32);
  auto functionType = b.getFunctionType(
      {type, unsignedBytes.getType(), signedBytes.getType()}, {type});
  if (!module.lookupSymbol<func::FuncOp>(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    func::FuncOp::create(b, loc, name, functionType).setPrivate();
  }
  return func::CallOp::create(b, loc, name, TypeRange{type},
                              ValueRange{acc, unsignedBytes, signedBytes})
      .getResult(0);
}

} // namespace hetc::x86
