// The het pass group: declarations and registration (generated from Passes.td).
#ifndef HETC_PASSES_HET_PASSES_H
#define HETC_PASSES_HET_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace hetc::het {

#define GEN_PASS_DECL
#include "passes/het/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/het/Passes.h.inc"

} // namespace hetc::het

#endif // HETC_PASSES_HET_PASSES_H
