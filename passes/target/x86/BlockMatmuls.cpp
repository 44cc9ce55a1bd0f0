// hetc-x86-block-matmuls: the x86 CPU's blocking of `x · wᵀ` for f32
// activations and f32, f16, bf16, Q8_0, Q4_0 or k-quant (Q2_K to Q6_K) weights,
// replacing the portable generics convert-llm-to-linalg tags with
// `llm.matmul_weight`. Each step of a kernel computes a block of Mr activation rows ×
// Nr weight rows with Mr·Nr vector accumulators, so each weight vector loaded
// (and decoded) serves Mr activation rows and each activation vector serves Nr
// weight rows: the prefill becomes FMA-bound instead of load-bound. Decode
// (Mr = 1) streams weight rows, each split over independent accumulators.
#include "passes/target/x86/Passes.h"

#include "passes/target/x86/BlockBytes.h"
#include "passes/target/x86/Int8Dot.h"
#include "passes/target/x86/InterleavedWeights.h"
#include "passes/target/x86/MatmulGrid.h"

#include "abi/BlockFormats.h"
#include "abi/WeightLayout.h"

#include "dialects/llm/LLMTypes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <map>
#include <tuple>

#define DEBUG_TYPE "hetc-x86-block-matmuls"

namespace hetc::x86 {
#define GEN_PASS_DEF_HETCX86BLOCKMATMULSPASS
#include "passes/target/x86/Passes.h.inc"
} // namespace hetc::x86

using namespace mlir;
namespace llm = hetc::llm;
using hetc::x86::BlockBytes;
using hetc::x86::indexConstant;

/// The argument attribute convert-llm-to-linalg puts on the weight data.
constexpr llvm::StringLiteral kWeightsArgAttrName = "llm.weights";

namespace {

/// One group of a weight row: f32 vectors of kLanes and, for Q8_0/Q4_0
/// blocks, the block's scale (broadcast) still to be applied to them.
struct WeightChunk {
  SmallVector<Value> values;
  Value scale;
};

/// Reads a weight row in steps of `chunk` elements (a float vector or one
/// quantization block), each step in `groups` groups decoded to f32 vectors.
/// A K-quant super-block (256 elements) is read as 8 groups of 32: its
/// sub-block scales and mins are decoded once per super-block and row, and
/// applied in registers, so no group waits on a scale of another.
struct WeightReader {
  Type storage;
  /// Float weights: [N, K]; block formats: [N, blocks, bytes per block].
  Value view;
  int64_t chunk;
  int64_t groups;
  /// f32 lanes of one vector register.
  int64_t lanes;

  int64_t groupElements() const { return chunk / groups; }

  /// Elements [step·chunk + group·g, step·chunk + (group+1)·g) of weight row
  /// `row` (g = groupElements()), as f32 vectors in element order.
  WeightChunk load(OpBuilder &b, Location loc, Value row, Value step,
                   int64_t group) const {
    auto f32Vector = VectorType::get({lanes}, b.getF32Type());
    auto quant = dyn_cast<llm::QuantType>(storage);
    if (!quant) {
      Value column = arith::MulIOp::create(b, loc, step,
                                           indexConstant(b, loc, lanes));
      Value padding = arith::ConstantOp::create(b, loc, b.getZeroAttr(storage));
      Value values = vector::TransferReadOp::create(
          b, loc, VectorType::get({lanes}, storage), view,
          ValueRange{row, column}, padding, ArrayRef<bool>{true});
      if (!storage.isF32())
        values = arith::ExtFOp::create(b, loc, f32Vector, values);
      return {{values}, Value()};
    }
    BlockBytes bytes{b, loc, view, row, step, lanes};
    switch (quant.getFormat()) {
    case llm::QuantFormat::q8_0: {
      SmallVector<Value> values;
      for (int64_t offset = 0; offset < 32; offset += lanes)
        values.push_back(
            arith::SIToFPOp::create(b, loc, f32Vector, bytes.vector(2 + offset)));
      return {values, bytes.f16Splat(0)};
    }
    case llm::QuantFormat::q4_0: {
      // 16 bytes whose low nibbles are elements 0-15 and high nibbles 16-31,
      // stored with an offset of 8.
      SmallVector<Value> lows, highs;
      for (int64_t offset = 0; offset < 16; offset += lanes) {
        Value part = bytes.widened(2 + offset);
        lows.push_back(bytes.lowNibbles(part));
        highs.push_back(bytes.highNibbles(part));
      }
      SmallVector<Value> values;
      for (Value nibbles : llvm::concat<Value>(lows, highs))
        values.push_back(bytes.smallIntegers(nibbles, 8));
      return {values, bytes.f16Splat(0)};
    }
    case llm::QuantFormat::q4_k:
      return {loadQ4_K(bytes, group), Value()};
    case llm::QuantFormat::q6_k:
      return {loadQ6_K(bytes, group), Value()};
    case llm::QuantFormat::q5_k:
      return {loadQ4_K(bytes, group, /*fifthBits=*/true), Value()};
    case llm::QuantFormat::q2_k:
      return {loadQ2_K(bytes, group), Value()};
    case llm::QuantFormat::q3_k:
      return {loadQ3_K(bytes, group), Value()};
    }
    return {};
  }

private:

