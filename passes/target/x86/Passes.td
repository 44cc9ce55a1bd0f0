// Passes of the x86 CPU target.
#ifndef HETC_PASSES_TARGET_X86_PASSES_TD
#define HETC_PASSES_TARGET_X86_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetcX86PrepareEntriesPass
    : Pass<"hetc-x86-prepare-entries", "mlir::ModuleOp"> {
  let summary = "Mark model entry points private for bufferization's ABI passes";
  let description = [{
    The model's entry points (functions with a `llm.weights` argument) are
    marked private and tagged `hetc.entry`, so that, after one-shot
    bufferization, `drop-equivalent-buffer-results` can drop the KV caches
    they return (updated in place) and `buffer-results-to-out-params` can turn
    the logits into an output argument; both passes leave public functions
    alone. `hetc-x86-export-entries` makes the entry points public again.

    ```mlir
    func.func @decode(%w: memref<?xi8> {llm.weights}, ...)
    // becomes
    func.func private @decode(%w: memref<?xi8> {llm.weights}, ...) attributes {hetc.entry}
    ```
  }];
}

def HetcX86ExportEntriesPass
    : Pass<"hetc-x86-export-entries", "mlir::ModuleOp"> {
  let summary = "Export model entry points with a C interface for the runtime";
  let description = [{
    Makes every function tagged `hetc.entry` public again and asks the LLVM
    lowering for its C interface (`llvm.emit_c_interface`): the runtime calls
    `_mlir_ciface_<name>` with one memref descriptor per argument, in the
    order the pack manifest records.

    Fails if an entry point still returns values: the runtime passes every
    buffer in, so results must have become output arguments.
  }];
}

def HetcX86PackEntryArgsPass
    : Pass<"hetc-x86-pack-entry-args", "mlir::ModuleOp"> {
  let summary = "Give each entry point a one-argument wrapper for the runtime";
  let description = [{
    For every `_mlir_ciface_<name>` of an entry point, adds
    `llvm.func @hetc_entry_<name>(%args: !llvm.ptr)` that loads the memref
    descriptor pointers from the array `%args` and calls the C interface. The
    runtime can then call any model's entry points through one function type,
    whatever the number of layers (and so of KV-cache arguments).

    ```mlir
    llvm.func @hetc_entry_decode(%args: !llvm.ptr) {
      // %d0 = load args[0], %d1 = load args[1], ...
      llvm.call @_mlir_ciface_decode(%d0, %d1, ...) : (...) -> ()
      llvm.return
    }
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // HETC_PASSES_TARGET_X86_PASSES_TD
