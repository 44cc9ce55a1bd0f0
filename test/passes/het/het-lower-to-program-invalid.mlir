// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-lower-to-program

// Only segments compute: an op left outside them has no device to run on.
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) -> tensor<2x4xf32> {
  %0 = het.segment on #het.device<"cpu0", cpu, "x86-64-v3"> -> tensor<2x4xf32> {
    %x = arith.constant dense<1.0> : tensor<2x4xf32>
    het.yield %x : tensor<2x4xf32>
  }
  // expected-error @+1 {{computes outside every segment; run het-outline first}}
  %1 = llm.add %0, %0 : tensor<2x4xf32>
  return %1 : tensor<2x4xf32>
}

// -----

// Transfers move activations a segment computed; token ids are written to
// every device that reads them, never moved.
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) {
  // expected-error @+1 {{moves a value that is not an f32 activation a segment computed; programs move activations only}}
  %moved, %done = het.transfer %tokens : tensor<?xi32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<hbm, "vulkan0">
  het.wait %done
  %0 = het.segment on #het.device<"vulkan0", spirv, "vulkan1.2"> -> tensor<?xi32> {
    het.yield %moved : tensor<?xi32>
  }
  return
}

// -----

// A program starts from the step's token ids and positions.
// expected-error @+1 {{has no token and position arguments; a program runs a model's prefill or decode}}
func.func @prefill(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = het.segment on #het.device<"cpu0", cpu, "x86-64-v3"> -> tensor<?x4xf32> {
    het.yield %x : tensor<?x4xf32>
  }
  return %0 : tensor<?x4xf32>
}
