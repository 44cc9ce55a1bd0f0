// A model's shapes read back from an imported module (its llm.model attribute
// and llm.weight declarations), for planning it in the IR as `hetc plan` plans
// a GGUF header.
#ifndef HETC_PASSES_HET_MODULESHAPE_H
#define HETC_PASSES_HET_MODULESHAPE_H

#include "hetc/Cost/ModelShape.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace hetc::het {

/// The shape of the model `module` holds. On failure returns nothing and sets
/// `error` to what is missing and how to get it.
std::optional<cost::ModelShape> shapeFromModule(mlir::ModuleOp module,
                                                std::string &error);

/// The KV cache's capacity in tokens (`llm.model`'s context_length), or 0.
int64_t cacheCapacityOf(mlir::ModuleOp module);

} // namespace hetc::het

#endif // HETC_PASSES_HET_MODULESHAPE_H
