// RUN: hetc-opt %s --verify-diagnostics --hetc-x86-prepare-entries --hetc-x86-export-entries

// An entry point that still returns a buffer cannot take the runtime's calling
// convention, where every buffer is passed in.
// expected-error @+1 {{still returns 1 value(s); run buffer-results-to-out-params first}}
func.func @entry(%w: memref<?xi8> {llm.weights}) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}
