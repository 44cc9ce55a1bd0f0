// The het dialect's operations and the memory-space queries they verify with.
#ifndef HETC_DIALECTS_HET_HETOPS_H
#define HETC_DIALECTS_HET_HETOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/het/HetAttrs.h"
#include "dialects/het/HetDialect.h"
#include "dialects/llm/LLMTypes.h"

#define GET_OP_CLASSES
#include "dialects/het/HetOps.h.inc"

namespace hetc::het {

/// The memory a device computes on: its HBM, or its DRAM for a CPU.
MemorySpaceAttr getHomeMemorySpace(DeviceAttr device);

/// The memory space `value` is known to live in, or null when the IR does not
/// say: a transfer result lives in its destination; a result of an op with a
/// `het.memory_space` attribute in that space; a result of a segment, of an op
/// inside one, or of an op with `het.placement`, in that device's home memory;
/// a function argument in the space its `het.memory_space` argument attribute
/// names.
MemorySpaceAttr getKnownMemorySpace(mlir::Value value);

} // namespace hetc::het

#endif // HETC_DIALECTS_HET_HETOPS_H
