// Shape, storage-size and verification helpers shared by the llm verifiers, the
// work (cost) interface, the importer and the cost model.
#ifndef HETC_DIALECTS_LLM_LLMSHAPES_H
#define HETC_DIALECTS_LLM_LLMSHAPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hetc::llm {

/// A dimension for diagnostics: the number, or `?` when dynamic.
std::string formatDim(int64_t dim);

/// True unless both dimensions are static and differ.
bool areDimsCompatible(int64_t lhs, int64_t rhs);

/// `dim`, or `dynamicSize` when `dim` is dynamic.
int64_t resolveDim(int64_t dim, int64_t dynamicSize);

/// Elements of `type`, dynamic dimensions taken as `dynamicSize`.
int64_t getNumElements(mlir::ShapedType type, int64_t dynamicSize);

/// Bytes that `numElements` elements of `elementType` occupy in storage: block
/// formats count whole blocks; nullopt when the count is not a whole number of
/// blocks or the type has no storage size.
std::optional<int64_t> getStorageBytes(mlir::Type elementType,
                                       int64_t numElements);

/// Stored bytes of a tensor (dynamic dimensions taken as `dynamicSize`). Block
/// formats must have an innermost dimension that is a whole number of blocks,
/// which the verifiers guarantee.
int64_t getTensorBytes(mlir::ShapedType type, int64_t dynamicSize);

/// Stored bytes of one innermost row of `type`.
int64_t getRowBytes(mlir::ShapedType type);

/// Checks that a block-quantized `type` has an innermost dimension that is a
/// multiple of its block size; emits the diagnostic on `op` naming `what`.
mlir::LogicalResult verifyBlockAligned(mlir::Operation *op, llvm::StringRef what,
                                       mlir::ShapedType type);

/// Checks that `type` has rank `rank`; emits a diagnostic naming `what`.
mlir::LogicalResult verifyRank(mlir::Operation *op, llvm::StringRef what,
                               mlir::ShapedType type, int64_t rank);

/// Checks that dimension `dim` of `what` (`type`) is compatible with `expected`,
/// which is described by `expectedWhat`.
mlir::LogicalResult verifyDim(mlir::Operation *op, llvm::StringRef what,
                              mlir::ShapedType type, int64_t dim,
                              llvm::StringRef expectedWhat, int64_t expected);

/// Checks that `actual` equals `expected`, naming the rule's subject.
mlir::LogicalResult verifySameType(mlir::Operation *op, llvm::StringRef what,
                                   mlir::Type actual,
                                   llvm::StringRef expectedWhat,
                                   mlir::Type expected);

} // namespace hetc::llm

#endif // HETC_DIALECTS_LLM_LLMSHAPES_H