  /// Q4_K: f16 d, f16 dmin, 12 bytes of 6-bit sub-block scales and mins, 128
  /// bytes of nibbles; sub-block 2c is the low nibbles of bytes 32c..32c+31,
  /// 2c + 1 their high nibbles; x = (d·scale)·q − dmin·min. Q5_K (with
  /// `fifthBits`) has the same header, then 32 bytes holding bit s of every
  /// level of sub-block s, then the nibbles at offset 48.
  SmallVector<Value> loadQ4_K(BlockBytes &bytes, int64_t subBlock,
                              bool fifthBits = false) const {
    OpBuilder &b = bytes.b;
    Location loc = bytes.loc;
    auto [dScale, dMin] = bytes.q4kScaleAndMin(subBlock);
    Value scales = bytes.broadcast(dScale);
    Value negatedMins =
        bytes.broadcast(arith::NegFOp::create(b, loc, dMin).getResult());
    int64_t nibblesAt = fifthBits ? 48 : 16;
    SmallVector<Value> values;
    for (int64_t offset = 0; offset < 32; offset += lanes) {
      Value packed = bytes.widened(nibblesAt + 32 * (subBlock / 2) + offset);
      Value levels = subBlock % 2 ? bytes.highNibbles(packed)
                                  : bytes.lowNibbles(packed);
      if (fifthBits) {
        Value fifth = bytes.widened(16 + offset);
        if (subBlock)
          fifth = arith::ShRUIOp::create(b, loc, fifth,
                                         bytes.i32Splat(int32_t(subBlock)));
        fifth = arith::ShLIOp::create(
            b, loc, arith::AndIOp::create(b, loc, fifth, bytes.i32Splat(1)),
            bytes.i32Splat(4));
        levels = arith::OrIOp::create(b, loc, levels, fifth);
      }
      values.push_back(vector::FMAOp::create(
          b, loc, bytes.smallIntegers(levels, 0), scales, negatedMins));
    }
    return values;
  }

  /// Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8
  /// scales (one per 16 elements), f16 d. Group g = 4n + t of 32 elements
  /// takes its low bits from bytes 64n + 32(t mod 2) + l (low nibbles for
  /// t < 2), its high bits from bits 2t of bytes 128 + 32n + l, and scales
  /// 8n + 2t (elements 0-15) and 8n + 2t + 1; x = (d·scale)·(q − 32).
  /// Q2_K: 16 bytes of (scale, min) nibble pairs, 64 bytes of 2-bit levels,
  /// f16 d at 80 and dmin at 82. Group g (elements 32g..32g+31) of half n =
  /// g / 4 takes bits 2t..2t+1 (t = g mod 4) of bytes 16 + 32n + l; its two
  /// runs of 16 use pairs 8n + 2t and 8n + 2t + 1;
  /// x = (d·scale)·q − dmin·min.
  SmallVector<Value> loadQ2_K(BlockBytes &bytes, int64_t group) const {
    OpBuilder &b = bytes.b;
    Location loc = bytes.loc;
    int64_t half = group / 4, shift = 2 * (group % 4);
    Value d = bytes.f16(80);
    Value dMin = bytes.f16(82);
    SmallVector<Value> values;
    for (int64_t offset = 0; offset < 32; offset += lanes) {
      Value packed = bytes.widened(16 + 32 * half + offset);
      if (shift)
        packed = arith::ShRUIOp::create(b, loc, packed,
                                        bytes.i32Splat(int32_t(shift)));
      Value levels =
          arith::AndIOp::create(b, loc, packed, bytes.i32Splat(3));
      Value pair = bytes.scalarByte(8 * half + shift + offset / 16);
      Value scale = arith::MulFOp::create(
          b, loc, d,
          bytes.toF32(arith::AndIOp::create(b, loc, pair, bytes.i32(15))));
      Value min = arith::MulFOp::create(
          b, loc, dMin,
          bytes.toF32(arith::ShRUIOp::create(b, loc, pair, bytes.i32(4))));
      values.push_back(vector::FMAOp::create(
          b, loc, bytes.smallIntegers(levels, 0), bytes.broadcast(scale),
          bytes.broadcast(arith::NegFOp::create(b, loc, min).getResult())));
    }
    return values;
  }

  /// Q3_K: 32 bytes of third bits, 64 bytes of 2-bit levels at 32, 12 bytes
  /// of 6-bit scales at 96, f16 d at 108. Group g of half n = g / 4 takes
  /// bits 2t..2t+1 (t = g mod 4) of bytes 32 + 32n + l and bit 4n + t of
  /// byte l (clear: −4); scale j = 8n + 2t + l/16 has its low 4 bits in a
  /// nibble of byte 96 + j mod 8 and its top 2 in byte 104 + j mod 4;
  /// x = (d·(scale − 32))·(q − 4).
  SmallVector<Value> loadQ3_K(BlockBytes &bytes, int64_t group) const {
    OpBuilder &b = bytes.b;
    Location loc = bytes.loc;
    int64_t half = group / 4, t = group % 4;
    Value d = bytes.f16(108);
    SmallVector<Value> values;
    for (int64_t offset = 0; offset < 32; offset += lanes) {
      Value low = bytes.widened(32 + 32 * half + offset);
      if (t)
        low = arith::ShRUIOp::create(b, loc, low, bytes.i32Splat(int32_t(2 * t)));
      low = arith::AndIOp::create(b, loc, low, bytes.i32Splat(3));
      Value high = bytes.widened(offset);
      if (4 * half + t)
        high = arith::ShRUIOp::create(b, loc, high,
                                      bytes.i32Splat(int32_t(4 * half + t)));
      high = arith::ShLIOp::create(
          b, loc, arith::AndIOp::create(b, loc, high, bytes.i32Splat(1)),
          bytes.i32Splat(2));
      int64_t j = 8 * half + 2 * t + offset / 16;
      Value nibbleByte = bytes.scalarByte(96 + j % 8);
      Value lowBits =
          j < 8 ? Value(arith::AndIOp::create(b, loc, nibbleByte, bytes.i32(15)))
                : Value(arith::ShRUIOp::create(b, loc, nibbleByte, bytes.i32(4)));
      Value highByte = bytes.scalarByte(104 + j % 4);
      Value highBits = arith::AndIOp::create(
          b, loc,
          arith::ShRUIOp::create(b, loc, highByte,
                                 bytes.i32(int32_t(2 * (j / 4)))),
          bytes.i32(3));
      Value scale = arith::SubIOp::create(
          b, loc,
          arith::OrIOp::create(
              b, loc, lowBits,
              arith::ShLIOp::create(b, loc, highBits, bytes.i32(4))),
          bytes.i32(32));
      Value blockScale =
          bytes.broadcast(arith::MulFOp::create(b, loc, d, bytes.toF32(scale))
                              .getResult());
      values.push_back(arith::MulFOp::create(
          b, loc,
          bytes.smallIntegers(arith::OrIOp::create(b, loc, low, high), 4),
          blockScale));
    }
    return values;
  }

