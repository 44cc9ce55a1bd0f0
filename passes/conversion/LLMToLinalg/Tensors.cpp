// Small tensor-building helpers shared by the llm → linalg patterns.
#include "Patterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace hetc::conversion {

SmallVector<OpFoldResult> getMixedSizes(OpBuilder &b, Location loc,
                                        Value tensor) {
  return tensor::getMixedSizes(b, loc, tensor);
}

Value f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value indexConstant(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

Value createFilled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                   Type elementType, double value) {
  Value empty = tensor::EmptyOp::create(b, loc, sizes, elementType);
  Value fill = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(elementType, value));
  return linalg::FillOp::create(b, loc, ValueRange{fill}, ValueRange{empty})
      .getResult(0);
}

arith::FastMathFlagsAttr accumulationFastMath(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}

Value multiplyAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs,
                         Value accumulator) {
  if (!rhs.getType().isF32())
    rhs = arith::ExtFOp::create(b, loc, b.getF32Type(), rhs);
  auto fastMath = accumulationFastMath(b);
  Value product = arith::MulFOp::create(b, loc, lhs, rhs, fastMath);
  return arith::AddFOp::create(b, loc, accumulator, product, fastMath);
}

AffineMap identityMap(MLIRContext *ctx, unsigned rank) {
  return AffineMap::getMultiDimIdentityMap(rank, ctx);
}

} // namespace hetc::conversion
