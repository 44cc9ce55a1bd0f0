// From llm ops to a program of the SPIR-V kernel library's dispatches: each
// op becomes the dispatch (or host step) that computes it, each tensor a
// buffer, buffers of values no longer read are reused.
#ifndef HETC_PASSES_TARGET_SPIRV_PROGRAMBUILDER_H
#define HETC_PASSES_TARGET_SPIRV_PROGRAMBUILDER_H

#include "abi/Program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace hetc::spirv {

/// The program of `function`: llm ops on tensors whose first arguments are
/// the token ids and their positions, then the KV caches (a model's prefill
/// or decode as `hetc import` writes it). Emits an error on the first op the
/// library has no kernel for, and fails.
mlir::FailureOr<abi::Program> buildProgram(mlir::func::FuncOp function);

/// The program of a partitioned model's `function` after het-outline, over
/// the devices of its segments: a SPIR-V segment's ops become dispatches of
/// the kernel library on its device, a CPU segment becomes a function of
/// `segments` (tagged hetc.segment_entry, for the x86 target to compile)
/// and one dispatch of it, a het.transfer of an activation a transfer step.
/// Emits an error on what no program can run (a device of another kind, an
/// op the library has no kernel for) and fails.
mlir::FailureOr<abi::Program> buildPlannedProgram(mlir::func::FuncOp function,
                                                  mlir::ModuleOp segments);

/// The program in lines a person reads: each buffer with its role and size,
/// each step with its kernel, buffers, grid and parameters ("t" is the step's
/// token count, "k" the keys the cache holds after it).
std::string describeProgram(const abi::Program &program);

} // namespace hetc::spirv

#endif // HETC_PASSES_TARGET_SPIRV_PROGRAMBUILDER_H