  SmallVector<Value> loadQ6_K(BlockBytes &bytes, int64_t group) const {
    OpBuilder &b = bytes.b;
    Location loc = bytes.loc;
    int64_t half = group / 4, quarter = group % 4;
    Value d = bytes.f16(208);
    SmallVector<Value> values;
    for (int64_t offset = 0; offset < 32; offset += lanes) {
      Value low = bytes.widened(64 * half + 32 * (quarter % 2) + offset);
      low = quarter < 2 ? bytes.lowNibbles(low) : bytes.highNibbles(low);
      Value high = bytes.widened(128 + 32 * half + offset);
      if (quarter)
        high = arith::ShRUIOp::create(b, loc, high,
                                      bytes.i32Splat(2 * quarter));
      high = arith::ShLIOp::create(
          b, loc, arith::AndIOp::create(b, loc, high, bytes.i32Splat(3)),
          bytes.i32Splat(4));
      Value quants = bytes.smallIntegers(
          arith::OrIOp::create(b, loc, low, high), 32);
      // Lanes ≤ 16, so a vector never straddles two scales.
      Value scaleByte = tensor::ExtractOp::create(
          b, loc, bytes.view,
          ValueRange{bytes.row, bytes.step,
                     indexConstant(b, loc,
                                   192 + 8 * half + 2 * quarter + offset / 16)});
      Value scale = arith::MulFOp::create(
          b, loc, d,
          arith::SIToFPOp::create(b, loc, b.getF32Type(), scaleByte));
      values.push_back(
          arith::MulFOp::create(b, loc, quants, bytes.broadcast(scale)));
    }
    return values;
  }
};

/// The reader for `weight` (converted [N, K] floats or [N, row bytes] block
/// rows), or nothing when this storage has no vector decoding or the row
/// length is not a whole number of steps.
std::optional<WeightReader> makeReader(OpBuilder &b, Location loc, Value weight,
                                       Type storage, int64_t inFeatures,
                                       int64_t lanes) {
  if (storage.isF32() || storage.isF16() || storage.isBF16()) {
    if (inFeatures % lanes != 0)
      return std::nullopt;
    return WeightReader{storage, weight, lanes, 1, lanes};
  }
  auto quant = dyn_cast<llm::QuantType>(storage);
  if (!quant)
    return std::nullopt;
  Value blocks =
      hetc::x86::blockView(b, loc, weight, quant.getBytesPerBlock());
  // K-quant super-blocks are read in groups of 32 (a Q4_K sub-block, two
  // Q6_K scale runs): a group's decoded vectors fit in registers beside the
  // accumulators, where a whole super-block's would not.
  int64_t groups = quant.getBlockSize() / 32;
  return WeightReader{storage, blocks, quant.getBlockSize(), groups, lanes};
}

/// Activation rows per chunk of a prefill matmul: about 512 KiB of them
/// (counted as f32; int8 codes with their scales and sums take as much),
/// half of a core's L2, as a power of two from 32 to 512 (whole row blocks;
/// at least 32 rows so each weight block read serves many).
int64_t prefillChunkRows(int64_t inFeatures) {
  int64_t rows = (512 * 1024) / (4 * inFeatures);
  int64_t chunk = 32;
  while (chunk * 2 <= rows && chunk < 512)
    chunk *= 2;
  return chunk;
}

/// The sums of `vectors` (a power of two of them, at most one vector's
/// lanes), in order, as one vector: pairs are halved and added level by level,
/// each level one two-source shuffle per half and one add. A reduction per
/// vector costs a shuffle and an add per halving for each of them: for a 4×4
/// block of 16 accumulators, 45 instead of 128 operations (llama-110M F32/F16
/// prefill, 768 features, about 5 % faster).
Value reduceTransposed(OpBuilder &b, Location loc, ArrayRef<Value> vectors) {
  // Each value holds `vectors.size() / values.size()` groups, one per input
  // vector in order, of `width` partial sums each.
  SmallVector<Value> values(vectors.begin(), vectors.end());
  int64_t width = cast<VectorType>(vectors.front().getType()).getNumElements();
  auto halves = [&](Value x, Value y, int64_t groups, bool second) {
    SmallVector<int64_t> mask;
    int64_t half = width / 2;
    int64_t xLanes = groups * width;
    for (int64_t source = 0; source < 2; ++source)
      for (int64_t group = 0; group < groups; ++group)
        for (int64_t lane = 0; lane < half; ++lane)
          mask.push_back(source * xLanes + group * width +
                         (second ? half : 0) + lane);
    return vector::ShuffleOp::create(b, loc, x, y, mask).getResult();
  };
  int64_t groups = 1;
  while (values.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i < values.size(); i += 2)
      next.push_back(arith::AddFOp::create(
          b, loc, halves(values[i], values[i + 1], groups, false),
          halves(values[i], values[i + 1], groups, true)));
    values = std::move(next);
    groups *= 2;
    width /= 2;
  }
  // Fewer vectors than lanes: each group still holds several partial sums.
  Value reduced = values.front();
  while (width > 1) {
    SmallVector<int64_t> first, second;
    for (int64_t group = 0; group < groups; ++group)
      for (int64_t lane = 0; lane < width / 2; ++lane) {
        first.push_back(group * width + lane);
        second.push_back(group * width + width / 2 + lane);
      }
    reduced = arith::AddFOp::create(
        b, loc, vector::ShuffleOp::create(b, loc, reduced, reduced, first),
        vector::ShuffleOp::create(b, loc, reduced, reduced, second));
    width /= 2;
  }
  return reduced;
}

