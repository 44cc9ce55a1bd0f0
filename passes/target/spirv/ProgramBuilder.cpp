#include "passes/target/spirv/ProgramBuilder.h"

#include "dialects/llm/LLMOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cmath>
#include <cstring>
#include <map>
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
  explicit Builder(func::FuncOp function) : function_(function) {}

  FailureOr<Program> build() {
    Block &body = function_.getBody().front();
    if (function_.getNumArguments() < 2)
      return function_.emitOpError()
             << "has no token and position arguments; a program runs a "
                "model's prefill or decode";
    bind(function_.getArgument(0), "tokens", BufferRole::Tokens);
    bind(function_.getArgument(1), "positions", BufferRole::Positions);
    positions_ = function_.getArgument(1);
    for (unsigned i = 2; i < function_.getNumArguments(); ++i) {
      auto cache = dyn_cast<llm::KVCacheType>(function_.getArgument(i).getType());
      if (!cache)
        return function_.emitOpError()
               << "argument " << i << " is not a KV cache";
      if (!cache.getElementType().isF32())
        return function_.emitOpError()
               << "argument " << i << ": the SPIR-V target keeps f32 KV "
               << "caches only";
      int64_t bytes = 2 * cache.getCapacity() * cache.getKvHeads() *
                      cache.getHeadDim() * 4;
      bind(function_.getArgument(i), "kv." + std::to_string(i - 2),
           BufferRole::KvCache, ProgramValue::fixed(bytes));
    }
    // The op after which each buffer's last reader has run.
    for (Operation &op : body)
      for (Value operand : op.getOperands())
        lastUse_[operand] = &op;
    for (Operation &op : body)
      if (failed(lower(op)))
        return failure();
    return std::move(program_);
  }

