// Registers every dialect, extension and pass hetc uses (its own and upstream's),
// so `hetc` and `hetc-opt` always see the same set.
#ifndef HETC_INITALL_H
#define HETC_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace hetc {

/// Adds the llm and het dialects and every upstream dialect and dialect
/// extension to `registry`.
void registerAllDialects(mlir::DialectRegistry &registry);

/// Registers hetc's passes and pipelines and every upstream pass with the global
/// pass registry. Safe to call more than once.
void registerAllPasses();

} // namespace hetc

#endif // HETC_INITALL_H