/// The int8 quantizations of activations built so far: the matmuls of one
/// input (the Q, K and V projections of a normalized row; gate and up)
/// share one, which also leaves their kernels side by side for
/// hetc-x86-fuse-dispatches.
class QuantizationCache {
public:
  /// The quantization of `x` with these options, built at `b`'s insertion
  /// point unless one built earlier in the same block serves.
  hetc::x86::QuantizedActivations get(OpBuilder &b, Location loc, Value x,
                                      bool withOffsetSums, bool withMinSums,
                                      int64_t blockSumElements,
                                      int64_t padRowsTo) {
    Key key{x, withOffsetSums, withMinSums, blockSumElements, padRowsTo};
    for (const auto &[cachedKey, quantized] : built) {
      Operation *producer = quantized.codes.getDefiningOp();
      if (cachedKey == key && producer->getBlock() == b.getInsertionBlock() &&
          b.getInsertionPoint() != b.getInsertionBlock()->end() &&
          producer->isBeforeInBlock(&*b.getInsertionPoint()))
        return quantized;
    }
    hetc::x86::QuantizedActivations quantized = hetc::x86::quantizeActivations(
        b, loc, x, withOffsetSums, withMinSums, blockSumElements, padRowsTo);
    built.emplace_back(key, quantized);
    return quantized;
  }

private:
  using Key = std::tuple<Value, bool, bool, int64_t, int64_t>;
  SmallVector<std::pair<Key, hetc::x86::QuantizedActivations>> built;
};