private:
  int addBuffer(const std::string &name, BufferRole role, ProgramValue bytes,
                const std::string &weight = "") {
    program_.buffers.push_back({name, role, bytes, weight});
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  void bind(Value value, const std::string &name, BufferRole role,
            ProgramValue bytes = ProgramValue::tokens(4)) {
    assign(value, addBuffer(name, role, bytes));
  }

  /// A buffer for an f32 activation: a free one of the same size, or new.
  int activation(Value value) {
    auto type = cast<RankedTensorType>(value.getType());
    ProgramValue bytes = scaled(rowsOf(type), rowElements(type) * 4);
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (program_.buffers[*it].bytes == bytes) {
        int buffer = *it;
        free_.erase(it);
        assign(value, buffer);
        return buffer;
      }
    int buffer = addBuffer("act." + std::to_string(activations_++),
                           BufferRole::Activation, bytes);
    assign(value, buffer);
    return buffer;
  }

  /// `value` lives in `buffer`; the buffer is read until the last reader
  /// of any value in it (a reshaped view shares its source's buffer).
  void assign(Value value, int buffer) {
    bufferOf_[value] = buffer;
    Operation *reader = lastUse_.lookup(value);
    Operation *&last = bufferLastUse_[buffer];
    if (reader && (!last || last->isBeforeInBlock(reader)))
      last = reader;
  }

  /// Activation buffers whose last reader is `op` are free after it.
  void release(Operation &op) {
    for (Value operand : op.getOperands()) {
      auto found = bufferOf_.find(operand);
      if (found == bufferOf_.end())
        continue;
      int buffer = found->second;
      if (program_.buffers[buffer].role == BufferRole::Activation &&
          bufferLastUse_.lookup(buffer) == &op &&
          llvm::find(free_, buffer) == free_.end())
        free_.push_back(buffer);
    }
  }

  FailureOr<int> weight(Operation *op, Value value) {
    auto get = value.getDefiningOp<llm::GetWeightOp>();
    if (!get)
      return op->emitOpError()
             << "reads a weight that is not an llm.get_weight";
    return bufferOf_.lookup(value);
  }

  /// The kernel suffix of a weight's storage format ("f32", "q4_k", ...):
  /// the library reads every format the llm dialect stores.
  FailureOr<std::string> weightFormat(Operation *op, Value value) {
    Type element = cast<RankedTensorType>(value.getType()).getElementType();
    if (std::optional<hetrt::format::BlockFormat> format =
            llm::weightStorageFormat(element))
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
                              : 5;
  }

  /// The matmul kernel of a weight format and its parameters past
  /// [N, K, M, x_row].
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
    ProgramStep step;
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
    dispatch(kernel, {bufferOf_.lookup(lhs), bufferOf_.lookup(rhs), out},
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
      auto type = cast<RankedTensorType>(get.getType());
      std::optional<hetrt::format::BlockFormat> format =
          llm::weightStorageFormat(type.getElementType());
      std::optional<int64_t> stored =
          format ? hetrt::format::storageBytes(*format, type.getNumElements())
                 : std::nullopt;
      if (!stored)
        return get.emitOpError()
               << "has a weight type whose bytes the SPIR-V target cannot "
                  "lay out";
      int64_t bytes = *stored;
      std::string name = get.getName().str();
      assign(get.getResult(),
             addBuffer(name, BufferRole::Weight, ProgramValue::fixed(bytes), name));
      return success();
    }
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
      // Buffers are flat: a reshape is the same buffer.
      assign(op.getResult(0), bufferOf_.lookup(op.getOperand(0)));
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
                       {*table, bufferOf_.lookup(embedding.getTokens()), out},
                       params,
                       {rowsOf(type), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::RMSNormOp norm) -> LogicalResult {
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
                       {bufferOf_.lookup(norm.getInput()), *w, out},
                       {ProgramValue::fixed(type.getDimSize(1)),
                        ProgramValue::fixed(floatBits(
                            norm.getEpsilon().convertToFloat()))},
                       {rowsOf(type), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::MatmulOp matmul) {
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
              std::vector<ProgramValue> params = {
                  rows, ProgramValue::fixed(weightType.getDimSize(1)),
                  ProgramValue::fixed(weightType.getDimSize(0)),
                  ProgramValue::fixed(0)};
              std::string kernel = matmulKernel(*format, params);
              dispatch(kernel, {bufferOf_.lookup(matmul.getInput()), *w, out},
                       params,
                       {ProgramValue::fixed(weightType.getDimSize(0)), rows,
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::AddOp add) {
              elementwise("add_f32", add.getLhs(), add.getRhs(),
                          add.getResult());
              return success();
            })
            .Case([&](llm::GLUOp glu) -> LogicalResult {
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
              if (append.getPositions() != positions_)
                return op.emitOpError() << "writes at positions that are not "
                                           "the step's own";
              llm::KVCacheType cache = append.getCache().getType();
              int buffer = bufferOf_.lookup(append.getCache());
              auto keys = cast<RankedTensorType>(append.getKeys().getType());
              dispatch("kv_append_f32",
                       {bufferOf_.lookup(append.getKeys()),
                        bufferOf_.lookup(append.getValues()),
                        bufferOf_.lookup(append.getPositions()), buffer},
                       {ProgramValue::fixed(cache.getKvHeads() *
                                            cache.getHeadDim()),
                        ProgramValue::fixed(cache.getCapacity())},
                       {rowsOf(keys), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              assign(append.getResult(), buffer);
              return success();
            })
            .Case([&](llm::AttentionOp attention) -> LogicalResult {
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
              dispatch("attention_f32",
                       {bufferOf_.lookup(attention.getQuery()),
                        bufferOf_.lookup(attention.getCache()),
                        bufferOf_.lookup(attention.getPositions()), out},
                       {ProgramValue::fixed(attention.getNumHeads()),
                        ProgramValue::fixed(cache.getKvHeads()),
                        ProgramValue::fixed(attention.getHeadDim()),
                        ProgramValue::fixed(cache.getCapacity()),
                        ProgramValue::keys(),
                        ProgramValue::fixed(floatBits(scale)),
                        ProgramValue::fixed(attention.getCausal() ? 1 : 0)},
                       {rowsOf(type),
                        ProgramValue::fixed(attention.getNumHeads()),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Case([&](llm::LogitsOp logits) -> LogicalResult {
              if (logits.getAllTokens() || logits.getSoftcap())
                return op.emitOpError()
                       << "of every token or with a soft cap has no SPIR-V "
                          "program yet";
              FailureOr<int> w = weight(&op, logits.getOutput());
              FailureOr<std::string> format =
                  weightFormat(&op, logits.getOutput());
              if (failed(w) || failed(format))
                return failure();
              auto hidden = cast<RankedTensorType>(logits.getHidden().getType());
              auto weightType =
                  cast<RankedTensorType>(logits.getOutput().getType());
              int64_t vocab = weightType.getDimSize(0);
              int out = addBuffer("logits", BufferRole::Logits,
                                  ProgramValue::fixed(vocab * 4));
              assign(logits.getResult(), out);
              ProgramValue lastRow = rowsOf(hidden);
              lastRow.constant -= 1;
              std::vector<ProgramValue> params = {
                  ProgramValue::fixed(1),
                  ProgramValue::fixed(weightType.getDimSize(1)),
                  ProgramValue::fixed(vocab), lastRow};
              std::string kernel = matmulKernel(*format, params);
              dispatch(kernel, {bufferOf_.lookup(logits.getHidden()), *w, out},
                       params,
                       {ProgramValue::fixed(vocab), ProgramValue::fixed(1),
                        ProgramValue::fixed(1)});
              return success();
            })
            .Default([&](Operation *other) {
              return other->emitOpError()
                     << "has no kernel in the SPIR-V library";
            });
    if (failed(lowered))
      return failure();
    release(op);
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
                               floatBits(positionScale), factors.value_or(-1));
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
      step.buffers = {table, bufferOf_.lookup(positions_)};
      if (factors)
        step.buffers.push_back(*factors);
      step.ropeTheta = theta;
      step.rotaryDim = rotary;
      step.headDim = headDim;
      step.positionScale = positionScale;
      program_.steps.push_back(std::move(step));
    }
    int out = activation(rope.getResult());
    dispatch("rope_f32", {bufferOf_.lookup(rope.getInput()), table, out},
             {ProgramValue::fixed(type.getDimSize(1)),
              ProgramValue::fixed(headDim), ProgramValue::fixed(rotary),
              ProgramValue::fixed(rope.getMode() == llm::RopeMode::neox ? 1
                                                                        : 0)},
             {rowsOf(type), ProgramValue::fixed(type.getDimSize(1)),
              ProgramValue::fixed(1)});
    return success();
  }

  func::FuncOp function_;
  Program program_;
  Value positions_;
  llvm::DenseMap<Value, int> bufferOf_;
  llvm::DenseMap<Value, Operation *> lastUse_;
  llvm::DenseMap<int, Operation *> bufferLastUse_;
  std::vector<int> free_;
  int activations_ = 0;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int>, int>
      ropeTables_;
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
  }
  return "?";
}

} // namespace

FailureOr<Program> buildProgram(func::FuncOp function) {
  return Builder(function).build();
}

std::string describeProgram(const Program &program) {
  std::ostringstream out;
  out << program.buffers.size() << " buffers, " << program.steps.size()
      << " steps\n";
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const ProgramBuffer &buffer = program.buffers[i];
    out << "  buffer " << i << " " << buffer.name << ": "
        << roleName(buffer.role) << ", " << describeValue(buffer.bytes)
        << " bytes\n";
  }
  for (const ProgramStep &step : program.steps) {
    std::ostringstream buffers;
    for (size_t i = 0; i < step.buffers.size(); ++i)
      buffers << (i ? ", " : "") << program.buffers[step.buffers[i]].name;
    if (step.kind == StepKind::RopeTable) {
      out << "  rope-table (" << buffers.str() << ") theta " << step.ropeTheta
          << ", rotary " << step.rotaryDim << " of " << step.headDim
          << ", position scale " << step.positionScale << "\n";
      continue;
    }
    out << "  dispatch " << step.kernel << " (" << buffers.str() << ") grid ["
        << describeValue(step.grid[0]) << ", " << describeValue(step.grid[1])
        << ", " << describeValue(step.grid[2]) << "] params [";
    for (size_t i = 0; i < step.params.size(); ++i)
      out << (i ? ", " : "") << describeValue(step.params[i]);
    out << "]\n";
  }
  return out.str();
}

} // namespace hetc::spirv
