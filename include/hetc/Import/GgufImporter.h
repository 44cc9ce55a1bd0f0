// Import of a GGUF model into an llm-dialect module.
#ifndef HETC_IMPORT_GGUFIMPORTER_H
#define HETC_IMPORT_GGUFIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace hetrt::format {
class GgufFile;
} // namespace hetrt::format

namespace hetc::import {

struct ImportOptions {
  /// KV-cache capacity in positions; 0 takes the model's context length.
  int64_t contextLength = 0;
  /// Element type of the KV cache: "f32" or "f16".
  std::string kvElementType = "f32";
  /// Also build @decode_batch: a decode step of several sequences, one
  /// token each, with the logits of every token (marked
  /// llm.sequence_per_token; it runs once het-page-kv-cache pages it).
  bool batchedDecode = false;
};

/// Builds an llm module for `file`: one `llm.weight` per tensor (named as in the
/// file, with its data offset), and two entry points over the same graph:
///   @prefill(tokens: tensor<?xi32>, positions: tensor<?xi32>, kv caches...)
///   @decode(tokens: tensor<1xi32>, positions: tensor<1xi32>, kv caches...)
/// each returning the logits of the last token and the updated caches. The
/// module's `llm.model` attribute records the hyper-parameters. Returns null and
/// sets `error` (naming the file, the key or tensor, and the fix) when the
/// model cannot be imported.
mlir::OwningOpRef<mlir::ModuleOp>
importGguf(mlir::MLIRContext &context, const hetrt::format::GgufFile &file,
           const ImportOptions &options, std::string &error);

} // namespace hetc::import

#endif // HETC_IMPORT_GGUFIMPORTER_H