/// The blocked form of `x · wᵀ`, or a null value when the storage or K does
/// not suit vector steps of `lanes` (the portable generic then stays).
Value buildBlockedMatmul(OpBuilder &b, Location loc, Value x, Value weight,
                         Type storageType, int64_t outFeatures,
                         int64_t vectorBits, bool int8Dot, bool interleaved,
                         bool amxTiles, QuantizationCache &quantizations) {
  const int64_t kLanes = vectorBits / 32;
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t inFeatures = xType.getDimSize(1);
  // Quantized weights multiply int8 activations where the CPU has integer
  // dot products; the decoded-float path serves the rest.
  std::optional<hetc::x86::Int8WeightReader> int8Reader;
  std::optional<WeightReader> reader;
  if (int8Dot && !interleaved)
    int8Reader = hetc::x86::makeInt8Reader(b, loc, weight, storageType,
                                           inFeatures, vectorBits);
  if (!int8Reader && !interleaved) {
    reader = makeReader(b, loc, weight, storageType, inFeatures, kLanes);
    if (!reader)
      return {};
  }
  // An interleaved weight's step is one block of its group of rows.
  std::optional<hetc::x86::InterleavedReader> interleavedReader;
  if (interleaved)
    interleavedReader = hetc::x86::InterleavedReader::make(
        b, loc, weight, cast<llm::QuantType>(storageType), outFeatures,
        inFeatures);
  int64_t chunk = interleaved  ? interleavedReader->chunk
                  : int8Reader ? int8Reader->chunk
                               : reader->chunk;
  int64_t groups = interleaved  ? interleavedReader->groups
                   : int8Reader ? int8Reader->groups
                                : reader->groups;
  int64_t groupElements = chunk / groups;
  auto module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  int64_t staticRows = xType.getDimSize(0);
  bool rowsKnown = !ShapedType::isDynamic(staticRows);
  // A prompt's matmuls of interleaved weights multiply tiles of 16
  // activation rows with AMX; decode (one static row) would fill a sixteenth
  // of each tile and stays on vpdpbusd.
  bool tiles = amxTiles && interleaved && !rowsKnown;
  const int64_t kTileRows = hetc::x86::InterleavedReader::kTileRows;
  std::optional<hetc::x86::QuantizedActivations> quantized;
  Value codesBuffer;
  if (interleaved) {
    quantized = quantizations.get(
        b, loc, x, /*withOffsetSums=*/false, /*withMinSums=*/false,
        interleavedReader->blockSumElements(), tiles ? kTileRows : 1);
    // The tiles load the codes from memory.
    if (tiles)
      codesBuffer = bufferization::ToBufferOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic, inFeatures}, b.getI8Type()),
          quantized->codes, /*readOnly=*/true);
  } else if (int8Reader) {
    quantized = quantizations.get(b, loc, x, int8Reader->offsetShift >= 0,
                                  int8Reader->hasMins(),
                                  /*blockSumElements=*/0, /*padRowsTo=*/1);
  }
  // 4×4 blocks use 16 accumulators, 4 decoded weight vectors (8 for block
  // formats) and an activation vector: within AVX-512's 32 registers. With
  // 16 registers (AVX2, SSE) blocks of 2 activation rows keep the
  // accumulators at 8.
  //
  // A single activation row (decode) reads f16, bf16 and block-format weights
  // one row at a time, front to back: interleaving several short rows breaks
  // the hardware prefetcher's streams (measured on llama-110M, one thread:
  // Q4_0 decode 91 → 217 tokens/s, F16 67 → 129 with one row instead of
  // eight), and the activation row re-read per weight row stays in L1;
  // `chains` independent accumulators hide the FMA latency along the row.
  // f32 weights too, now that they are read from 2 MiB pages (llama-110M F32,
  // one thread: 41 → 68 tokens/s with one row instead of eight).
  int64_t maxBlockRows = vectorBits >= 512 ? 4 : 2;
  int64_t blockRows =
      rowsKnown && staticRows < maxBlockRows ? staticRows : maxBlockRows;
  if (tiles)
    blockRows = kTileRows;
  int64_t blockColumns = blockRows != 1 ? 4 : 1;
  // An activation row past half of L1 (32 KiB) no longer stays there while
  // a weight row streams by: eight weight rows per step share its re-reads
  // (llama-1B F16's down projection, 8192 wide: 32 ms per step one row at a
  // time, 25 with four, 22 with eight, 25 with sixteen; F16 5632 wide, one
  // thread: 3.7 ms one row at a time, 4.2 with two, 3.4 with four, 2.9 with
  // eight). Up to 16 KiB one row at a time stays best (2048 wide: 4.6 ms,
  // 8.1 with four, 6.8 with eight).
  if (blockColumns == 1 && 4 * inFeatures > 16 * 1024)
    blockColumns = 8;
  while (outFeatures % blockColumns != 0)
    blockColumns /= 2;
  // An interleaved group's 16 rows are the 16 lanes of one vector.
  if (interleaved)
    blockColumns = hetrt::format::kInterleavedRows;
  int64_t steps = inFeatures / chunk;
  // Groups are handed to the chains in turn; an iteration covers whole steps
  // and gives every chain at least one group.
  int64_t chains =
      !tiles && (blockColumns == 1 || (interleaved && blockRows == 1))
          ? (interleaved ? 2 : 4)
          : 1;
  int64_t stepsPerIteration = std::max<int64_t>(chains / groups, 1);
  while (steps % stepsPerIteration != 0) {
    stepsPerIteration /= 2;
    chains /= 2;
  }
  OpBuilder::InsertionGuard guard(b);
  hetc::x86::MatmulGrid grid =
      hetc::x86::MatmulGrid::build(b, loc, x, outFeatures, blockRows,
                                   blockColumns, prefillChunkRows(inFeatures));
  Value firstRow = grid.firstRow;
  ArrayRef<Value> rows = grid.rows;
  SmallVector<Value> columns;
  for (int64_t j = 0; j < blockColumns; ++j)
    columns.push_back(arith::AddIOp::create(b, loc, grid.firstColumn,
                                            indexConstant(b, loc, j)));

  auto f32Vector = VectorType::get({kLanes}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(f32Vector, b.getF32FloatAttr(0.0f)));
  // Interleaved: one vector per activation row holds the group's 16 sums.
  int64_t blockSums = interleaved ? blockRows : blockRows * blockColumns;
  SmallVector<Value> inits(chains * blockSums, zeros);
  Value f32Pad = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  // The first element (along K) of group `group` of step `step`.
  auto groupStart = [&](OpBuilder &lb, Location lloc, Value step,
                        int64_t group) -> Value {
    return arith::AddIOp::create(
        lb, lloc,
        arith::MulIOp::create(lb, lloc, step, indexConstant(lb, lloc, chunk)),
        indexConstant(lb, lloc, group * groupElements));
  };
  // Adds group `group` of step `step` of every weight row of the block into
  // `sums` (row-major over activation rows × weight rows).
  auto accumulateFloatGroup = [&](OpBuilder &lb, Location lloc, Value step,
                                  int64_t group, MutableArrayRef<Value> sums) {
    SmallVector<WeightChunk> weights;
    for (Value column : columns)
      weights.push_back(reader->load(lb, lloc, column, step, group));
    Value firstElement = groupStart(lb, lloc, step, group);
    SmallVector<SmallVector<Value>> activations(blockRows);
    for (int64_t i = 0; i < blockRows; ++i)
      for (int64_t part = 0; part < groupElements / kLanes; ++part) {
        Value element = arith::AddIOp::create(
            lb, lloc, firstElement, indexConstant(lb, lloc, part * kLanes));
        activations[i].push_back(vector::TransferReadOp::create(
            lb, lloc, f32Vector, x, ValueRange{rows[i], element}, f32Pad,
            ArrayRef<bool>{true}));
      }
    for (int64_t j = 0; j < blockColumns; ++j) {
      WeightChunk &w = weights[j];
      if (w.scale && blockRows == 1) {
        // One activation row: scaling the block's dot product once is
        // cheaper than scaling each weight vector.
        Value dot =
            arith::MulFOp::create(lb, lloc, activations[0][0], w.values[0]);
        for (size_t part = 1; part < w.values.size(); ++part)
          dot = vector::FMAOp::create(lb, lloc, activations[0][part],
                                      w.values[part], dot);
        sums[j] = vector::FMAOp::create(lb, lloc, dot, w.scale, sums[j]);
        continue;
      }
      if (w.scale)
        for (Value &values : w.values)
          values = arith::MulFOp::create(lb, lloc, values, w.scale);
      for (int64_t i = 0; i < blockRows; ++i)
        for (size_t part = 0; part < w.values.size(); ++part) {
          Value &sum = sums[i * blockColumns + j];
          sum = vector::FMAOp::create(lb, lloc, activations[i][part],
                                      w.values[part], sum);
        }
    }
  };
  // The int8 form of a group: each weight row's codes meet each activation
  // row's codes in one vpdpbusd per vector; the integer lane sums, offset
  // corrected, are scaled by weight × activation lane scales into the f32
  // accumulators, and a Q4_K min is taken off with the activation's scaled
  // lane sums.
  auto accumulateInt8Group = [&](OpBuilder &lb, Location lloc, Value step,
                                 int64_t group, MutableArrayRef<Value> sums) {
    SmallVector<hetc::x86::Int8WeightGroup> weights;
    for (Value column : columns)
      weights.push_back(int8Reader->load(lb, lloc, column, step, group));
    Value firstElement = groupStart(lb, lloc, step, group);
    Value firstLane = arith::DivUIOp::create(
        lb, lloc, firstElement,
        indexConstant(lb, lloc, hetc::x86::kLaneElements));
    auto codesType = VectorType::get({groupElements}, lb.getI8Type());
    auto laneIntType = VectorType::get({kLanes}, lb.getI32Type());
    Value i8Pad = arith::ConstantOp::create(lb, lloc, lb.getI8IntegerAttr(0));
    Value i32Pad = arith::ConstantOp::create(lb, lloc, lb.getI32IntegerAttr(0));
    auto read = [&](Value tensor, VectorType type, ValueRange at,
                    Value pad) -> Value {
      return vector::TransferReadOp::create(lb, lloc, type, tensor, at, pad,
                                            ArrayRef<bool>{true});
    };
    Value scalesIndex = indexConstant(lb, lloc, 0);
    Value sumsIndex = indexConstant(lb, lloc, 1);
    Value zeroLanes = arith::ConstantOp::create(
        lb, lloc, DenseElementsAttr::get(laneIntType, lb.getI32IntegerAttr(0)));
    bool withMins = int8Reader->hasMins();
    for (int64_t i = 0; i < blockRows; ++i) {
      Value codes =
          read(quantized->codes, codesType, {rows[i], firstElement}, i8Pad);
      Value scales = read(quantized->laneFloats, f32Vector,
                          {rows[i], scalesIndex, firstLane}, f32Pad);
      Value bias = zeroLanes;
      if (int8Reader->offsetShift >= 0)
        bias = arith::ShLIOp::create(
            lb, lloc,
            read(quantized->negatedLaneSums, laneIntType, {rows[i], firstLane},
                 i32Pad),
            arith::ConstantOp::create(
                lb, lloc,
                DenseElementsAttr::get(
                    laneIntType,
                    lb.getI32IntegerAttr(int8Reader->offsetShift))));
      Value laneSums;
      if (withMins)
        laneSums = read(quantized->laneFloats, f32Vector,
                        {rows[i], sumsIndex, firstLane}, f32Pad);
      for (int64_t j = 0; j < blockColumns; ++j) {
        hetc::x86::Int8WeightGroup &w = weights[j];
        Value dot =
            hetc::x86::dotUnsignedSigned(lb, lloc, module, bias, w.codes,
                                         codes);
        Value laneScales =
            arith::MulFOp::create(lb, lloc, w.laneScales, scales);
        Value &sum = sums[i * blockColumns + j];
        sum = vector::FMAOp::create(
            lb, lloc, laneScales,
            arith::SIToFPOp::create(lb, lloc, f32Vector, dot), sum);
        if (w.negatedLaneMins)
          sum = vector::FMAOp::create(lb, lloc, w.negatedLaneMins, laneSums,
                                      sum);
      }
    }
  };
  auto accumulateGroup = [&](OpBuilder &lb, Location lloc, Value step,
                             int64_t group, MutableArrayRef<Value> sums) {
    if (tiles)
      // The padded codes make the tile's rows firstRow.. all readable; the
      // rows past the end repeat the last, as the clamped `rows` do.
      interleavedReader->accumulateTiles(lb, lloc, grid.columnBlock, step,
                                         group, firstRow, rows, codesBuffer,
                                         *quantized, sums);
    else if (interleaved)
      interleavedReader->accumulate(lb, lloc, module, grid.columnBlock,
                                    step, group, rows, *quantized, sums);
    else if (int8Reader)
      accumulateInt8Group(lb, lloc, step, group, sums);
    else
      accumulateFloatGroup(lb, lloc, step, group, sums);
  };
  auto loop = scf::ForOp::create(
      b, loc, indexConstant(b, loc, 0),
      indexConstant(b, loc, steps / stepsPerIteration),
      indexConstant(b, loc, 1), inits,
      [&](OpBuilder &lb, Location lloc, Value outerStep,
          ValueRange accumulators) {
        SmallVector<Value> sums(accumulators.begin(), accumulators.end());
        for (int64_t inner = 0; inner < stepsPerIteration; ++inner) {
          Value step = arith::AddIOp::create(
              lb, lloc,
              arith::MulIOp::create(
                  lb, lloc, outerStep,
                  indexConstant(lb, lloc, stepsPerIteration)),
              indexConstant(lb, lloc, inner));
          for (int64_t group = 0; group < groups; ++group) {
            int64_t chain = (inner * groups + group) % chains;
            accumulateGroup(lb, lloc, step, group,
                            MutableArrayRef<Value>(sums).slice(
                                chain * blockSums, blockSums));
          }
        }
        scf::YieldOp::create(lb, lloc, sums);
      });

  // Reassociation lets the block's partial sums be reduced in any order;
  // the result differs from strict order only by rounding.
  auto fastMath = arith::FastMathFlagsAttr::get(
      b.getContext(),
      arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  SmallVector<Value> blockVectors;
  for (int64_t k = 0; k < blockSums; ++k) {
    Value sum = loop.getResult(k);
    for (int64_t chain = 1; chain < chains; ++chain)
      sum = arith::AddFOp::create(b, loc, sum,
                                  loop.getResult(chain * blockSums + k));
    blockVectors.push_back(sum);
  }
  SmallVector<Value> dots;
  if (interleaved) {
    dots = blockVectors;
  } else if (blockSums > 1 && llvm::isPowerOf2_64(blockSums) &&
             blockSums <= kLanes) {
    Value reduced = reduceTransposed(b, loc, blockVectors);
    for (int64_t k = 0; k < blockSums; ++k)
      dots.push_back(vector::ExtractOp::create(b, loc, reduced, k));
  } else {
    for (Value sum : blockVectors)
      dots.push_back(vector::ReductionOp::create(b, loc,
                                                 vector::CombiningKind::ADD,
                                                 sum, Value(),
                                                 fastMath.getValue())
                         .getResult());
  }

  Value wholeBlock;
  if (grid.wholeRowBlocks && !interleaved)
    wholeBlock = vector::FromElementsOp::create(
        b, loc, VectorType::get({blockRows, blockColumns}, b.getF32Type()),
        dots);
  auto rowType = VectorType::get({blockColumns}, b.getF32Type());
  return grid.write(
      b, loc,
      [&](int64_t i) -> SmallVector<Value> {
        if (interleaved)
          return {dots[i]};
        return {vector::FromElementsOp::create(
            b, loc, rowType,
            ArrayRef<Value>(dots).slice(i * blockColumns, blockColumns))};
      },
      wholeBlock);
}

