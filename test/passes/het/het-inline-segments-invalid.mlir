// RUN: hetc-opt %s --split-input-file --verify-diagnostics --het-inline-segments

// Two CPUs are two devices: their segments do not inline into one function.
func.func @prefill(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = het.segment on #het.device<"cpu0", cpu, "x86-64-v3"> -> tensor<2x4xf32> {
    het.yield %x : tensor<2x4xf32>
  }
  // expected-error @+1 {{runs on cpu1 beside cpu0; only a plan on one CPU inlines}}
  %1 = het.segment on #het.device<"cpu1", cpu, "x86-64-v3"> -> tensor<2x4xf32> {
    het.yield %x : tensor<2x4xf32>
  }
  return %1 : tensor<2x4xf32>
}

// -----

// A value moved between memories has two homes; one CPU has one.
func.func @prefill(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{moves a value between memories; only a plan on one device inlines}}
  %moved, %done = het.transfer %x : tensor<2x4xf32> from #het.memory_space<dram, "cpu0"> to #het.memory_space<cxl, "cpu0">
  return %moved : tensor<2x4xf32>
}
