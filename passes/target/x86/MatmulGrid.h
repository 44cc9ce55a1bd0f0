// The grid every blocked x86 matmul shares: the output [M, N] in blocks of
// activation rows × weight rows, column blocks outermost (threads split the
// weight rows), a prompt's rows in chunks whose activations stay in L2, and
// each block written back row by row, in bounds.
#ifndef HETC_PASSES_TARGET_X86_MATMULGRID_H
#define HETC_PASSES_TARGET_X86_MATMULGRID_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace hetc::x86 {

struct MatmulGrid {
  int64_t blockRows = 0, blockColumns = 0;
  /// Whether the row count is static and a whole number of blocks (no row
  /// index is clamped).
  bool wholeRowBlocks = false;
  mlir::Value rowCount;
  /// The block's first activation row and first weight row (output column).
  mlir::Value firstRow, firstColumn;
  /// The index of the block among the column blocks.
  mlir::Value columnBlock;
  /// The block's activation rows; past the end, the last row again.
  llvm::SmallVector<mlir::Value> rows;

  /// Builds the grid of x · wᵀ (x [M, K] f32) into [M, `outFeatures`] f32
  /// blocks of `blockRows` × `blockColumns`, a dynamic M taken in chunks of
  /// `chunkRows` (rounded down to whole blocks), and leaves `b` in the
  /// block's body.
  static MatmulGrid build(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value x, int64_t outFeatures,
                          int64_t blockRows, int64_t blockColumns,
                          int64_t chunkRows);

  /// Writes the block and closes the grid; returns the matmul's result.
  /// `rowPieces(i)` builds row i's results, vectors that cover the block's
  /// columns in order; `wholeBlock`, when given and the rows are whole
  /// blocks, is the block as one [blockRows, blockColumns] vector instead.
  /// A row past the end was computed for the last row (its index clamped),
  /// so it rewrites the last owned row with the same values: no masked
  /// write, which would need a stack buffer.
  mlir::Value
  write(mlir::OpBuilder &b, mlir::Location loc,
        llvm::function_ref<llvm::SmallVector<mlir::Value>(int64_t row)>
            rowPieces,
        mlir::Value wholeBlock = {});

private:
  mlir::scf::ForallOp forall;
  mlir::scf::ForOp chunkLoop;
  mlir::Value out;
};

} // namespace hetc::x86

#endif // HETC_PASSES_TARGET_X86_MATMULGRID_H
