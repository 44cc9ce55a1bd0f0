#include "passes/target/spirv/ProgramBuilder.h"

#include "abi/CodeRecord.h"
#include "dialects/het/HetDialect.h"
#include "dialects/het/HetOps.h"
#include "dialects/llm/LLMOps.h"
#include "hetc/Cost/CostModel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

using namespace mlir;
using hetc::abi::BufferRole;
using hetc::abi::Program;
using hetc::abi::ProgramBuffer;
using hetc::abi::ProgramStep;
using hetc::abi::ProgramValue;
using hetc::abi::StepKind;

namespace hetc::spirv {

namespace {

/// The kernels read and write the KV caches through a block table.
constexpr const char *kUnpagedCache =
    "reads a KV cache without a block table; programs read paged caches: "
    "run het-page-kv-cache first";

void addWaits(Program &program);

/// Keys one workgroup of a split decode attention takes.
constexpr int64_t kKeysPerSplit = 256;

int64_t floatBits(float value) {
  int32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// Rows of a 2-D or 3-D activation: the step's tokens when dynamic.
ProgramValue rowsOf(RankedTensorType type) {
  return type.isDynamicDim(0) ? ProgramValue::tokens()
                              : ProgramValue::fixed(type.getDimSize(0));
}

/// Elements per row (all dimensions but the first).
int64_t rowElements(RankedTensorType type) {
  int64_t elements = 1;
  for (int64_t d = 1; d < type.getRank(); ++d)
    elements *= type.getDimSize(d);
  return elements;
}

ProgramValue scaled(ProgramValue value, int64_t factor) {
  value.constant *= factor;
  value.perToken *= factor;
  value.perKey *= factor;
  return value;
}

class Builder {
public:
  /// `segments`: where a planned program's CPU segments go as functions
  /// (null for a one-device program of the SPIR-V library).
  Builder(func::FuncOp function, ModuleOp segments, bool planned)
      : function_(function), segments_(segments), planned_(planned) {
    // Ops in program order, segments' bodies in place; each value's last
    // reader by that order.
    int index = 0;
    function_.walk<WalkOrder::PreOrder>([&](Operation *op) {
      order_[op] = index;
      for (Value operand : op->getOperands())
        lastUse_[operand] = index;
      ++index;
    });
  }

  FailureOr<Program> build() {
    Block &body = function_.getBody().front();
    if (function_.getNumArguments() < 2)
      return function_.emitOpError()
             << "has no token and position arguments; a program runs a "
                "model's prefill or decode";
    tokens_ = function_.getArgument(0);
    positions_ = function_.getArgument(1);
    if (failed(findBlockTable()))
      return failure();
    if (!planned_) {
      bind(tokens_, "tokens", BufferRole::Tokens);
      bind(positions_, "positions", BufferRole::Positions);
      if (blockTable_)
        bind(blockTable_, "blocks", BufferRole::BlockTable, tableBytes());
    }
    for (unsigned i = 3; i < function_.getNumArguments(); ++i) {
      auto cache = dyn_cast<llm::KVCacheType>(function_.getArgument(i).getType());
      if (!cache)
        return function_.emitOpError()
               << "argument " << i << " is not a KV cache";
      if (cache.getCapacity() != tableEntries_ * blockSize_)
        return function_.emitOpError()
               << "argument " << i << " holds " << cache.getCapacity()
               << " slots, not the " << tableEntries_ << " blocks of "
               << blockSize_ << " of the first cache";
      if (!cache.getElementType().isF32() && !cache.getElementType().isF16() &&
          !cache.getElementType().isBF16())
        return function_.emitOpError()
               << "argument " << i << ": programs keep f32, f16 or bf16 KV "
               << "caches, not " << cache.getElementType();
      kvNames_[function_.getArgument(i)] = "kv." + std::to_string(i - 3);
      if (!planned_)
        bindCache(function_.getArgument(i), 0);
    }
    if (planned_) {
      program_.devices.clear();
      function_.walk([&](het::SegmentOp segment) {
        segmentDevices_.try_emplace(segment.getDevice().getName().str(),
                                    segment.getDevice());
      });
      collectStreams();
      for (Operation &op : body)
        if (failed(lowerPlanned(op)))
          return failure();
      bool logits = llvm::any_of(program_.buffers, [](const ProgramBuffer &b) {
        return b.role == BufferRole::Logits;
      });
      if (!logits)
        return function_.emitOpError()
               << "computes no logits in any segment";
      addWaits(program_);
      return std::move(program_);
    }
    for (Operation &op : body)
      if (failed(lower(op)))
        return failure();
    return std::move(program_);
  }

private:
  /// The block table, argument 2, through which the caches after it are
  /// read: one i32 per block of their slots (het-page-kv-cache's layout).
  LogicalResult findBlockTable() {
    if (function_.getNumArguments() == 2)
      return success(); // no cache
    if (function_.getNumArguments() < 4 ||
        !function_.getArgAttr(2, hetrt::format::kKvBlockTableAttrName))
      return function_.emitOpError() << kUnpagedCache;
    auto table = dyn_cast<RankedTensorType>(function_.getArgument(2).getType());
    perToken_ = function_->hasAttr(llm::kSequencePerTokenAttrName);
    if (!table || table.getRank() != (perToken_ ? 2 : 1))
      return function_.emitOpError()
             << "has a block table of type " << function_.getArgument(2).getType()
             << (perToken_ ? "; a batch's program takes a tensor<?x?xi32> "
                             "table, a row per token"
                           : "; programs run one sequence, with a "
                             "tensor<?xi32> table");
    auto size = function_->getAttrOfType<IntegerAttr>(
        hetrt::format::kKvBlockSizeAttrName);
    auto cache = dyn_cast<llm::KVCacheType>(function_.getArgument(3).getType());
    if (!size || size.getInt() <= 0 || !cache ||
        cache.getCapacity() % size.getInt() != 0)
      return function_.emitOpError()
             << "pages its caches without a block size that divides their "
                "slots (" << hetrt::format::kKvBlockSizeAttrName << ")";
    blockTable_ = function_.getArgument(2);
    blockSize_ = size.getInt();
    program_.kvBlockSize = blockSize_;
    tableEntries_ = cache.getCapacity() / blockSize_;
    return success();
  }

  /// The block table's bytes: a row of the pool's blocks, one per token
  /// in a batch's step.
  ProgramValue tableBytes() const {
    return perToken_ ? ProgramValue::tokens(tableEntries_ * 4)
                     : ProgramValue::fixed(tableEntries_ * 4);
  }

  /// The kernels' code for a cache's elements (@cache_element): 0 f32, 1
  /// f16, 2 bf16.
  static ProgramValue cacheFormat(llm::KVCacheType cache) {
    Type element = cache.getElementType();
    return ProgramValue::fixed(element.isF16() ? 1 : element.isBF16() ? 2 : 0);
  }

  /// An op that reads a cache must read it through the function's table.
  LogicalResult checkPaging(Operation *op, Value blocks,
                            std::optional<uint64_t> blockSize) {
    if (!blocks)
      return op->emitOpError() << kUnpagedCache;
    if (blocks != blockTable_ ||
        blockSize != static_cast<uint64_t>(blockSize_))
      return op->emitOpError()
             << "pages its cache through another block table than its "
                "function's (argument 2, blocks of "
             << blockSize_ << " slots)";
    return success();
  }

  int addBuffer(const std::string &name, BufferRole role, ProgramValue bytes,
                const std::string &weight = "") {
    program_.buffers.push_back({name, role, bytes, weight, device_});
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  void bind(Value value, const std::string &name, BufferRole role,
            ProgramValue bytes = ProgramValue::tokens(4)) {
    assign(value, addBuffer(name, role, bytes));
  }

  /// A KV-cache argument's buffer on `device`: each layer's cache lives on
  /// the device that runs its attention, and never moves.
  void bindCache(Value cache, int device) {
    auto type = cast<llm::KVCacheType>(cache.getType());
    int64_t bytes = 2 * type.getCapacity() * type.getKvHeads() *
                    type.getHeadDim() *
                    (type.getElementType().getIntOrFloatBitWidth() / 8);
    int saved = device_;
    device_ = device;
    bind(cache, kvNames_.lookup(cache), BufferRole::KvCache,
         ProgramValue::fixed(bytes));
    // CPU code keeps each head's positions together; the kernel library
    // each position's heads.
    if (program_.devices[device].target == "x86")
      program_.buffers[bufferOf_.lookup(cache)].runs = type.getKvHeads();
    device_ = saved;
  }

  /// A buffer for an f32 activation on the current device: a free one of the
  /// same size, or new.
  int activation(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    ProgramValue bytes = scaled(rowsOf(type), rowElements(type) * 4);
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (program_.buffers[*it].bytes == bytes &&
          program_.buffers[*it].device == device_) {
        int buffer = *it;
        free_.erase(it);
        live_.push_back(buffer);
        assign(value, buffer);
        return buffer;
      }
    int buffer = addBuffer("act." + std::to_string(activations_++),
                           BufferRole::Activation, bytes);
    live_.push_back(buffer);
    assign(value, buffer);
    return buffer;
  }

  /// `value` lives in `buffer`; the buffer is read until the last reader
  /// of any value in it (a reshaped view shares its source's buffer).
  void assign(Value value, int buffer) {
    bufferOf_[value] = buffer;
    auto reader = lastUse_.find(value);
    auto last = bufferLastUse_.try_emplace(buffer, -1).first;
    if (reader != lastUse_.end())
      last->second = std::max(last->second, reader->second);
  }

  /// Activation buffers whose last reader is at or before op `upTo` (in
  /// program order) are free after it.
  void release(int upTo) {
    for (auto it = live_.begin(); it != live_.end();) {
      if (bufferLastUse_.lookup(*it) <= upTo) {
        (streamBuffers_.contains(*it) ? streamFree_ : free_).push_back(*it);
        it = live_.erase(it);
      } else {
        ++it;
      }
    }
  }

  /// A scratch buffer of at least `bytes` on the current device, which a
  /// step fills and the next reads (one per device, grown to the largest
  /// use: steps on one device run in order).
  int scratch(int64_t bytes) {
    auto found = scratch_.find(device_);
    if (found == scratch_.end()) {
      int buffer = addBuffer("scratch." + std::to_string(scratch_.size()),
                             BufferRole::Activation, ProgramValue::fixed(bytes));
      scratch_[device_] = buffer;
      return buffer;
    }
    ProgramValue &size = program_.buffers[found->second].bytes;
    size.constant = std::max(size.constant, bytes);
    return found->second;
  }

  /// The buffer of `value` on the current device. In a planned program the
  /// token ids, positions and weights have a buffer on each device that
  /// reads them; any other value must have been moved there.
  int buf(Value value) {
    // Reading a streamed unit sends the next one on its way.
    if (auto stream = streams_.find(value); stream != streams_.end())
      issueStreamsThrough(stream->second.group + 1);
    auto found = bufferOf_.find(value);
    if (found != bufferOf_.end() &&
        program_.buffers[found->second].device == device_)
      return found->second;
    std::pair<const void *, int> key{value.getAsOpaquePointer(), device_};
    auto copy = copies_.find(key);
    if (copy != copies_.end())
      return copy->second;
    int buffer = -1;
    if (value == tokens_ || value == positions_ || value == blockTable_) {
      bool tokens = value == tokens_, table = value == blockTable_;
      std::string name = tokens ? "tokens" : table ? "blocks" : "positions";
      buffer = addBuffer(program_.devices.size() > 1
                             ? name + "." + program_.devices[device_].name
                             : name,
                         tokens  ? BufferRole::Tokens
                         : table ? BufferRole::BlockTable
                                 : BufferRole::Positions,
                         table ? tableBytes() : ProgramValue::tokens(4));
    } else if (auto weight = weights_.find(value); weight != weights_.end()) {
      buffer = addBuffer(weight->second.first, BufferRole::Weight,
                         ProgramValue::fixed(weight->second.second),
                         weight->second.first);
    } else {
      return -1;
    }
    copies_[key] = buffer;
    return buffer;
  }

  FailureOr<int> weight(Operation *op, Value value) {
    auto get = value.getDefiningOp<llm::GetWeightOp>();
    if (!get && !weights_.count(value) && !streams_.count(value))
      return op->emitOpError()
             << "reads a weight that is not an llm.get_weight";
    int buffer = buf(value);
    // A fused step reads the weight of an op after it (add_rms_norm_f32
    // the norm's): its llm.get_weight, later in program order, comes first.
    if (buffer < 0 && get && !planned_ && succeeded(lower(*get)))
      buffer = buf(value);
    if (buffer < 0)
      return op->emitOpError() << "reads a weight that has no buffer on "
                               << program_.devices[device_].name;
    return buffer;
  }

  /// The kernel suffix of a weight's storage format ("f32", "q4_k", ...).
  /// The library reads every format but Q2_K, Q3_K and Q5_K.
  FailureOr<std::string> weightFormat(Operation *op, Value value) {
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    std::optional<hetrt::format::BlockFormat> format =
        llm::weightStorageFormat(element);
    using hetrt::format::BlockFormat;
    if (format && (*format == BlockFormat::Q2_K ||
                   *format == BlockFormat::Q3_K ||
                   *format == BlockFormat::Q5_K))
      return op->emitOpError()
             << "has " << element
             << " weights, which the SPIR-V kernels do not read yet (they "
                "read f32, f16, bf16, q8_0, q4_0, q4_k and q6_k); run this "
                "model on the CPU";
    if (format)
      return std::string(hetrt::format::blockLayout(*format).name);
    return op->emitOpError()
           << "has " << element
           << " weights, which the SPIR-V target has no kernel for";
  }

  /// The format parameter of the kernels that read several byte formats.
  static int64_t byteFormatCode(const std::string &format) {
    return format == "f16"    ? 1
           : format == "bf16" ? 2
           : format == "q4_0" ? 3
           : format == "q4_k" ? 4
           : format == "q6_k" ? 5
                              : 6;
  }

  /// The matmul kernel of a weight format and its parameters past
  /// [N, K, M, x_row].
  /// The x and z extents of a decode product's grid over `outputs` rows:
  /// one axis takes 65535 workgroups at most (Vulkan's promise), so more
  /// rows go on along z (@output_row in the kernel library).
  static std::pair<ProgramValue, ProgramValue> outputGrid(int64_t outputs) {
    constexpr int64_t kAxis = 65535;
    return {ProgramValue::fixed(std::min(outputs, kAxis)),
            ProgramValue::fixed((outputs + kAxis - 1) / kAxis)};
  }

  /// The prefill product on `target`'s matrix units, or "" where the
  /// library has none.
  static std::string matrixUnitKernel(const std::string &target) {
    return target == "nvptx"    ? "matmul_mma_bytes"
           : target == "amdgpu" ? "matmul_mfma_bytes"
                                : "";
  }

  static std::string matmulKernel(const std::string &format,
                                  std::vector<ProgramValue> &params) {
    if (format == "q4_k" || format == "q6_k") {
      params.push_back(ProgramValue::fixed(byteFormatCode(format)));
      return "matmul_k_quant";
    }
    return "matmul_" + format;
  }

  void dispatch(const std::string &kernel, std::vector<int32_t> buffers,
                std::vector<ProgramValue> params,
                std::array<ProgramValue, 3> grid) {
    missing_ = missing_ || llvm::is_contained(buffers, -1);
    ProgramStep step;
    step.device = device_;
    step.kind = StepKind::Dispatch;
    step.kernel = kernel;
    step.buffers = std::move(buffers);
    step.params = std::move(params);
    for (int d = 0; d < 3; ++d)
      step.grid[d] = grid[d];
    program_.steps.push_back(std::move(step));
  }

  /// An element-wise kernel of 256-thread workgroups over `result`.
  void elementwise(const std::string &kernel, Value lhs, Value rhs,
                   Value result) {
    auto type = cast<RankedTensorType>(result.getType());
    ProgramValue count = scaled(rowsOf(type), rowElements(type));
    ProgramValue groups = count;
    groups.divisor = 256;
    int out = activation(result);
    dispatch(kernel, {buf(lhs), buf(rhs), out},
             {count},
             {groups, ProgramValue::fixed(1), ProgramValue::fixed(1)});
  }

  LogicalResult requireF32(Operation *op) {
    for (Type type : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(type))
        if (!tensor.getElementType().isF32())
          return op->emitOpError()
                 << "has " << tensor.getElementType()
                 << " activations; the SPIR-V target computes in f32";
    return success();
  }

  LogicalResult lower(Operation &op) {
    if (isa<arith::ConstantOp, tensor::DimOp, func::ReturnOp>(op))
      return success();
    if (auto get = dyn_cast<llm::GetWeightOp>(op)) {
      if (bufferOf_.count(get.getResult()))
        return success();
      FailureOr<int64_t> bytes = weightBytes(get);
      if (failed(bytes))
        return failure();
      std::string name = get.getName().str();
      assign(get.getResult(), addBuffer(name, BufferRole::Weight,
                                        ProgramValue::fixed(*bytes), name));
      return success();
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
      // Buffers are flat: a reshape is the same buffer.
      int buffer = buf(op.getOperand(0));
      if (buffer < 0)
        return op.emitOpError()
               << "reshapes a value that lives on another device than "
               << program_.devices[device_].name;
      assign(op.getResult(0), buffer);
      return success();
    }
    if (failed(requireF32(&op)))
      return failure();
    LogicalResult lowered =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](llm::EmbeddingOp embedding) {
              FailureOr<int> table = weight(&op, embedding.getTable());
              FailureOr<std::string> format =
                  weightFormat(&op, embedding.getTable());
              if (failed(table) || failed(format))
                return failure();
              auto type = cast<RankedTensorType>(embedding.getType());
              int out = activation(embedding.getResult());
              // f32 and Q8_0 tables have kernels of their own; the other
              // formats share one that takes the format as a parameter.
              std::vector<ProgramValue> params = {
                  ProgramValue::fixed(type.getDimSize(1))};
              std::string kernel = "get_rows_" + *format;
              if (*format != "f32" && *format != "q8_0") {
                kernel = "get_rows_bytes";
                params.push_back(ProgramValue::fixed(byteFormatCode(*format)));
              }
              dispatch(kernel,
                       {*table, buf(embedding.getTokens()), out},
                       params,
                       {rowsOf(type), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::RMSNormOp norm) -> LogicalResult {
              // Dispatched with the residual add it reads.
              if (fusedNorms_.contains(norm))
                return success();
              if (norm.getUnitOffset())
                return op.emitOpError()
                       << "with unit_offset has no SPIR-V kernel yet";
              auto type = cast<RankedTensorType>(norm.getType());
              if (type.getRank() != 2)
                return op.emitOpError()
                       << "normalizes a rank-" << type.getRank()
                       << " tensor; the SPIR-V kernel takes rows";
              FailureOr<int> w = weight(&op, norm.getWeight());
              if (failed(w))
                return failure();
              int out = activation(norm.getResult());
              dispatch("rms_norm_f32",
                       {buf(norm.getInput()), *w, out},
                       {ProgramValue::fixed(type.getDimSize(1)),
                        ProgramValue::fixed(floatBits(
                            norm.getEpsilon().convertToFloat()))},
                       {rowsOf(type), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::MatmulOp matmul) -> LogicalResult {
              if (llm::GLUOp glu = gatedPair(matmul)) {
                // The pair's first product waits for its second, which
                // dispatches both with the gate.
                if (order_.lookup(matmul) <
                    order_.lookup(otherProduct(glu, matmul)))
                  return success();
                return lowerGatedProducts(glu);
              }
              SmallVector<llm::MatmulOp, 3> triple = productTriple(matmul);
              if (!triple.empty()) {
                if (matmul != triple.back())
                  return success();
                return lowerProductTriple(triple);
              }
              FailureOr<int> w = weight(&op, matmul.getWeight());
              FailureOr<std::string> format =
                  weightFormat(&op, matmul.getWeight());
              if (failed(w) || failed(format))
                return failure();
              auto type = cast<RankedTensorType>(matmul.getType());
              auto weightType =
                  cast<RankedTensorType>(matmul.getWeight().getType());
              int out = activation(matmul.getResult());
              ProgramValue rows = rowsOf(type);
              int64_t outputs = weightType.getDimSize(0);
              std::vector<ProgramValue> params = {
                  rows, ProgramValue::fixed(weightType.getDimSize(1)),
                  ProgramValue::fixed(outputs), ProgramValue::fixed(0)};
              // A step's many rows (a prefill) go through tiles of the
              // output staged in workgroup memory: 64x64 on NVIDIA's and
              // AMD's matrix units for the 16-bit and block formats (f16
              // products, f32 sums), else 16x16 on any GPU.
              if (type.isDynamicDim(0)) {
                std::string matrixKernel =
                    matrixUnitKernel(program_.devices[device_].target);
                bool matrixUnits = !matrixKernel.empty() && *format != "f32" &&
                                   weightType.getDimSize(1) % 32 == 0;
                int64_t tile = matrixUnits ? 64 : 16;
                ProgramValue rowTiles = rows;
                rowTiles.divisor = tile;
                std::string kernel =
                    matrixUnits ? matrixKernel : "matmul_tiled_f32";
                if (*format != "f32") {
                  if (!matrixUnits)
                    kernel = "matmul_tiled_bytes";
                  params.push_back(
                      ProgramValue::fixed(byteFormatCode(*format)));
                }
                dispatch(kernel, {buf(matmul.getInput()), *w, out}, params,
                         {ProgramValue::fixed((outputs + tile - 1) / tile),
                          rowTiles, ProgramValue::fixed(1)});
                return success();
              }
              std::string kernel = matmulKernel(*format, params);
              auto [columns, slices] = outputGrid(outputs);
              dispatch(kernel, {buf(matmul.getInput()), *w, out},
                       params, {columns, rows, slices});
              return success();
            })
            .Case([&](llm::AddOp add) -> LogicalResult {
              if (llm::RMSNormOp norm = normOfSum(add))
                return lowerAddRmsNorm(add, norm);
              elementwise("add_f32", add.getLhs(), add.getRhs(),
                          add.getResult());
              return success();
            })
            .Case([&](llm::GLUOp glu) -> LogicalResult {
              if (fusedGlus_.contains(glu))
                return success();
              if (glu.getActivation() != llm::GatedActivation::silu)
                return op.emitOpError()
                       << "with a " << llm::stringifyGatedActivation(
                                           glu.getActivation())
                       << " gate has no SPIR-V kernel yet (silu has)";
              elementwise("silu_mul_f32", glu.getGate(), glu.getUp(),
                          glu.getResult());
              return success();
            })
            .Case([&](llm::RoPEOp rope) { return lowerRope(rope); })
            .Case([&](llm::KVAppendOp append) -> LogicalResult {
              if (failed(checkPaging(&op, append.getBlocks(),
                                     append.getBlockSize())))
                return failure();
              if (append.getPositions() != positions_)
                return op.emitOpError() << "writes at positions that are not "
                                           "the step's own";
              llm::KVCacheType cache = append.getCache().getType();
              int buffer = buf(append.getCache());
              auto keys = cast<RankedTensorType>(append.getKeys().getType());
              int64_t row = cache.getKvHeads() * cache.getHeadDim();
              auto rotated = rotatedKeys_.find(append.getKeys());
              if (rotated != rotatedKeys_.end()) {
                const RotatedKeys &rope = rotated->second;
                dispatch("rope_kv_append_f32",
                         {buf(append.getKeys()), rope.table,
                          buf(append.getValues()),
                          buf(append.getPositions()), buf(blockTable_), buffer},
                         {ProgramValue::fixed(row),
                          ProgramValue::fixed(cache.getCapacity()),
                          ProgramValue::fixed(rope.headDim),
                          ProgramValue::fixed(rope.rotary),
                          ProgramValue::fixed(rope.mode),
                          ProgramValue::fixed(blockSize_),
                          tableStride(), cacheFormat(cache)},
                         {rowsOf(keys), ProgramValue::fixed(1),
                          ProgramValue::fixed(1)});
                assign(append.getResult(), buffer);
                return success();
              }
              dispatch("kv_append_f32",
                       {buf(append.getKeys()),
                        buf(append.getValues()),
                        buf(append.getPositions()), buf(blockTable_), buffer},
                       {ProgramValue::fixed(row),
                        ProgramValue::fixed(cache.getCapacity()),
                        ProgramValue::fixed(blockSize_),
                        tableStride(), cacheFormat(cache)},
                       {rowsOf(keys), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              assign(append.getResult(), buffer);
              return success();
            })
            .Case([&](llm::AttentionOp attention) -> LogicalResult {
              if (failed(checkPaging(&op, attention.getBlocks(),
                                     attention.getBlockSize())))
                return failure();
              if (attention.getWindow() || attention.getSoftcap())
                return op.emitOpError()
                       << "with a sliding window or a soft cap has no SPIR-V "
                          "kernel yet";
              if (attention.getPositions() != positions_)
                return op.emitOpError() << "attends from positions that are "
                                           "not the step's own";
              if (attention.getHeadDim() > 256)
                return op.emitOpError()
                       << "has heads of " << attention.getHeadDim()
                       << "; the SPIR-V kernel takes at most 256";
              llm::KVCacheType cache = attention.getCache().getType();
              auto type = cast<RankedTensorType>(attention.getType());
              float scale =
                  attention.getScale()
                      ? attention.getScale()->convertToFloat()
                      : static_cast<float>(
                            1.0 / std::sqrt(double(attention.getHeadDim())));
              int out = activation(attention.getResult());
              int64_t heads = attention.getNumHeads();
              int64_t headDim = attention.getHeadDim();
              std::vector<ProgramValue> params = {
                  ProgramValue::fixed(heads),
                  ProgramValue::fixed(cache.getKvHeads()),
                  ProgramValue::fixed(headDim),
                  ProgramValue::fixed(cache.getCapacity()),
                  ProgramValue::keys(),
                  ProgramValue::fixed(floatBits(scale)),
                  ProgramValue::fixed(attention.getCausal() ? 1 : 0)};
              std::vector<int32_t> operands = {
                  buf(attention.getQuery()), buf(attention.getCache()),
                  buf(attention.getPositions()), buf(blockTable_)};
              // A decode step has one workgroup per head: over a long
              // context its keys are split over workgroups of
              // kKeysPerSplit keys, whose records a second kernel merges.
              auto paging = [&] {
                params.push_back(ProgramValue::fixed(blockSize_));
                params.push_back(tableStride());
                params.push_back(cacheFormat(cache));
              };
              if (type.isDynamicDim(0) ||
                  cache.getCapacity() <= kKeysPerSplit) {
                params.push_back(ProgramValue::fixed(0));
                paging();
                operands.push_back(out);
                dispatch("attention_f32", operands, params,
                         {rowsOf(type), ProgramValue::fixed(heads),
                          ProgramValue::fixed(1)});
                return success();
              }
              ProgramValue splits = ProgramValue::keys();
              splits.divisor = kKeysPerSplit;
              int64_t records = type.getDimSize(0) * heads *
                                ((cache.getCapacity() + kKeysPerSplit - 1) /
                                 kKeysPerSplit);
              int partial = scratch(records * (headDim + 2) * 4);
              params.push_back(ProgramValue::fixed(kKeysPerSplit));
              paging();
              operands.push_back(partial);
              dispatch("attention_f32", operands, params,
                       {rowsOf(type), ProgramValue::fixed(heads), splits});
              dispatch("attention_combine_f32", {partial, out},
                       {ProgramValue::fixed(heads),
                        ProgramValue::fixed(headDim), splits},
                       {rowsOf(type), ProgramValue::fixed(heads),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::LogitsOp logits) -> LogicalResult {
              if (logits.getSoftcap())
                return op.emitOpError()
                       << "with a soft cap has no SPIR-V program yet";
              FailureOr<int> w = weight(&op, logits.getOutput());
              FailureOr<std::string> format =
                  weightFormat(&op, logits.getOutput());
              if (failed(w) || failed(format))
                return failure();
              auto hidden = cast<RankedTensorType>(logits.getHidden().getType());
              auto weightType =
                  cast<RankedTensorType>(logits.getOutput().getType());
              int64_t vocab = weightType.getDimSize(0);
              // The last token's row, or every token's (a batch's step).
              bool every = logits.getAllTokens();
              ProgramValue rows =
                  every ? rowsOf(hidden) : ProgramValue::fixed(1);
              int out = addBuffer("logits", BufferRole::Logits,
                                  scaled(rows, vocab * 4));
              assign(logits.getResult(), out);
              ProgramValue firstRow = ProgramValue::fixed(0);
              if (!every) {
                firstRow = rowsOf(hidden);
                firstRow.constant -= 1;
              }
              std::vector<ProgramValue> params = {
                  rows, ProgramValue::fixed(weightType.getDimSize(1)),
                  ProgramValue::fixed(vocab), firstRow};
              std::string kernel = matmulKernel(*format, params);
              auto [columns, slices] = outputGrid(vocab);
              dispatch(kernel, {buf(logits.getHidden()), *w, out},
                       params, {columns, rows, slices});
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitOpError()
                     << "has no kernel in the SPIR-V library";
            });
    if (failed(lowered))
      return failure();
    if (missing_)
      return op.emitOpError()
             << "reads a value that lives on another device than "
             << program_.devices[device_].name
             << "; het-outline moves it with het.transfer";
    release(order_.lookup(&op));
    return success();
  }

  static FailureOr<int64_t> weightBytes(llm::GetWeightOp get) {
    auto type = cast<RankedTensorType>(get.getType());
    std::optional<hetrt::format::BlockFormat> format =
        llm::weightStorageFormat(type.getElementType());
    std::optional<int64_t> stored =
        format ? hetrt::format::storageBytes(*format, type.getNumElements())
               : std::nullopt;
    if (!stored)
      return get.emitOpError()
             << "has a weight type whose bytes no program can lay out";
    return *stored;
  }

  /// The program's index of `device`, added with its target on first use.
  FailureOr<int> deviceIndex(Operation *op, het::DeviceAttr device) {
    std::string name = device.getName().str();
    for (size_t i = 0; i < program_.devices.size(); ++i)
      if (program_.devices[i].name == name)
        return static_cast<int>(i);
    std::string target;
    if (device.getKind() == het::DeviceKind::cpu)
      target = "x86";
    else if (device.getKind() == het::DeviceKind::spirv)
      target = "spirv";
    else if (device.getKind() == het::DeviceKind::cuda)
      target = "nvptx";
    else if (device.getKind() == het::DeviceKind::hip)
      target = "amdgpu";
    else
      return op->emitOpError()
             << "runs on " << name << ", a "
             << het::stringifyDeviceKind(device.getKind())
             << " device; programs run segments on CPUs (x86) and on "
                "SPIR-V, CUDA and HIP GPUs";
    program_.devices.push_back({name, target});
    return static_cast<int>(program_.devices.size()) - 1;
  }

  /// A top-level op of a partitioned, outlined function: bookkeeping,
  /// weights, transfers and segments.
  LogicalResult lowerPlanned(Operation &op) {
    if (isa<arith::ConstantOp, tensor::DimOp, func::ReturnOp, het::WaitOp>(op))
      return success();
    if (auto get = dyn_cast<llm::GetWeightOp>(op)) {
      FailureOr<int64_t> bytes = weightBytes(get);
      if (failed(bytes))
        return failure();
      weights_[get.getResult()] = {get.getName().str(), *bytes};
      return success();
    }
    if (auto transfer = dyn_cast<het::TransferOp>(op))
      return lowerTransfer(transfer);
    auto segment = dyn_cast<het::SegmentOp>(op);
    if (!segment)
      return op.emitOpError()
             << "computes outside every segment; run het-outline first";
    FailureOr<int> device = deviceIndex(&op, segment.getDevice());
    if (failed(device))
      return failure();
    device_ = *device;
    // Each KV cache lives on the device of the first segment that reads it.
    for (auto &entry : kvNames_) {
      Value cache = entry.first;
      if (bufferOf_.count(cache))
        continue;
      bool used = false;
      segment.walk([&](Operation *inner) {
        used = used || llvm::is_contained(inner->getOperands(), cache);
      });
      if (used)
        bindCache(cache, device_);
    }
    // Every GPU target runs the same kernel library.
    return program_.devices[device_].target == "x86"
               ? lowerCpuSegment(segment)
               : lowerLibrarySegment(segment);
  }

  /// A value moved between memories: weights are uploaded where they are
  /// read, once; activations are copied each step.
  LogicalResult lowerTransfer(het::TransferOp transfer) {
    Value source = transfer.getSource();
    if (streams_.count(transfer.getResult()))
      return success();
    if (auto weight = weights_.find(source); weight != weights_.end()) {
      // CPU code reads the weight where it lives (the mapped file).
      weights_[transfer.getResult()] = weight->second;
      return success();
    }
    auto found = bufferOf_.find(source);
    auto type = dyn_cast<RankedTensorType>(source.getType());
    if (found == bufferOf_.end() || !type || !type.getElementType().isF32())
      return transfer.emitOpError()
             << "moves a value that is not an f32 activation a segment "
                "computed; programs move activations only";
    het::DeviceAttr target;
    Operation *user = nullptr;
    for (Operation *candidate : transfer.getResult().getUsers())
      if (auto segment = candidate->getParentOfType<het::SegmentOp>()) {
        target = segment.getDevice();
        user = candidate;
        break;
      }
    if (!target)
      return transfer.emitOpError()
             << "moves a value no segment reads";
    FailureOr<int> device = deviceIndex(user, target);
    if (failed(device))
      return failure();
    device_ = *device;
    int to = activation(transfer.getResult());
    ProgramStep step;
    step.kind = StepKind::Transfer;
    step.device = device_;
    step.buffers = {found->second, to};
    step.params = {program_.buffers[to].bytes};
    program_.steps.push_back(std::move(step));
    release(order_.lookup(transfer));
    return success();
  }

  /// The plan's unit of a weight (the embedding, a layer's attention or
  /// FFN, the output): the weights a unit streams are copied together.
  static size_t unitOf(const std::string &name) {
    cost::WeightInfo info;
    info.name = name;
    cost::classifyWeight(info);
    return cost::unitIndexOf(info, std::numeric_limits<size_t>::max());
  }

  /// Finds the weights GPU segments read from another device's memory (a
  /// het.transfer of an llm.get_weight into a segment that is not a CPU's)
  /// and groups them by unit, in order of first use over the function, so
  /// that reading one unit can send the next on its way, in whatever
  /// segment it is.
  void collectStreams() {
    for (Operation &op : function_.getBody().front()) {
      auto transfer = dyn_cast<het::TransferOp>(op);
      auto get = transfer ? transfer.getSource().getDefiningOp<llm::GetWeightOp>()
                          : nullptr;
      if (!get)
        continue;
      het::SegmentOp reader;
      for (Operation *user : transfer.getResult().getUsers())
        if ((reader = user->getParentOfType<het::SegmentOp>()))
          break;
      if (!reader || reader.getDevice().getKind() == het::DeviceKind::cpu)
        continue;
      Stream stream;
      stream.weight = get.getResult();
      stream.home = transfer.getFrom().getOwner().str();
      stream.unit = unitOf(get.getName().str());
      streams_[transfer.getResult()] = stream;
    }
    std::optional<size_t> groupUnit;
    function_.walk<WalkOrder::PreOrder>([&](Operation *op) {
      for (Value operand : op->getOperands()) {
        auto stream = streams_.find(operand);
        if (stream == streams_.end() || stream->second.group >= 0)
          continue;
        if (stream->second.unit != groupUnit) {
          streamGroups_.emplace_back();
          groupUnit = stream->second.unit;
        }
        stream->second.group = static_cast<int>(streamGroups_.size()) - 1;
        streamGroups_.back().push_back(operand);
      }
    });
  }

  /// Issues the copies of every streamed group up to `last` not yet issued:
  /// a reader of group g issues g + 1 too, so that the next unit's weights
  /// cross the link while this unit computes, into buffers the unit before
  /// has released (double buffering).
  void issueStreamsThrough(int last) {
    last = std::min(last, static_cast<int>(streamGroups_.size()) - 1);
    int saved = device_;
    for (; issuedGroups_ <= last; ++issuedGroups_)
      for (Value value : streamGroups_[issuedGroups_])
        issueStream(value);
    device_ = saved;
  }

  void issueStream(Value value) {
    const Stream &stream = streams_[value];
    int target = device_;
    for (Operation *user : value.getUsers())
      if (auto segment = user->getParentOfType<het::SegmentOp>()) {
        auto named = segmentDevices_.find(segment.getDevice().getName().str());
        FailureOr<int> index = deviceIndex(segment, named->second);
        if (succeeded(index))
          target = *index;
        break;
      }
    // The weight's home holds its buffer: a device of the program, or one
    // that only lends its memory.
    int homeIndex = -1;
    if (auto home = segmentDevices_.find(stream.home);
        home != segmentDevices_.end()) {
      FailureOr<int> index = deviceIndex(value.getDefiningOp(), home->second);
      homeIndex = succeeded(index) ? *index : -1;
    } else {
      for (size_t d = 0; d < program_.devices.size(); ++d)
        if (program_.devices[d].name == stream.home)
          homeIndex = static_cast<int>(d);
      if (homeIndex < 0) {
        program_.devices.push_back({stream.home, "host-memory"});
        homeIndex = static_cast<int>(program_.devices.size()) - 1;
      }
    }
    if (homeIndex < 0 || homeIndex == target) {
      weights_[value] = weights_.lookup(stream.weight);
      return;
    }
    device_ = homeIndex;
    int source = buf(stream.weight);
    device_ = target;
    ProgramValue bytes = program_.buffers[source].bytes;
    int slot = -1;
    for (auto it = streamFree_.begin(); it != streamFree_.end(); ++it)
      if (program_.buffers[*it].bytes == bytes &&
          program_.buffers[*it].device == target) {
        slot = *it;
        streamFree_.erase(it);
        break;
      }
    if (slot < 0) {
      // Named by size, so that the prefill and the decode programs, which
      // stream the same weights, share their buffers.
      int sameSize = llvm::count_if(streamBuffers_, [&](int other) {
        return program_.buffers[other].bytes == bytes &&
               program_.buffers[other].device == target;
      });
      slot = addBuffer("stream." + std::to_string(bytes.constant) + "." +
                           std::to_string(sameSize),
                       BufferRole::StreamedWeight, bytes);
      streamBuffers_.insert(slot);
    }
    live_.push_back(slot);
    assign(value, slot);
    ProgramStep step;
    step.kind = StepKind::Transfer;
    step.device = target;
    step.buffers = {source, slot};
    step.params = {bytes};
    program_.steps.push_back(std::move(step));
  }

  /// A GPU segment: each op a dispatch of the kernel library on its
  /// device; its results stay in the buffers of the values it yields.
  LogicalResult lowerLibrarySegment(het::SegmentOp segment) {
    Block &body = segment.getBody().front();
    for (Operation &op : body) {
      if (auto yield = dyn_cast<het::YieldOp>(op)) {
        for (auto [result, value] :
             llvm::zip(segment.getResults(), yield.getOperands()))
          assign(result, buf(value));
        release(order_.lookup(&op));
        continue;
      }
      if (failed(lower(op)))
        return failure();
    }
    return success();
  }

  /// Whether `op`, outside a CPU segment, is cloned into its function rather
  /// than passed in: bookkeeping and weights, which compute nothing.
  bool clonedIntoSegment(Operation *op) {
    return op && (isa<arith::ConstantOp, tensor::DimOp, llm::GetWeightOp>(op) ||
                  (isa<het::TransferOp>(op) &&
                   weights_.count(op->getResult(0))));
  }

  /// A CPU segment: extracted into a function of `segments_` that the x86
  /// target compiles, and run as one dispatch of it. Its arguments are the
  /// values it reads that are computed elsewhere (bookkeeping and weights
  /// are cloned in), its results those it yields; a KV cache it updates is
  /// updated in place.
  LogicalResult lowerCpuSegment(het::SegmentOp segment) {
    if (!segments_)
      return segment.emitOpError()
             << "runs on a CPU, but no module receives its code";
    std::string name = function_.getSymName().str() + "_seg" +
                       std::to_string(segmentsBuilt_++);
    // The values it reads from outside, in order of first use.
    llvm::SetVector<Value> captured;
    llvm::SetVector<Operation *> cloned;
    std::function<void(Value)> capture = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (def && segment->isAncestor(def))
        return;
      if (clonedIntoSegment(def)) {
        for (Value operand : def->getOperands())
          capture(operand);
        cloned.insert(def);
        return;
      }
      captured.insert(value);
    };
    segment.walk([&](Operation *op) {
      for (Value operand : op->getOperands())
        capture(operand);
    });

    OpBuilder builder = OpBuilder::atBlockEnd(segments_.getBody());
    auto yield = cast<het::YieldOp>(segment.getBody().front().getTerminator());
    SmallVector<Type> argumentTypes, resultTypes;
    for (Value value : captured)
      argumentTypes.push_back(value.getType());
    for (Value value : yield.getOperands())
      resultTypes.push_back(value.getType());
    auto function = func::FuncOp::create(
        builder, segment.getLoc(), name,
        builder.getFunctionType(argumentTypes, resultTypes));
    function->setAttr(hetrt::format::kSegmentEntryAttrName,
                      builder.getUnitAttr());
    Block *entry = function.addEntryBlock();
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(captured, entry->getArguments()))
      mapping.map(value, argument);
    builder.setInsertionPointToStart(entry);
    // Cloned bookkeeping in program order; a streamed weight's transfer is
    // the weight itself here, since the code reads the mapped file.
    llvm::SmallVector<Operation *> ordered(cloned.begin(), cloned.end());
    llvm::sort(ordered, [&](Operation *a, Operation *b) {
      return order_.lookup(a) < order_.lookup(b);
    });
    for (Operation *op : ordered) {
      if (auto transfer = dyn_cast<het::TransferOp>(op)) {
        mapping.map(transfer.getResult(),
                    mapping.lookupOrDefault(transfer.getSource()));
        continue;
      }
      builder.clone(*op, mapping);
    }
    bool readsWeights = llvm::any_of(ordered, [](Operation *op) {
      return isa<llm::GetWeightOp>(op);
    });
    for (Operation &op : segment.getBody().front().without_terminator())
      builder.clone(op, mapping);
    SmallVector<Value> returned;
    for (Value value : yield.getOperands())
      returned.push_back(mapping.lookupOrDefault(value));
    func::ReturnOp::create(builder, segment.getLoc(), returned);
    // The function runs on one device; where its weights live is the
    // program's business.
    function.walk([](Operation *op) {
      op->removeAttr(het::HetDialect::kPlacementAttrName);
      op->removeAttr(het::HetDialect::kMemorySpaceAttrName);
    });

    // The dispatch: the model file (when it reads weights), the arguments,
    // then the results that are not caches updated in place, as the x86
    // target's calling convention orders them; the sizes of their dynamic
    // dimensions (the step's tokens) as parameters.
    ProgramStep step;
    step.kind = StepKind::Dispatch;
    step.device = device_;
    step.kernel = name;
    auto addDynamicSizes = [&](Type type) -> LogicalResult {
      auto tensor = dyn_cast<RankedTensorType>(type);
      if (!tensor)
        return success();
      for (int64_t d = 0; d < tensor.getRank(); ++d) {
        if (!tensor.isDynamicDim(d))
          continue;
        if (d != 0)
          return segment.emitOpError()
                 << "passes a " << type
                 << " whose dynamic size is not its rows; programs size "
                    "dynamic dimensions by the step's tokens";
        step.params.push_back(ProgramValue::tokens());
      }
      return success();
    };
    if (readsWeights) {
      auto file = llvm::find_if(program_.buffers, [&](const ProgramBuffer &b) {
        return b.role == BufferRole::WeightFile && b.device == device_;
      });
      step.buffers.push_back(
          file != program_.buffers.end()
              ? static_cast<int>(file - program_.buffers.begin())
              : addBuffer("model-file", BufferRole::WeightFile,
                          ProgramValue::fixed(0)));
    }
    for (Value value : captured) {
      int buffer = buf(value);
      if (buffer < 0)
        return segment.emitOpError()
               << "reads a value that lives on another device than "
               << program_.devices[device_].name
               << "; het-outline moves it with het.transfer";
      step.buffers.push_back(buffer);
      // The block table's rows are the pool's size (and a batch's step has
      // one per token).
      if (value == blockTable_) {
        auto table = cast<RankedTensorType>(value.getType());
        for (int64_t d = 0; d < table.getRank(); ++d)
          if (table.isDynamicDim(d))
            step.params.push_back(d + 1 < table.getRank()
                                      ? ProgramValue::tokens()
                                      : ProgramValue::fixed(tableEntries_));
      } else if (failed(addDynamicSizes(value.getType()))) {
        return failure();
      }
    }
    for (auto [result, value] :
         llvm::zip(segment.getResults(), yield.getOperands())) {
      if (isa<llm::KVCacheType>(result.getType())) {
        // Updated in place: the buffer of the cache it appended to.
        Value cache = value;
        while (auto append = cache.getDefiningOp<llm::KVAppendOp>())
          cache = append.getCache();
        if (!bufferOf_.count(cache))
          return segment.emitOpError()
                 << "yields a KV cache that is not one of its arguments";
        assign(result, bufferOf_.lookup(cache));
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !type.getElementType().isF32())
        return segment.emitOpError()
               << "yields a " << result.getType()
               << "; programs pass f32 activations between segments";
      int out;
      if (value.getDefiningOp<llm::LogitsOp>()) {
        // The last token's row, or every token's (a batch's step).
        out = addBuffer("logits", BufferRole::Logits,
                        scaled(rowsOf(type), rowElements(type) * 4));
        assign(result, out);
      } else {
        out = activation(result);
      }
      step.buffers.push_back(out);
      if (failed(addDynamicSizes(type)))
        return failure();
    }
    program_.steps.push_back(std::move(step));
    int last = order_.lookup(segment);
    segment.walk([&](Operation *op) {
      last = std::max(last, order_.lookup(op));
    });
    release(last);
    return success();
  }

  /// The SwiGLU that `matmul`'s product feeds, where a decode step can
  /// compute it with both its products in one dispatch (matmul_glu_*): the
  /// gate and the up product each read only by the GLU, of one row block
  /// of the same input, with weights of one shape and format, in the same
  /// block. Else null.
  llm::GLUOp gatedPair(llm::MatmulOp matmul) {
    if (!matmul.getResult().hasOneUse())
      return nullptr;
    auto glu = dyn_cast<llm::GLUOp>(*matmul.getResult().user_begin());
    if (!glu || glu.getActivation() != llm::GatedActivation::silu ||
        glu.getGate() == glu.getUp())
      return nullptr;
    auto gate = glu.getGate().getDefiningOp<llm::MatmulOp>();
    auto up = glu.getUp().getDefiningOp<llm::MatmulOp>();
    if (!gate || !up || !gate.getResult().hasOneUse() ||
        !up.getResult().hasOneUse() || gate.getInput() != up.getInput() ||
        gate->getBlock() != glu->getBlock() ||
        up->getBlock() != glu->getBlock())
      return nullptr;
    auto type = cast<RankedTensorType>(gate.getType());
    if (type.getRank() != 2 || type.isDynamicDim(0))
      return nullptr;
    if (gate.getWeight().getType() != up.getWeight().getType())
      return nullptr;
    return glu;
  }

  /// The other product of `glu`'s pair than `matmul`.
  static Operation *otherProduct(llm::GLUOp glu, llm::MatmulOp matmul) {
    Operation *gate = glu.getGate().getDefiningOp();
    return gate == matmul.getOperation() ? glu.getUp().getDefiningOp() : gate;
  }

  /// A decode step's gate and up products and their SwiGLU as one dispatch,
  /// at the later product (the input is still live there).
  LogicalResult lowerGatedProducts(llm::GLUOp glu) {
    auto gate = glu.getGate().getDefiningOp<llm::MatmulOp>();
    auto up = glu.getUp().getDefiningOp<llm::MatmulOp>();
    FailureOr<int> gateWeight = weight(gate, gate.getWeight());
    FailureOr<int> upWeight = weight(up, up.getWeight());
    FailureOr<std::string> format = weightFormat(gate, gate.getWeight());
    if (failed(gateWeight) || failed(upWeight) || failed(format))
      return failure();
    auto type = cast<RankedTensorType>(gate.getType());
    auto weightType = cast<RankedTensorType>(gate.getWeight().getType());
    int64_t outputs = weightType.getDimSize(0);
    std::vector<ProgramValue> params = {
        rowsOf(type), ProgramValue::fixed(weightType.getDimSize(1)),
        ProgramValue::fixed(outputs), ProgramValue::fixed(0)};
    std::string kernel = "matmul_glu_f32";
    if (*format != "f32") {
      kernel = "matmul_glu_bytes";
      params.push_back(ProgramValue::fixed(byteFormatCode(*format)));
    }
    int out = activation(glu.getResult());
    auto [columns, slices] = outputGrid(outputs);
    dispatch(kernel, {buf(gate.getInput()), *gateWeight, *upWeight, out},
             params, {columns, rowsOf(type), slices});
    fusedGlus_.insert(glu);
    return success();
  }

  /// On NVIDIA and AMD GPUs, the three decode products of one input that
  /// one dispatch computes (matmul3_*: a layer's query, key and value
  /// projections), in program order, where `matmul` is one of them: the
  /// input's only readers that are products outside a gated pair, with
  /// weights of one format, in the same block, and no reader of their
  /// results before the last. Else empty. (Eight buffers are more than
  /// the smallest Vulkan devices bind.)
  SmallVector<llm::MatmulOp, 3> productTriple(llm::MatmulOp matmul) {
    const std::string &target = program_.devices[device_].target;
    if (target != "nvptx" && target != "amdgpu")
      return {};
    auto decodeProduct = [&](llm::MatmulOp product) {
      auto type = cast<RankedTensorType>(product.getType());
      return type.getRank() == 2 && !type.isDynamicDim(0) &&
             !gatedPair(product) && product->getBlock() == matmul->getBlock() &&
             cast<RankedTensorType>(product.getWeight().getType())
                     .getElementType() ==
                 cast<RankedTensorType>(matmul.getWeight().getType())
                     .getElementType();
    };
    SmallVector<llm::MatmulOp, 3> products;
    for (Operation *user : matmul.getInput().getUsers()) {
      auto product = dyn_cast<llm::MatmulOp>(user);
      if (!product || product.getInput() != matmul.getInput())
        continue;
      if (!decodeProduct(product) || products.size() == 3)
        return {};
      if (!llvm::is_contained(products, product))
        products.push_back(product);
    }
    if (products.size() != 3)
      return {};
    llvm::sort(products, [&](llm::MatmulOp a, llm::MatmulOp b) {
      return order_.lookup(a) < order_.lookup(b);
    });
    int last = order_.lookup(products.back());
    for (llm::MatmulOp product : products)
      for (Operation *reader : product.getResult().getUsers())
        if (order_.lookup(reader) <= last)
          return {};
    return products;
  }

  /// Three decode products of one input as one dispatch, at the last of
  /// them (the input is still live there).
  LogicalResult lowerProductTriple(SmallVector<llm::MatmulOp, 3> products) {
    llm::MatmulOp first = products.front();
    SmallVector<int32_t, 8> buffers = {buf(first.getInput())};
    SmallVector<int64_t, 3> outputs;
    for (llm::MatmulOp product : products) {
      FailureOr<int> w = weight(product, product.getWeight());
      if (failed(w))
        return failure();
      buffers.push_back(*w);
      outputs.push_back(
          cast<RankedTensorType>(product.getWeight().getType()).getDimSize(0));
    }
    FailureOr<std::string> format = weightFormat(first, first.getWeight());
    if (failed(format))
      return failure();
    for (llm::MatmulOp product : products)
      buffers.push_back(activation(product.getResult()));
    auto type = cast<RankedTensorType>(first.getType());
    auto weightType = cast<RankedTensorType>(first.getWeight().getType());
    int64_t total = outputs[0] + outputs[1] + outputs[2];
    std::vector<ProgramValue> params = {
        rowsOf(type), ProgramValue::fixed(weightType.getDimSize(1)),
        ProgramValue::fixed(total), ProgramValue::fixed(0),
        ProgramValue::fixed(outputs[0]), ProgramValue::fixed(outputs[1])};
    std::string kernel = "matmul3_f32";
    if (*format != "f32") {
      kernel = "matmul3_bytes";
      params.push_back(ProgramValue::fixed(byteFormatCode(*format)));
    }
    auto [columns, slices] = outputGrid(total);
    dispatch(kernel, std::vector<int32_t>(buffers.begin(), buffers.end()),
             params, {columns, rowsOf(type), slices});
    return success();
  }

  /// The RMSNorm of `add`'s sum that can run in the add's dispatch
  /// (add_rms_norm_f32): one of rows, without an offset, later in the same
  /// block; else null.
  llm::RMSNormOp normOfSum(llm::AddOp add) {
    auto type = cast<RankedTensorType>(add.getType());
    if (type.getRank() != 2)
      return nullptr;
    for (Operation *user : add.getResult().getUsers()) {
      auto norm = dyn_cast<llm::RMSNormOp>(user);
      if (norm && norm.getInput() == add.getResult() &&
          !norm.getUnitOffset() && norm->getBlock() == add->getBlock() &&
          norm.getType() == add.getType())
        return norm;
    }
    return nullptr;
  }

  /// A residual add and the RMSNorm of its sum as one dispatch, which
  /// writes both: later layers read the sum too.
  LogicalResult lowerAddRmsNorm(llm::AddOp add, llm::RMSNormOp norm) {
    FailureOr<int> w = weight(norm.getOperation(), norm.getWeight());
    if (failed(w))
      return failure();
    auto type = cast<RankedTensorType>(add.getType());
    int sum = activation(add.getResult());
    int normed = activation(norm.getResult());
    dispatch("add_rms_norm_f32",
             {buf(add.getLhs()), buf(add.getRhs()), *w, sum, normed},
             {ProgramValue::fixed(type.getDimSize(1)),
              ProgramValue::fixed(
                  floatBits(norm.getEpsilon().convertToFloat()))},
             {rowsOf(type), ProgramValue::fixed(1), ProgramValue::fixed(1)});
    fusedNorms_.insert(norm);
    return success();
  }

  LogicalResult lowerRope(llm::RoPEOp rope) {
    Operation *op = rope.getOperation();
    if (rope.getScaling() && *rope.getScaling() != llm::RopeScaling::linear)
      return op->emitOpError() << "with "
                               << llm::stringifyRopeScaling(*rope.getScaling())
                               << " scaling has no SPIR-V program yet";
    if (rope.getPositions() != positions_)
      return op->emitOpError() << "rotates by positions that are not the "
                                  "step's own";
    auto type = cast<RankedTensorType>(rope.getType());
    int64_t headDim = type.getDimSize(2);
    int64_t rotary = static_cast<int64_t>(rope.getRotaryDim());
    float theta = rope.getTheta().convertToFloat();
    float positionScale =
        rope.getScalingFactor()
            ? static_cast<float>(1.0 /
                                 rope.getScalingFactor()->convertToDouble())
            : 1.0f;
    std::optional<int> factors;
    if (rope.getFreqFactors()) {
      FailureOr<int> w = weight(op, rope.getFreqFactors());
      if (failed(w))
        return failure();
      factors = *w;
    }
    // One table per angle set: the queries and keys of every layer share it.
    auto key = std::make_tuple(floatBits(theta), rotary, headDim,
                               floatBits(positionScale), factors.value_or(-1),
                               device_);
    auto found = ropeTables_.find(key);
    int table;
    if (found != ropeTables_.end()) {
      table = found->second;
    } else {
      table = addBuffer("rope." + std::to_string(ropeTables_.size()),
                        BufferRole::RopeTable,
                        scaled(rowsOf(type), (headDim / 2) * 2 * 4));
      ropeTables_[key] = table;
      ProgramStep step;
      step.kind = StepKind::RopeTable;
      step.device = device_;
      step.buffers = {table, buf(positions_)};
      if (factors)
        step.buffers.push_back(*factors);
      step.ropeTheta = theta;
      step.rotaryDim = rotary;
      step.headDim = headDim;
      step.positionScale = positionScale;
      program_.steps.push_back(std::move(step));
    }
    int mode = rope.getMode() == llm::RopeMode::neox ? 1 : 0;
    // Keys that only a KV append reads are rotated as the append writes
    // them (rope_kv_append_f32): the rotation's result is the unrotated
    // keys' buffer, read until the append.
    if (rope.getResult().hasOneUse()) {
      auto append = dyn_cast<llm::KVAppendOp>(*rope.getResult().user_begin());
      if (append && append.getKeys() == rope.getResult() &&
          append->getBlock() == op->getBlock()) {
        assign(rope.getResult(), buf(rope.getInput()));
        rotatedKeys_[rope.getResult()] = {table, headDim, rotary, mode};
        return success();
      }
    }
    int out = activation(rope.getResult());
    dispatch("rope_f32", {buf(rope.getInput()), table, out},
             {ProgramValue::fixed(type.getDimSize(1)),
              ProgramValue::fixed(headDim), ProgramValue::fixed(rotary),
              ProgramValue::fixed(mode)},
             {rowsOf(type), ProgramValue::fixed(type.getDimSize(1)),
              ProgramValue::fixed(1)});
    return success();
  }

  func::FuncOp function_;
  ModuleOp segments_;
  bool planned_;
  Program program_;
  Value tokens_, positions_;
  /// The block table and its layout (findBlockTable).
  Value blockTable_;
  int64_t blockSize_ = 0;
  int64_t tableEntries_ = 0;
  /// Whether each token is a sequence of its own, with a table row of its
  /// own (a batch's decode step).
  bool perToken_ = false;
  /// The kernels' table_stride: a row per token, or one table.
  ProgramValue tableStride() const {
    return ProgramValue::fixed(perToken_ ? tableEntries_ : 0);
  }
  /// The device whose buffers and steps are being built.
  int device_ = 0;
  /// A step read a value with no buffer on its device.
  bool missing_ = false;
  llvm::DenseMap<Value, int> bufferOf_;
  /// Buffers of token ids, positions and weights on devices other than
  /// their first, by (value, device).
  std::map<std::pair<const void *, int>, int> copies_;
  /// Weights of a planned program, by the values that read them: tensor
  /// name and bytes (a buffer per device that reads them).
  llvm::DenseMap<Value, std::pair<std::string, int64_t>> weights_;
  llvm::DenseMap<Value, std::string> kvNames_;
  llvm::DenseMap<Operation *, int> order_;
  llvm::DenseMap<Value, int> lastUse_;
  llvm::DenseMap<int, int> bufferLastUse_;
  /// Activation buffers in use, and free ones.
  std::vector<int> live_, free_;
  /// A weight a GPU segment reads from another device's memory (the plan's
  /// streamed weights): copied into a buffer of the reading device before
  /// its use, a unit ahead, so that the copy overlaps the unit before.
  struct Stream {
    /// The llm.get_weight value, whose buffer lives on `home`.
    Value weight;
    std::string home;
    /// The plan's unit, whose copies are issued together.
    size_t unit = 0;
    int group = -1;
  };
  /// By the het.transfer result the segment reads.
  llvm::MapVector<Value, Stream> streams_;
  /// The streamed values of each group, groups in order of first use.
  std::vector<std::vector<Value>> streamGroups_;
  int issuedGroups_ = 0;
  /// Buffers that receive streamed weights, and free ones: a buffer is
  /// reused by a weight of its size once its reader has run.
  llvm::DenseSet<int> streamBuffers_;
  std::vector<int> streamFree_;
  /// The device of every segment of the function, by name.
  std::map<std::string, het::DeviceAttr> segmentDevices_;
  int segmentsBuilt_ = 0;
  /// The scratch buffer of each device.
  std::map<int, int> scratch_;
  int activations_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int, int>, int>
      ropeTables_;
  /// Keys whose rotation a KV append does as it writes them: the rope
  /// table buffer and the rotation's shape.
  struct RotatedKeys {
    int table;
    int64_t headDim;
    int64_t rotary;
    int mode;
  };
  llvm::DenseMap<Value, RotatedKeys> rotatedKeys_;
  /// RMSNorms dispatched with the residual add before them.
  llvm::DenseSet<Operation *> fusedNorms_;
  /// SwiGLUs dispatched with their gate and up products.
  llvm::DenseSet<Operation *> fusedGlus_;
};

std::string describeValue(const ProgramValue &value) {
  std::ostringstream out;
  bool any = false;
  auto term = [&](int64_t factor, const char *symbol) {
    if (factor == 0)
      return;
    if (any)
      out << (factor < 0 ? " - " : " + ");
    else if (factor < 0)
      out << "-";
    int64_t magnitude = factor < 0 ? -factor : factor;
    if (magnitude != 1 || !*symbol)
      out << magnitude;
    out << symbol;
    any = true;
  };
  term(value.perToken, "t");
  term(value.perKey, "k");
  term(value.constant, "");
  if (!any)
    out << "0";
  if (value.divisor == 1)
    return out.str();
  return "ceil((" + out.str() + ") / " + std::to_string(value.divisor) + ")";
}

const char *roleName(BufferRole role) {
  switch (role) {
  case BufferRole::Tokens:
    return "tokens";
  case BufferRole::Positions:
    return "positions";
  case BufferRole::Weight:
    return "weight";
  case BufferRole::Activation:
    return "activation";
  case BufferRole::KvCache:
    return "kv-cache";
  case BufferRole::RopeTable:
    return "rope-table";
  case BufferRole::Logits:
    return "logits";
  case BufferRole::WeightFile:
    return "weight-file";
  case BufferRole::StreamedWeight:
    return "streamed-weight";
  case BufferRole::BlockTable:
    return "block-table";
  }
  return "?";
}

/// Gives each transfer between devices its Wait step: on the target's
/// device, just before the first step that touches the target (so the
/// copy overlaps the target's steps in between), or at the end.
void addWaits(Program &program) {
  std::vector<ProgramStep> steps;
  // Targets not yet waited for: buffer → the transfer's index in `steps`.
  std::map<int32_t, int32_t> pending;
  auto waitFor = [&](int32_t buffer) {
    auto found = pending.find(buffer);
    if (found == pending.end())
      return;
    ProgramStep wait;
    wait.kind = StepKind::Wait;
    wait.device = program.buffers[buffer].device;
    wait.transfer = found->second;
    steps.push_back(std::move(wait));
    pending.erase(found);
  };
  for (ProgramStep &step : program.steps) {
    for (int32_t buffer : step.buffers)
      waitFor(buffer);
    bool crosses = step.kind == StepKind::Transfer &&
                   program.buffers[step.buffers[0]].device != step.device;
    if (crosses)
      pending[step.buffers[1]] = static_cast<int32_t>(steps.size());
    steps.push_back(std::move(step));
  }
  while (!pending.empty())
    waitFor(pending.begin()->first);
  program.steps = std::move(steps);
}

} // namespace

FailureOr<Program> buildProgram(func::FuncOp function) {
  return Builder(function, nullptr, /*planned=*/false).build();
}

FailureOr<Program> buildPlannedProgram(func::FuncOp function,
                                       ModuleOp segments) {
  return Builder(function, segments, /*planned=*/true).build();
}

std::string describeProgram(const Program &program) {
  std::ostringstream out;
  bool several = program.devices.size() > 1;
  auto on = [&](int device) {
    return several ? " on " + program.devices[device].name : std::string();
  };
  out << program.buffers.size() << " buffers, " << program.steps.size()
      << " steps";
  if (several) {
    out << " over";
    for (const abi::ProgramDevice &device : program.devices)
      out << " " << device.name << " (" << device.target << ")";
  }
  out << "\n";
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ProgramBuffer &buffer = program.buffers[i];
    out << "  buffer " << i << " " << buffer.name << on(buffer.device) << ": "
        << roleName(buffer.role) << ", "
        << (buffer.role == BufferRole::WeightFile
                ? std::string("the model file's tensor data")
                : describeValue(buffer.bytes) + " bytes")
        << "\n";
  }
  for (const ProgramStep &step : program.steps) {
    std::ostringstream buffers;
    for (size_t i = 0; i < step.buffers.size(); ++i)
      buffers << (i ? ", " : "") << program.buffers[step.buffers[i]].name;
    if (step.kind == StepKind::Transfer) {
      const ProgramBuffer &from = program.buffers[step.buffers[0]];
      out << "  transfer " << from.name << on(from.device) << " -> "
          << program.buffers[step.buffers[1]].name << on(step.device) << ", "
          << describeValue(step.params[0]) << " bytes\n";
      continue;
    }
    if (step.kind == StepKind::Wait) {
      out << "  wait" << on(step.device) << " for the transfer into "
          << program.buffers[program.steps[step.transfer].buffers[1]].name
          << " (step " << step.transfer << ")\n";
      continue;
    }
    if (step.kind == StepKind::RopeTable) {
      out << "  rope-table" << on(step.device) << " (" << buffers.str()
          << ") theta " << step.ropeTheta << ", rotary " << step.rotaryDim
          << " of " << step.headDim << ", position scale "
          << step.positionScale << "\n";
      continue;
    }
    out << "  dispatch " << step.kernel << on(step.device) << " ("
        << buffers.str() << ") grid [" << describeValue(step.grid[0]) << ", "
        << describeValue(step.grid[1]) << ", " << describeValue(step.grid[2])
        << "] params [";
    for (size_t i = 0; i < step.params.size(); ++i)
      out << (i ? ", " : "") << describeValue(step.params[i]);
    out << "]\n";
  }
  return out.str();
}

} // namespace hetc::spirv