/// Whether `generic` has the shape convert-llm-to-linalg gives `x · wᵀ`:
/// loops (n, m, k), parallel, parallel and reduction, over activations [M, K]
/// and one [M, N] result.
bool isPortableMatmul(linalg::GenericOp generic) {
  if (generic.getNumResults() != 1 || generic.getNumDpsInputs() < 1 ||
      generic.getNumLoops() != 3 || generic.getNumReductionLoops() != 1)
    return false;
  auto resultType = dyn_cast<RankedTensorType>(generic.getResultTypes()[0]);
  auto inputType =
      dyn_cast<RankedTensorType>(generic.getDpsInputs()[0].getType());
  return resultType && inputType && resultType.getRank() == 2 &&
         inputType.getRank() == 2 && !inputType.isDynamicDim(1);
}

/// The weight a portable matmul reads: its second input for float weights;
/// for block formats, the byte rows its body decodes (captured from above).
Value matmulWeight(linalg::GenericOp generic, Type storage) {
  if (!isa<llm::QuantType>(storage))
    return generic.getNumDpsInputs() == 2 ? generic.getDpsInputs()[1]
                                          : Value();
  Value weight;
  generic.getBody()->walk([&](tensor::ExtractOp extract) {
    Value source = extract.getTensor();
    if (!generic.getRegion().isAncestor(source.getParentRegion()))
      weight = source;
  });
  return weight;
}

