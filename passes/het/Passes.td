// Passes over the het dialect: partitioning, outlining, transfers and the
// verifiers at their stage boundaries.
#ifndef HETC_PASSES_HET_PASSES_TD
#define HETC_PASSES_HET_PASSES_TD

include "mlir/Pass/PassBase.td"

def HetVerifyPartitionedPass
    : Pass<"het-verify-partitioned", "mlir::ModuleOp"> {
  let summary = "Checks that every llm op is placed and every cross-device use "
                "goes through het.transfer";
  let description = [{
    The stage verifier after partitioning. It changes nothing; it fails with a
    diagnostic on the first op that breaks a rule:

    - every llm op (except the `llm.weight` declarations) runs somewhere: it is
      inside a `het.segment` or carries `het.placement`;
    - every `llm.get_weight` outside a segment says where the weight lives with
      `het.memory_space`;
    - an op placed with `het.placement` uses only values in memory its device
      owns (segments check the same rule in their own verifier).

    Passes:
    ```mlir
    %w = llm.get_weight @w {het.memory_space = #het.memory_space<hbm, "gpu0">} : tensor<64xf32>
    %y = llm.rms_norm %x, %w eps = 1.0e-05 {het.placement = #het.device<"gpu0", cuda, "sm_90">} : ...
    ```
    Fails: the same `llm.rms_norm` without `het.placement`.
  }];
  let dependentDialects = ["::hetc::het::HetDialect"];
}

#endif // HETC_PASSES_HET_PASSES_TD
