// Ops and types the SPIR-V library has no kernel for are errors naming them.
// RUN: hetc-opt %s --hetc-spirv-build-program -split-input-file -verify-diagnostics

llm.weight @table {data_offset = 0 : i64} : tensor<100x64xf32>
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) -> tensor<?x64xf32> {
  %table = llm.get_weight @table : tensor<100x64xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x64xf32>) -> tensor<?x64xf32>
  // expected-error @+1 {{'llm.softmax' op has no kernel in the SPIR-V library}}
  %y = llm.softmax %x : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

llm.weight @table {data_offset = 0 : i64} : tensor<100x64xf32>
// expected-error @+1 {{'func.func' op argument 3: programs keep f32, f16 or bf16 KV caches, not '!llm.quant<q8_0>'}}
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %cache: !llm.kv_cache<capacity = 32, kvHeads = 2, headDim = 32, elementType = !llm.quant<q8_0>>) -> tensor<?x64xf32> attributes {hetc.kv_block_size = 16 : i64} {
  %table = llm.get_weight @table : tensor<100x64xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x64xf32>) -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}

// -----

llm.weight @table {data_offset = 0 : i64} : tensor<100x64xf32>
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %table = llm.get_weight @table : tensor<100x64xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x64xf32>) -> tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %tokens, %c0 : tensor<?xi32>
  %heads = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
  // expected-error @+1 {{'llm.rope' op with yarn scaling has no SPIR-V program yet}}
  %y = llm.rope %heads at %positions mode = normal theta = 1.000000e+04 dims = 16 scaling yarn factor = 4.0 {original_context = 4096 : i64} : (tensor<?x4x16xf32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %y : tensor<?x4x16xf32>
}

// -----

llm.weight @table {data_offset = 0 : i64} : tensor<100x64xf32>
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %cache: !llm.kv_cache<capacity = 32, kvHeads = 2, headDim = 16, elementType = f32>) -> tensor<?x4x16xf32> attributes {hetc.kv_block_size = 16 : i64} {
  %table = llm.get_weight @table : tensor<100x64xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x64xf32>) -> tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %tokens, %c0 : tensor<?xi32>
  %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
  // expected-error @+1 {{'llm.attention' op with a sliding window or a soft cap has no SPIR-V kernel yet}}
  %y = llm.attention %q, %cache at %positions pages %blocks block_size = 16 causal softcap = 50.0 : (tensor<?x4x16xf32>, !llm.kv_cache<capacity = 32, kvHeads = 2, headDim = 16, elementType = f32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %y : tensor<?x4x16xf32>
}

// -----

// Q2_K, Q3_K and Q5_K weights have no SPIR-V kernels yet: the error says what
// the kernels read and where the model runs instead.
llm.weight @table {data_offset = 0 : i64} : tensor<100x256x!llm.quant<q5_k>>
func.func @prefill(%tokens: tensor<?xi32>, %positions: tensor<?xi32>) -> tensor<?x256xf32> {
  %table = llm.get_weight @table : tensor<100x256x!llm.quant<q5_k>>
  // expected-error @+1 {{'llm.embedding' op has '!llm.quant<q5_k>' weights, which the SPIR-V kernels do not read yet (they read f32, f16, bf16, q8_0, q4_0, q4_k and q6_k); run this model on the CPU}}
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x256x!llm.quant<q5_k>>) -> tensor<?x256xf32>
  return %x : tensor<?x256xf32>
}

// -----

// The kernels read caches through a block table: an unpaged cache is refused.
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 16, elementType = f32>
// expected-error @+1 {{'func.func' op reads a KV cache without a block table; programs read paged caches: run het-page-kv-cache first}}
func.func @decode(%tokens: tensor<1xi32>, %positions: tensor<1xi32>, %k: tensor<1x2x16xf32>, %cache: !cache) -> !cache {
  %c = llm.kv_append %k, %k into %cache at %positions : (tensor<1x2x16xf32>, tensor<1x2x16xf32>, !cache, tensor<1xi32>) -> !cache
  return %c : !cache
}

// -----

// A block size that does not divide the cache's slots.
llm.weight @table {data_offset = 0 : i64} : tensor<100x32xf32>
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 16, elementType = f32>
// expected-error @+1 {{'func.func' op pages its caches without a block size that divides their slots (hetc.kv_block_size)}}
func.func @decode(%tokens: tensor<1xi32>, %positions: tensor<1xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %cache: !cache) -> (tensor<1x32xf32>, !cache) attributes {hetc.kv_block_size = 48 : i64} {
  %table = llm.get_weight @table : tensor<100x32xf32>
  %x = llm.embedding %tokens, %table : (tensor<1xi32>, tensor<100x32xf32>) -> tensor<1x32xf32>
  return %x, %cache : tensor<1x32xf32>, !cache
}

// -----

// An op paged in other blocks than the function's.
llm.weight @table {data_offset = 0 : i64} : tensor<100x32xf32>
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 16, elementType = f32>
func.func @decode(%tokens: tensor<1xi32>, %positions: tensor<1xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %cache: !cache) -> !cache attributes {hetc.kv_block_size = 16 : i64} {
  %table = llm.get_weight @table : tensor<100x32xf32>
  %x = llm.embedding %tokens, %table : (tensor<1xi32>, tensor<100x32xf32>) -> tensor<1x32xf32>
  %k = tensor.expand_shape %x [[0], [1, 2]] output_shape [1, 2, 16] : tensor<1x32xf32> into tensor<1x2x16xf32>
  // expected-error @+1 {{'llm.kv_append' op pages its cache through another block table than its function's (argument 2, blocks of 16 slots)}}
  %c = llm.kv_append %k, %k into %cache at %positions pages %blocks block_size = 32 : (tensor<1x2x16xf32>, tensor<1x2x16xf32>, !cache, tensor<1xi32>, tensor<?xi32>) -> !cache
  return %c : !cache
}

// -----

// A batch's step (a sequence per token) needs a table row per token.
llm.weight @table {data_offset = 0 : i64} : tensor<100x32xf32>
!cache = !llm.kv_cache<capacity = 64, kvHeads = 2, headDim = 16, elementType = f32>
// expected-error @+1 {{'func.func' op has a block table of type 'tensor<?xi32>'; a batch's program takes a tensor<?x?xi32> table, a row per token}}
func.func @decode_batch(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %blocks: tensor<?xi32> {hetc.kv_block_table}, %cache: !cache) -> (tensor<?x32xf32>, !cache) attributes {hetc.kv_block_size = 16 : i64, llm.sequence_per_token} {
  %table = llm.get_weight @table : tensor<100x32xf32>
  %x = llm.embedding %tokens, %table : (tensor<?xi32>, tensor<100x32xf32>) -> tensor<?x32xf32>
  return %x, %cache : tensor<?x32xf32>, !cache
}
