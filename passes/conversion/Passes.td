// Conversions from hetc's dialects to upstream ones.
#ifndef HETC_PASSES_CONVERSION_PASSES_TD
#define HETC_PASSES_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLLMToLinalgPass : Pass<"convert-llm-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower llm ops to linalg, tensor, arith, math and scf on tensors";
  let description = [{
    Rewrites every llm op into upstream ops on tensors, ready for one-shot
    bufferization and the CPU (or GPU) lowerings:

    - matmuls, logits and embeddings become `linalg.generic`s; float weights are
      inputs, block-quantized weights are byte rows (`tensor<N x rowBytes x i8>`)
      dequantized element by element inside the body, so no dequantized copy of
      a weight ever exists;
    - norms, activations and residual adds become elementwise/reduction
      generics; RoPE reads each element's rotation partner;
    - a KV cache becomes `tensor<2 x capacity x kvHeads x headDim x T>` (keys,
      values); `llm.kv_append` inserts rows at the tokens' positions and
      `llm.attention` becomes a forall over tiles of up to 32 query tokens ×
      heads, each walking the cached prefix up to its last position in
      blocks of 64 keys with an online softmax (a decode step is one tile of
      one static row), its two products tagged for targets to block;
    - `llm.get_weight` becomes a view of the model file's data section at the
      weight's `data_offset`: every function that uses weights gets a leading
      `memref<?xi8>` argument (marked `llm.weights`) for the mapped data.

    Before:
    ```mlir
    %y = llm.matmul %x, %w : (tensor<?x64xf32>, tensor<32x64x!llm.quant<q8_0>>) -> tensor<?x32xf32>
    ```
    After (schematically):
    ```mlir
    %y = linalg.generic {...} ins(%x : tensor<?x64xf32>) outs(%zero : tensor<?x32xf32>) {
      // bytes of block k/32 of row n: scale · int8
    }
    ```
    Ops the conversion does not support yet (e.g. `llm.sample`, which runs in the
    runtime) are reported with their location.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect"
  ];
}

#endif // HETC_PASSES_CONVERSION_PASSES_TD