/// Erases the producers of `values` that nothing uses any more, and theirs.
void eraseDeadProducers(SmallVector<Value> values) {
  while (!values.empty()) {
    Operation *producer = values.pop_back_val().getDefiningOp();
    if (!producer || !isOpTriviallyDead(producer))
      continue;
    values.append(producer->operand_begin(), producer->operand_end());
    producer->erase();
  }
}

/// The offset of the model-file view `weight` reads (a weight bound by
/// convert-llm-to-linalg: a tensor of a memref.view at a constant offset of
/// the weights argument), or nothing.
std::optional<int64_t> weightDataOffset(Value weight) {
  auto toTensor = weight.getDefiningOp<bufferization::ToTensorOp>();
  if (!toTensor)
    return std::nullopt;
  auto view = toTensor.getBuffer().getDefiningOp<memref::ViewOp>();
  if (!view || !view.getSizes().empty())
    return std::nullopt;
  auto argument = dyn_cast<BlockArgument>(view.getSource());
  auto func = argument ? dyn_cast<func::FuncOp>(
                             argument.getOwner()->getParentOp())
                       : func::FuncOp();
  if (!func || !func.getArgAttr(argument.getArgNumber(), kWeightsArgAttrName))
    return std::nullopt;
  return getConstantIntValue(view.getByteShift());
}

/// The runtime's name (abi/BlockFormats.h) of a format the interleaved
/// kernels read.
hetrt::format::BlockFormat blockFormatOf(Type storage) {
  if (storage.isF32())
    return hetrt::format::BlockFormat::F32;
  if (storage.isF16())
    return hetrt::format::BlockFormat::F16;
  if (storage.isBF16())
    return hetrt::format::BlockFormat::BF16;
  switch (cast<llm::QuantType>(storage).getFormat()) {
  case llm::QuantFormat::q8_0:
    return hetrt::format::BlockFormat::Q8_0;
  case llm::QuantFormat::q4_k:
    return hetrt::format::BlockFormat::Q4_K;
  case llm::QuantFormat::q6_k:
    return hetrt::format::BlockFormat::Q6_K;
  default:
    return hetrt::format::BlockFormat::Q4_0;
  }
}

/// The weight's storage when `generic` is a matmul whose weight the
/// interleaved kernels can read (hetc::x86::canInterleave for block formats,
/// canInterleaveFloat for f32 and f16), else null.
Type interleavableStorage(linalg::GenericOp generic, int64_t vectorBits,
                          bool int8Dot) {
  auto storageAttr = generic->getAttrOfType<TypeAttr>(
      hetc::llm::kMatmulWeightAttrName);
  if (!storageAttr || !isPortableMatmul(generic))
    return {};
  Type storage = storageAttr.getValue();
  int64_t outFeatures =
      cast<RankedTensorType>(generic.getResultTypes()[0]).getDimSize(1);
  int64_t inFeatures =
      cast<RankedTensorType>(generic.getDpsInputs()[0].getType()).getDimSize(1);
  if (ShapedType::isDynamic(outFeatures))
    return {};
  if (auto quant = dyn_cast<llm::QuantType>(storage))
    return hetc::x86::canInterleave(quant, outFeatures, vectorBits, int8Dot)
               ? storage
               : Type();
  return hetc::x86::canInterleaveFloat(storage, outFeatures, inFeatures,
                                       vectorBits)
             ? storage
             : Type();
}

