// Shape, storage-size and verification helpers shared across the llm dialect.
#include "dialects/llm/LLMShapes.h"
#include "dialects/llm/LLMTypes.h"

#include "mlir/IR/Diagnostics.h"

#include <string>

using namespace mlir;

namespace hetc::llm {

std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

bool areDimsCompatible(int64_t lhs, int64_t rhs) {
  return ShapedType::isDynamic(lhs) || ShapedType::isDynamic(rhs) || lhs == rhs;
}

int64_t resolveDim(int64_t dim, int64_t dynamicSize) {
  return ShapedType::isDynamic(dim) ? dynamicSize : dim;
}

int64_t getNumElements(ShapedType type, int64_t dynamicSize) {
  int64_t count = 1;
  for (int64_t dim : type.getShape())
    count *= resolveDim(dim, dynamicSize);
  return count;
}

std::optional<int64_t> getStorageBytes(Type elementType, int64_t numElements) {
  if (auto quant = dyn_cast<QuantType>(elementType)) {
    if (numElements % quant.getBlockSize() != 0)
      return std::nullopt;
    return numElements / quant.getBlockSize() * quant.getBytesPerBlock();
  }
  if (elementType.isIntOrFloat())
    return numElements * ((elementType.getIntOrFloatBitWidth() + 7) / 8);
  return std::nullopt;
}

int64_t getRowBytes(ShapedType type) {
  int64_t rowLength = type.getRank() == 0 ? 1 : type.getShape().back();
  return getStorageBytes(type.getElementType(), rowLength).value_or(0);
}

int64_t getTensorBytes(ShapedType type, int64_t dynamicSize) {
  int64_t rowLength = type.getRank() == 0 ? 1 : type.getShape().back();
  int64_t rows = getNumElements(type, dynamicSize) /
                 std::max<int64_t>(1, resolveDim(rowLength, dynamicSize));
  std::optional<int64_t> rowBytes = getStorageBytes(
      type.getElementType(), resolveDim(rowLength, dynamicSize));
  return rows * rowBytes.value_or(0);
}

LogicalResult verifyBlockAligned(Operation *op, StringRef what,
                                 ShapedType type) {
  auto quant = dyn_cast<QuantType>(type.getElementType());
  if (!quant)
    return success();
  if (type.getRank() == 0)
    return op->emitOpError()
           << "expects " << what << " to have an innermost dimension holding "
           << stringifyQuantFormat(quant.getFormat())
           << " blocks, got a rank-0 tensor";
  int64_t inner = type.getShape().back();
  if (ShapedType::isDynamic(inner) || inner % quant.getBlockSize() == 0)
    return success();
  return op->emitOpError() << "expects the inner dimension of " << what << " ("
                           << inner << ") to be a multiple of the "
                           << stringifyQuantFormat(quant.getFormat())
                           << " block size (" << quant.getBlockSize() << ")";
}

LogicalResult verifyRank(Operation *op, StringRef what, ShapedType type,
                         int64_t rank) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << "expects " << what << " to have rank " << rank
                           << ", got rank " << type.getRank() << " (" << type
                           << ")";
}

LogicalResult verifyDim(Operation *op, StringRef what, ShapedType type,
                        int64_t dim, StringRef expectedWhat, int64_t expected) {
  int64_t actual = type.getDimSize(dim);
  if (areDimsCompatible(actual, expected))
    return success();
  return op->emitOpError() << "expects dimension " << dim << " of " << what
                           << " (" << formatDim(actual) << ") to equal "
                           << expectedWhat << " (" << formatDim(expected)
                           << ")";
}

LogicalResult verifySameType(Operation *op, StringRef what, Type actual,
                             StringRef expectedWhat, Type expected) {
  if (actual == expected)
    return success();
  return op->emitOpError() << "expects " << what << " type " << actual
                           << " to equal " << expectedWhat << " type "
                           << expected;
}

} // namespace hetc::llm
