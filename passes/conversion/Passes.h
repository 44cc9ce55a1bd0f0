// The conversion pass group: declarations and registration (from Passes.td).
#ifndef HETC_PASSES_CONVERSION_PASSES_H
#define HETC_PASSES_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace hetc::conversion {

#define GEN_PASS_DECL
#include "passes/conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/conversion/Passes.h.inc"

} // namespace hetc::conversion

#endif // HETC_PASSES_CONVERSION_PASSES_H
