// RUN: hetc-opt %s --split-input-file --verify-diagnostics --hetc-x86-prepare-entries --hetc-x86-export-entries

// An entry point that still returns a buffer cannot take the runtime's calling
// convention, where every buffer is passed in.
// expected-error @+1 {{still returns 1 value(s); run buffer-results-to-out-params first}}
func.func @entry(%w: memref<?xi8> {llm.weights}) -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}

// -----

// The code record needs the logits' vocabulary: the last buffer must be a
// memref<NxVxf32> of static V.
// expected-error @+1 {{must take the logits as its last buffer argument, a memref<NxVxf32> of static V}}
func.func @entry(%w: memref<?xi8> {llm.weights}, %out: memref<4xf32>) {
  return
}

// -----

// The runtime allocates KV caches from the recorded static shape.
// expected-error @+1 {{with a dynamic shape; the runtime allocates caches from static shapes}}
func.func @entry(%w: memref<?xi8> {llm.weights}, %c: memref<2x?x4x16xf32>,
                 %out: memref<1x300xf32>) {
  return
}

// -----

// One record describes every layer's cache.
// expected-error @+1 {{takes KV caches of different shapes}}
func.func @entry(%w: memref<?xi8> {llm.weights}, %c0: memref<2x4x64x16xf32>,
                 %c1: memref<2x4x32x16xf32>, %out: memref<1x300xf32>) {
  return
}

// -----

// Prefill and decode of one module must assume one model.
func.func @prefill(%w: memref<?xi8> {llm.weights}, %c0: memref<2x4x64x16xf32>,
                   %out: memref<1x300xf32>) {
  return
}
// expected-error @+1 {{assumes other model shapes than the entry points before it}}
func.func @decode(%w: memref<?xi8> {llm.weights}, %c0: memref<2x4x64x16xf32>,
                  %out: memref<1x301xf32>) {
  return
}

// -----

// A segment entry's buffers are bound by the runtime from their signature:
// a strided view has no place in it.
// expected-error @+1 {{argument 0 of type 'memref<4xf32, strided<[2]>>' is not a buffer of whole-byte elements the runtime can bind}}
func.func @prefill_seg0(%x: memref<4xf32, strided<[2]>>) attributes {hetc.segment_entry} {
  return
}

// -----

// The weight-layout table takes whole entries of 5 values (offset, rows, row
// bytes, format, layout).
// expected-error @+1 {{hetc.x86.weight_layouts holds 4 values, not a whole number of 5-value entries}}
module attributes {hetc.model_hash = "0123456789abcdef", hetc.x86.weight_layouts = array<i64: 0, 32, 36, 2>} {
  func.func @prefill_seg0(%w: memref<?xi8> {llm.weights}, %x: memref<?x64xf32>) attributes {hetc.segment_entry} {
    return
  }
}
