#include "passes/target/x86/MatmulGrid.h"

#include "passes/target/x86/BlockBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace hetc::x86 {

MatmulGrid MatmulGrid::build(OpBuilder &b, Location loc, Value x,
                             int64_t outFeatures, int64_t blockRows,
                             int64_t blockColumns, int64_t chunkRows) {
  MatmulGrid grid;
  grid.blockRows = blockRows;
  grid.blockColumns = blockColumns;
  int64_t staticRows = cast<RankedTensorType>(x.getType()).getDimSize(0);
  bool rowsKnown = !ShapedType::isDynamic(staticRows);
  grid.wholeRowBlocks = rowsKnown && staticRows % blockRows == 0;

  OpFoldResult numRows = tensor::getMixedSize(b, loc, x, 0);
  grid.rowCount = getValueOrCreateConstantIndexOp(b, loc, numRows);
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<OpFoldResult>{numRows, b.getIndexAttr(outFeatures)},
      b.getF32Type());
  OpFoldResult rowBlocks;
  if (rowsKnown)
    rowBlocks = b.getIndexAttr(staticRows / blockRows +
                               (grid.wholeRowBlocks ? 0 : 1));
  // A prompt's rows are taken in chunks whose activations stay in L2 while
  // every weight block passes over them: streaming all of a long prompt's
  // activations from L3 for each weight block bounded the prefill (llama-110M
  // Q4_0 at 1024 tokens: its matmuls ran 13 % slower per token than at 128).
  // Whole blocks per chunk: only the prompt's last chunk has a partial one.
  Value chunkStart;
  Value outInit = init;
  if (!rowsKnown) {
    chunkRows = std::max(chunkRows - chunkRows % blockRows, blockRows);
    grid.chunkLoop = scf::ForOp::create(
        b, loc, indexConstant(b, loc, 0), grid.rowCount,
        indexConstant(b, loc, chunkRows), ValueRange{init});
    b.setInsertionPointToStart(grid.chunkLoop.getBody());
    chunkStart = grid.chunkLoop.getInductionVar();
    outInit = grid.chunkLoop.getRegionIterArgs()[0];
    Value rowsInChunk = arith::MinUIOp::create(
        b, loc, indexConstant(b, loc, chunkRows),
        arith::SubIOp::create(b, loc, grid.rowCount, chunkStart));
    rowBlocks = arith::CeilDivUIOp::create(b, loc, rowsInChunk,
                                           indexConstant(b, loc, blockRows))
                    .getResult();
  }
  // Column blocks outermost: the kernel grid splits weight rows across
  // threads, and every activation block passes over a weight block while it
  // sits in L1.
  grid.forall = scf::ForallOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{b.getIndexAttr(outFeatures / blockColumns),
                             rowBlocks},
      ValueRange{outInit}, std::nullopt);
  Block *body = grid.forall.getBody();
  b.setInsertionPointToStart(body);
  grid.columnBlock = body->getArgument(0);
  grid.firstColumn = arith::MulIOp::create(
      b, loc, grid.columnBlock, indexConstant(b, loc, blockColumns));
  grid.firstRow = arith::MulIOp::create(b, loc, body->getArgument(1),
                                        indexConstant(b, loc, blockRows));
  if (chunkStart)
    grid.firstRow = arith::AddIOp::create(b, loc, chunkStart, grid.firstRow);
  grid.out = body->getArgument(2);
  // A partial last block recomputes the last row for its missing rows (the
  // reads stay in bounds) and writes only the rows it owns.
  Value lastRow =
      arith::SubIOp::create(b, loc, grid.rowCount, indexConstant(b, loc, 1));
  for (int64_t i = 0; i < blockRows; ++i) {
    Value row =
        arith::AddIOp::create(b, loc, grid.firstRow, indexConstant(b, loc, i));
    if (!grid.wholeRowBlocks)
      row = arith::MinUIOp::create(b, loc, row, lastRow);
    grid.rows.push_back(row);
  }
  return grid;
}

Value MatmulGrid::write(
    OpBuilder &b, Location loc,
    llvm::function_ref<SmallVector<Value>(int64_t row)> rowPieces,
    Value wholeBlock) {
  OpFoldResult ownedRows = b.getIndexAttr(blockRows);
  if (!wholeRowBlocks)
    ownedRows = arith::MinUIOp::create(
                    b, loc, indexConstant(b, loc, blockRows),
                    arith::SubIOp::create(b, loc, rowCount, firstRow))
                    .getResult();
  SmallVector<OpFoldResult> offsets = {firstRow, firstColumn};
  SmallVector<OpFoldResult> sizes = {ownedRows, b.getIndexAttr(blockColumns)};
  SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
  Value written =
      tensor::ExtractSliceOp::create(b, loc, out, offsets, sizes, strides);
  Value zero = indexConstant(b, loc, 0);
  if (wholeBlock && wholeRowBlocks) {
    written = vector::TransferWriteOp::create(b, loc, wholeBlock, written,
                                              ValueRange{zero, zero},
                                              ArrayRef<bool>{true, true})
                  .getResult();
  } else {
    Value lastOwned = arith::SubIOp::create(
        b, loc, getValueOrCreateConstantIndexOp(b, loc, ownedRows),
        indexConstant(b, loc, 1));
    for (int64_t i = 0; i < blockRows; ++i) {
      SmallVector<Value> pieces = rowPieces(i);
      Value local = arith::MinUIOp::create(b, loc, indexConstant(b, loc, i),
                                           lastOwned);
      int64_t column = 0;
      for (Value piece : pieces) {
        written = vector::TransferWriteOp::create(
                      b, loc, piece, written,
                      ValueRange{local, indexConstant(b, loc, column)},
                      ArrayRef<bool>{true})
                      .getResult();
        column += cast<VectorType>(piece.getType()).getNumElements();
      }
    }
  }
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  tensor::ParallelInsertSliceOp::create(b, loc, written, out, offsets, sizes,
                                        strides);
  b.setInsertionPointAfter(forall);
  if (!chunkLoop)
    return forall.getResult(0);
  b.setInsertionPointToEnd(chunkLoop.getBody());
  scf::YieldOp::create(b, loc, forall.getResult(0));
  b.setInsertionPointAfter(chunkLoop);
  return chunkLoop.getResult(0);
}

} // namespace hetc::x86