struct HetcX86BlockMatmulsPass
    : hetc::x86::impl::HetcX86BlockMatmulsPassBase<HetcX86BlockMatmulsPass> {
  using HetcX86BlockMatmulsPassBase::HetcX86BlockMatmulsPassBase;

  /// The weights (by the tensors that bind them) whose rows the kernels read
  /// interleaved: every read of the model-file bytes at their offset, in any
  /// entry point, is a matmul that takes the interleaved kernel (a tied
  /// embedding that also gathers rows keeps the file's layout). Records the
  /// choices in the module for the code's table (WeightLayout.h).
  /// The interleaved weights' tensors; for a copy, the tensor that views
  /// its copy's bytes instead.
  struct InterleavedChoice {
    llvm::DenseSet<Value> inPlace;
    llvm::DenseMap<Value, Value> copies;
  };

  /// A view of a weight copy (abi/WeightLayout.h): `copyOffset` into the
  /// copies, which end the weights buffer and take `copiesBytes`; built
  /// beside the view of the tensor itself.
  static Value viewCopy(Value tensor, int64_t copyOffset, int64_t copiesBytes) {
    auto toTensor = tensor.getDefiningOp<bufferization::ToTensorOp>();
    auto view = toTensor.getBuffer().getDefiningOp<memref::ViewOp>();
    OpBuilder b(view);
    Location loc = view.getLoc();
    Value size = memref::DimOp::create(b, loc, view.getSource(), 0);
    Value shift = arith::SubIOp::create(
        b, loc, size, indexConstant(b, loc, copiesBytes - copyOffset));
    auto copyView = memref::ViewOp::create(b, loc, view.getType(),
                                           view.getSource(), shift,
                                           ValueRange{});
    b.setInsertionPoint(toTensor);
    Operation *copyTensor = b.clone(*toTensor);
    copyTensor->setOperand(0, copyView.getResult());
    return copyTensor->getResult(0);
  }

  InterleavedChoice chooseInterleavedWeights() {
    ModuleOp module = getOperation();
    // Per data offset: the tensors that bind the weight, whether every
    // matmul that reads it qualifies, whether other code reads it too, and
    // the entry of the table.
    struct Weight {
      SmallVector<Value> tensors;
      bool qualifies = true;
      bool matmulReads = false;
      bool otherReads = false;
      int64_t rows = 0, rowBytes = 0;
      hetrt::format::BlockFormat format = hetrt::format::BlockFormat::Q4_0;
    };
    std::map<int64_t, Weight> byOffset;
    module.walk([&](bufferization::ToTensorOp toTensor) {
      Value tensor = toTensor.getResult();
      std::optional<int64_t> offset = weightDataOffset(tensor);
      if (!offset)
        return;
      Weight &weight = byOffset[*offset];
      weight.tensors.push_back(tensor);
      auto type = cast<RankedTensorType>(tensor.getType());
      // Only matrices have rows to interleave (norm weights are vectors).
      if (type.getRank() != 2) {
        weight.qualifies = false;
        return;
      }
      weight.rows = type.getDimSize(0);
      weight.rowBytes = type.getDimSize(1) *
                        (type.getElementType().getIntOrFloatBitWidth() / 8);
      for (OpOperand &use : tensor.getUses()) {
        // A block-format weight is read by tensor.extract inside the
        // matmul's body; a float weight is the matmul's second input.
        auto generic = dyn_cast<linalg::GenericOp>(use.getOwner());
        if (!generic || !generic->hasAttr(hetc::llm::kMatmulWeightAttrName) ||
            use.getOperandNumber() != 1)
          generic = isa<tensor::ExtractOp>(use.getOwner())
                        ? use.getOwner()->getParentOfType<linalg::GenericOp>()
                        : linalg::GenericOp();
        // Code other than the tagged matmuls (the token gather of a tied
        // embedding) reads the file's layout, so the matmuls get a copy.
        if (!generic || !generic->hasAttr(hetc::llm::kMatmulWeightAttrName)) {
          weight.otherReads = true;
          continue;
        }
        Type storage = interleavableStorage(generic, vectorBits, int8Dot);
        if (!storage || matmulWeight(generic, storage) != tensor) {
          weight.qualifies = false;
          continue;
        }
        weight.matmulReads = true;
        weight.format = blockFormatOf(storage);
      }
    });
    InterleavedChoice chosen;
    SmallVector<int64_t> table;
    // Copies take their places in table order (increasing data offset).
    SmallVector<std::pair<const Weight *, int64_t>> copies;
    int64_t copiesBytes = 0;
    for (auto &[offset, weight] : byOffset) {
      if (!weight.qualifies || !weight.matmulReads)
        continue;
      auto kind = hetrt::format::WeightLayoutKind::InterleavedRows16;
      if (weight.otherReads) {
        kind = hetrt::format::WeightLayoutKind::InterleavedRows16Copy;
        copies.emplace_back(&weight, copiesBytes);
        copiesBytes += hetrt::format::weightCopyBytes(weight.rows, weight.rowBytes);
      } else {
        chosen.inPlace.insert(weight.tensors.begin(), weight.tensors.end());
      }
      table.append({offset, weight.rows, weight.rowBytes,
                    static_cast<int64_t>(weight.format),
                    static_cast<int64_t>(kind)});
    }
    for (auto [weight, copyOffset] : copies)
      for (Value tensor : weight->tensors)
        chosen.copies[tensor] = viewCopy(tensor, copyOffset, copiesBytes);
    if (!table.empty())
      module->setAttr(hetrt::format::kWeightLayoutsAttrName,
                      DenseI64ArrayAttr::get(module.getContext(), table));
    return chosen;
  }

  /// Whether a matmul of an element-major float weight takes bf16 tiles: a
  /// prompt's (dynamic rows; decode would fill a sixteenth of each tile)
  /// with AMX, for bf16 weights, and for f32 and f16 only when the user
  /// accepts their rounding to bf16.
  bool takesFloatTiles(Type storage, RankedTensorType xType,
                       int64_t outFeatures) const {
    return amxTiles && ShapedType::isDynamic(xType.getDimSize(0)) &&
           (storage.isBF16() || floatWeightsBf16) &&
           hetc::x86::canUseFloatTiles(storage, outFeatures,
                                       xType.getDimSize(1));
  }

  void runOnOperation() override {
    if (!hetc::x86::checkVectorBits(getOperation(), "hetc-x86-block-matmuls",
                                    vectorBits))
      return signalPassFailure();
    SmallVector<linalg::GenericOp> matmuls;
    getOperation()->walk([&](linalg::GenericOp generic) {
      if (generic->hasAttr(hetc::llm::kMatmulWeightAttrName))
        matmuls.push_back(generic);
    });
    InterleavedChoice interleaved = chooseInterleavedWeights();
    QuantizationCache quantizations;
    for (linalg::GenericOp generic : matmuls) {
      // The tag is consumed here: nothing after this pass may take a generic
      // that later fused with its neighbours for a plain matmul.
      Type storage =
          cast<TypeAttr>(generic->getAttr(hetc::llm::kMatmulWeightAttrName))
              .getValue();
      generic->removeAttr(hetc::llm::kMatmulWeightAttrName);
      if (!isPortableMatmul(generic))
        continue;
      Value weight = matmulWeight(generic, storage);
      auto resultType = cast<RankedTensorType>(generic.getResultTypes()[0]);
      if (!weight || ShapedType::isDynamic(resultType.getDimSize(1)))
        continue;
      Value x = generic.getDpsInputs()[0];
      OpBuilder b(generic);
      bool readsInterleaved = interleaved.inPlace.contains(weight);
      if (auto copy = interleaved.copies.find(weight);
          copy != interleaved.copies.end()) {
        weight = copy->second;
        readsInterleaved = true;
      }
      auto xType = cast<RankedTensorType>(x.getType());
      int64_t outFeatures = resultType.getDimSize(1);
      int64_t chunkRows = prefillChunkRows(xType.getDimSize(1));
      Value blocked;
      if (readsInterleaved && isa<FloatType>(storage) &&
          takesFloatTiles(storage, xType, outFeatures))
        blocked = hetc::x86::buildFloatTileMatmul(
            b, generic.getLoc(), x, weight, outFeatures, chunkRows);
      else if (readsInterleaved && isa<FloatType>(storage))
        blocked = hetc::x86::buildInterleavedFloatMatmul(
            b, generic.getLoc(), x, weight, outFeatures, chunkRows);
      else
        blocked = buildBlockedMatmul(b, generic.getLoc(), x, weight, storage,
                                     outFeatures, vectorBits, int8Dot,
                                     readsInterleaved, amxTiles,
                                     quantizations);
      if (!blocked)
        continue;
      generic.getResult(0).replaceAllUsesWith(blocked);
      SmallVector<Value> operands(generic->getOperands());
      generic.erase();
      // The portable form's zero-filled init is now dead.
      eraseDeadProducers(operands);
    }
  }
};

} // namespace
