// RUN: hetc-opt %s --split-input-file --verify-diagnostics --convert-llm-to-linalg

// A weight must be bound to the model file to be viewed in the mapped data.
llm.weight @unbound : tensor<8xf32>
func.func @weight_without_offset() -> tensor<8xf32> {
  // expected-error @+2 {{refers to a weight without a data_offset; import the model from its file}}
  // expected-error @+1 {{failed to legalize operation 'llm.get_weight'}}
  %w = llm.get_weight @unbound : tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// YaRN scaling is not lowered yet: an error, never silently wrong positions.
func.func @rope_yarn(%q: tensor<?x2x8xf32>, %pos: tensor<?xi32>) -> tensor<?x2x8xf32> {
  // expected-error @+2 {{yarn scaling is not lowered to linalg yet}}
  // expected-error @+1 {{failed to legalize operation 'llm.rope'}}
  %r = llm.rope %q at %pos mode = neox theta = 10000.0 dims = 8 scaling yarn factor = 4.0 {original_context = 4096} : (tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  return %r : tensor<?x2x8xf32>
}

// -----

// Sampling runs in the runtime; in compiled code it is an unsupported op.
func.func @sample(%l: tensor<1x16xf32>) -> tensor<1xi32> {
  // expected-error @+1 {{failed to legalize operation 'llm.sample'}}
  %t = llm.sample %l temperature = 0.0 top_k = 0 top_p = 1.0 seed = 0 : (tensor<1x16xf32>) -> tensor<1xi32>
  return %t : tensor<1xi32>
}

// -----

// The tiled attention's steps of 64 keys can neither hold whole blocks of 48
// slots nor fit in them.
!cache = !llm.kv_cache<capacity = 96, kvHeads = 2, headDim = 8, elementType = f32>
func.func @odd_block_size(%q: tensor<?x4x8xf32>, %pos: tensor<?xi32>, %blocks: tensor<?xi32>, %c: !cache) -> tensor<?x4x8xf32> {
  // expected-error @+2 {{failed to legalize operation 'llm.attention'}}
  // expected-error @+1 {{block_size 48 is neither a multiple nor a divisor of the 64 keys a step of the tiled attention takes}}
  %o = llm.attention %q, %c at %pos pages %blocks block_size = 48 causal : (tensor<?x4x8xf32>, !cache, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %o : tensor<?x4x8xf32>
}
