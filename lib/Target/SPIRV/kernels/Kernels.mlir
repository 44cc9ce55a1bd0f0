// The GPU kernel library: the llm ops as GPU kernels, written as a GPU wants
// them and lowered by upstream MLIR for Vulkan (gpu → spirv), NVIDIA (gpu →
// nvvm) and AMD (gpu → rocdl).
//
// Conventions, shared with the runtime that dispatches them:
// - tensors are flat storage buffers (memref<?xT>), row-major;
// - the last argument is a parameter buffer of i32 values (sizes, and f32
//   constants as their bits), so one pipeline serves every shape;
// - workgroups are 64 threads for row reductions and 256 for element-wise
//   kernels; a row reduction is a tree through workgroup memory, which
//   every Vulkan device has, and a helper named X_subgroup is the same
//   reduction in subgroup operations: the library compiles in two variants
//   (hetc-spirv-specialize-kernels), and the runtime runs the subgroup one
//   on devices that report subgroup arithmetic;
// - block-quantized weights are read as bytes in their GGUF layout and
//   dequantized in registers; bytes and f16 values are emulated with 32-bit
//   loads where the device lacks 8/16-bit storage, and f16 is widened with
//   integer arithmetic, so no kernel needs a Float16 capability;
// - a helper named X_native is X for the LLVM GPU targets (NVIDIA, AMD):
//   16- and 128-bit loads and hardware f16 conversion, which the Vulkan
//   baseline lacks (hetc-gpu-native-helpers swaps them in; SPIR-V never
//   sees them). The kernels around them are the ones the SPIR-V tests check.
//   A helper named X_nvptx or X_amdgpu is X on one target's own units
//   (NVIDIA's tensor cores, AMD's matrix cores); its portable form defines
//   what it computes, so the SPIR-V tests check the kernels that call it
//   too. A kernel built for one target's units says so
//   (hetc.matrix_units), and the other LLVM GPU target leaves it out; those
//   kernels and their helpers are in MatrixUnits.mlir, which the build
//   merges into this gpu.module.
//
// Memory space 3 is workgroup memory (Vulkan's Workgroup storage class).
module attributes {gpu.container_module} {
  gpu.module @llm_kernels {

    // y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w
    // params: [cols, eps as f32 bits]; grid: (rows, 1, 1).
    gpu.func @rms_norm_f32(%x: memref<?xf32>, %w: memref<?xf32>,
                           %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols_i32 = memref.load %params[%c0] : memref<?xi32>
      %eps_bits = memref.load %params[%c1] : memref<?xi32>
      %eps = arith.bitcast %eps_bits : i32 to f32
      %cols = arith.index_cast %cols_i32 : i32 to index
      %base = arith.muli %row, %cols : index
      %sum = scf.for %i = %tid to %cols step %c64 iter_args(%acc = %zero) -> f32 {
        %p = arith.addi %base, %i : index
        %v = memref.load %x[%p] : memref<?xf32>
        %sq = arith.mulf %v, %v : f32
        %next = arith.addf %acc, %sq : f32
        scf.yield %next : f32
      }
      %total = func.call @workgroup_sum(%sum, %tid) : (f32, index) -> f32
      %cols_f = arith.uitofp %cols_i32 : i32 to f32
      %mean = arith.divf %total, %cols_f : f32
      %shifted = arith.addf %mean, %eps : f32
      %scale = math.rsqrt %shifted : f32
      scf.for %i = %tid to %cols step %c64 {
        %p = arith.addi %base, %i : index
        %v = memref.load %x[%p] : memref<?xf32>
        %wv = memref.load %w[%i] : memref<?xf32>
        %normed = arith.mulf %v, %scale : f32
        %out = arith.mulf %normed, %wv : f32
        memref.store %out, %y[%p] : memref<?xf32>
      }
      gpu.return
    }

    // A residual add and the RMSNorm that reads it, in one pass:
    // s[r, :] = a[r, :] + b[r, :] (the residual stream, which later layers
    // read too), y[r, :] = @rms_norm_f32 of s. Each thread normalizes the
    // sums it wrote, so s is never read by another thread; the sums and
    // their reduction are @add_f32's and @rms_norm_f32's, in their order.
    // params: [cols, eps as f32 bits]; grid: (rows, 1, 1).
    gpu.func @add_rms_norm_f32(%a: memref<?xf32>, %b: memref<?xf32>,
                               %w: memref<?xf32>, %s: memref<?xf32>,
                               %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %row = gpu.block_id x
      %tid = gpu.thread_id x
      %cols_i32 = memref.load %params[%c0] : memref<?xi32>
      %eps_bits = memref.load %params[%c1] : memref<?xi32>
      %eps = arith.bitcast %eps_bits : i32 to f32
      %cols = arith.index_cast %cols_i32 : i32 to index
      %base = arith.muli %row, %cols : index
      %sum = scf.for %i = %tid to %cols step %c64 iter_args(%acc = %zero) -> f32 {
        %p = arith.addi %base, %i : index
        %u = memref.load %a[%p] : memref<?xf32>
        %v = memref.load %b[%p] : memref<?xf32>
        %total = arith.addf %u, %v : f32
        memref.store %total, %s[%p] : memref<?xf32>
        %sq = arith.mulf %total, %total : f32
        %next = arith.addf %acc, %sq : f32
        scf.yield %next : f32
      }
      %squares = func.call @workgroup_sum(%sum, %tid) : (f32, index) -> f32
      %cols_f = arith.uitofp %cols_i32 : i32 to f32
      %mean = arith.divf %squares, %cols_f : f32
      %shifted = arith.addf %mean, %eps : f32
      %scale = math.rsqrt %shifted : f32
      scf.for %i = %tid to %cols step %c64 {
        %p = arith.addi %base, %i : index
        %v = memref.load %s[%p] : memref<?xf32>
        %wv = memref.load %w[%i] : memref<?xf32>
        %normed = arith.mulf %v, %scale : f32
        %out = arith.mulf %normed, %wv : f32
        memref.store %out, %y[%p] : memref<?xf32>
      }
      gpu.return
    }

    // y = a + b over `count` elements. params: [count]; grid: (ceil(count / 256), 1, 1).
    gpu.func @add_f32(%a: memref<?xf32>, %b: memref<?xf32>, %y: memref<?xf32>,
                      %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %group = gpu.block_id x
      %tid = gpu.thread_id x
      %count_i32 = memref.load %params[%c0] : memref<?xi32>
      %count = arith.index_cast %count_i32 : i32 to index
      %first = arith.muli %group, %c256 : index
      %i = arith.addi %first, %tid : index
      %inside = arith.cmpi ult, %i, %count : index
      scf.if %inside {
        %u = memref.load %a[%i] : memref<?xf32>
        %v = memref.load %b[%i] : memref<?xf32>
        %s = arith.addf %u, %v : f32
        memref.store %s, %y[%i] : memref<?xf32>
      }
      gpu.return
    }

    // The gated FFN activation: y = silu(gate) * up = gate / (1 + exp(-gate)) * up.
    // params: [count]; grid: (ceil(count / 256), 1, 1).
    gpu.func @silu_mul_f32(%gate: memref<?xf32>, %up: memref<?xf32>,
                           %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %group = gpu.block_id x
      %tid = gpu.thread_id x
      %count_i32 = memref.load %params[%c0] : memref<?xi32>
      %count = arith.index_cast %count_i32 : i32 to index
      %first = arith.muli %group, %c256 : index
      %i = arith.addi %first, %tid : index
      %inside = arith.cmpi ult, %i, %count : index
      scf.if %inside {
        %g = memref.load %gate[%i] : memref<?xf32>
        %u = memref.load %up[%i] : memref<?xf32>
        %out = func.call @silu_times(%g, %u) : (f32, f32) -> f32
        memref.store %out, %y[%i] : memref<?xf32>
      }
      gpu.return
    }

    // y[n, m] = sum_k x[n + x_row, k] * w[m, k] (x · wᵀ with w as the model
    // stores it, rows of K; x_row skips rows of x, so the logits of the last
    // token read it alone). One workgroup per output element: its 64 threads
    // read consecutive elements of the weight row (coalesced) and reduce.
    // params: [N, K, M, x_row]; grid: (M, N, 1), or (65535, N, ceil(M /
    // 65535)) past 65535 rows (see @output_row).
    gpu.func @matmul_f32(%x: memref<?xf32>, %w: memref<?xf32>,
                         %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %sum = func.call @row_partial_f32(%x, %x_base, %w, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32

      func.call @store_row_sum(%y, %params, %sum, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, index, index, index) -> ()
      gpu.return
    }

    // As @matmul_f32 for many rows at once (a prefill): each workgroup of
    // 16x16 threads computes a 16x16 tile of y, staging 16-wide slices of
    // x's rows and w's rows through workgroup memory, so each value read
    // from global memory serves 16 products instead of one. Thread (tx, ty)
    // loads x[n0 + ty, k0 + tx] and w[m0 + ty, k0 + tx] and computes
    // y[n0 + ty, m0 + tx]; the sum over k runs in order, 16 at a time.
    // params: [N, K, M, x_row]; grid: (ceil(M / 16), ceil(N / 16), 1).
    gpu.func @matmul_tiled_f32(%x: memref<?xf32>, %w: memref<?xf32>,
                               %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [16, 16, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      %xs = memref.alloc() : memref<256xf32, 3>
      %ws = memref.alloc() : memref<256xf32, 3>
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %n_i32 = memref.load %params[%c0] : memref<?xi32>
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %n_size = arith.index_cast %n_i32 : i32 to index
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %m0 = arith.muli %bx, %c16 : index
      %n0 = arith.muli %by, %c16 : index
      %n = arith.addi %n0, %ty : index
      %m_load = arith.addi %m0, %ty : index
      %m_out = arith.addi %m0, %tx : index
      %n_ok = arith.cmpi ult, %n, %n_size : index
      %m_load_ok = arith.cmpi ult, %m_load, %m_size : index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %w_base = arith.muli %m_load, %k_size : index
      %ty16 = arith.muli %ty, %c16 : index
      %tx16 = arith.muli %tx, %c16 : index
      %slot = arith.addi %ty16, %tx : index
      %sum = scf.for %k0 = %c0 to %k_size step %c16 iter_args(%acc = %zero) -> f32 {
        %k = arith.addi %k0, %tx : index
        %k_ok = arith.cmpi ult, %k, %k_size : index
        %x_ok = arith.andi %n_ok, %k_ok : i1
        %xv = scf.if %x_ok -> f32 {
          %xi = arith.addi %x_base, %k : index
          %v = memref.load %x[%xi] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %xv, %xs[%slot] : memref<256xf32, 3>
        %w_ok = arith.andi %m_load_ok, %k_ok : i1
        %wv = scf.if %w_ok -> f32 {
          %wi = arith.addi %w_base, %k : index
          %v = memref.load %w[%wi] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %wv, %ws[%slot] : memref<256xf32, 3>
        gpu.barrier
        %part = scf.for %kk = %c0 to %c16 step %c1 iter_args(%a = %acc) -> f32 {
          %xi = arith.addi %ty16, %kk : index
          %wi = arith.addi %tx16, %kk : index
          %xv2 = memref.load %xs[%xi] : memref<256xf32, 3>
          %wv2 = memref.load %ws[%wi] : memref<256xf32, 3>
          %next = math.fma %xv2, %wv2, %a : f32
          scf.yield %next : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      %m_out_ok = arith.cmpi ult, %m_out, %m_size : index
      %store_ok = arith.andi %n_ok, %m_out_ok : i1
      scf.if %store_ok {
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m_out : index
        memref.store %sum, %y[%yi] : memref<?xf32>
      }
      gpu.return
    }

    // As @matmul_tiled_f32 with w in a byte format, each element dequantized
    // as its tile is staged (@weight_element).
    // params: [N, K, M, x_row, format: 1 f16, 2 bf16, 3 q4_0, 4 q4_k, 5 q6_k,
    // 6 q8_0]; grid: (ceil(M / 16), ceil(N / 16), 1).
    gpu.func @matmul_tiled_bytes(%x: memref<?xf32>, %w: memref<?xi8>,
                                 %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [16, 16, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      %xs = memref.alloc() : memref<256xf32, 3>
      %ws = memref.alloc() : memref<256xf32, 3>
      %tx = gpu.thread_id x
      %ty = gpu.thread_id y
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %n_i32 = memref.load %params[%c0] : memref<?xi32>
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %n_size = arith.index_cast %n_i32 : i32 to index
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %c4 = arith.constant 4 : index
      %format = memref.load %params[%c4] : memref<?xi32>
      %m0 = arith.muli %bx, %c16 : index
      %n0 = arith.muli %by, %c16 : index
      %n = arith.addi %n0, %ty : index
      %m_load = arith.addi %m0, %ty : index
      %m_out = arith.addi %m0, %tx : index
      %n_ok = arith.cmpi ult, %n, %n_size : index
      %m_load_ok = arith.cmpi ult, %m_load, %m_size : index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %ty16 = arith.muli %ty, %c16 : index
      %tx16 = arith.muli %tx, %c16 : index
      %slot = arith.addi %ty16, %tx : index
      %sum = scf.for %k0 = %c0 to %k_size step %c16 iter_args(%acc = %zero) -> f32 {
        %k = arith.addi %k0, %tx : index
        %k_ok = arith.cmpi ult, %k, %k_size : index
        %x_ok = arith.andi %n_ok, %k_ok : i1
        %xv = scf.if %x_ok -> f32 {
          %xi = arith.addi %x_base, %k : index
          %v = memref.load %x[%xi] : memref<?xf32>
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %xv, %xs[%slot] : memref<256xf32, 3>
        %w_ok = arith.andi %m_load_ok, %k_ok : i1
        %wv = scf.if %w_ok -> f32 {
          %v = func.call @weight_element(%w, %m_load, %k, %k_size, %format) : (memref<?xi8>, index, index, index, i32) -> f32
          scf.yield %v : f32
        } else {
          scf.yield %zero : f32
        }
        memref.store %wv, %ws[%slot] : memref<256xf32, 3>
        gpu.barrier
        %part = scf.for %kk = %c0 to %c16 step %c1 iter_args(%a = %acc) -> f32 {
          %xi = arith.addi %ty16, %kk : index
          %wi = arith.addi %tx16, %kk : index
          %xv2 = memref.load %xs[%xi] : memref<256xf32, 3>
          %wv2 = memref.load %ws[%wi] : memref<256xf32, 3>
          %next = math.fma %xv2, %wv2, %a : f32
          scf.yield %next : f32
        }
        gpu.barrier
        scf.yield %part : f32
      }
      %m_out_ok = arith.cmpi ult, %m_out, %m_size : index
      %store_ok = arith.andi %n_ok, %m_out_ok : i1
      scf.if %store_ok {
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m_out : index
        memref.store %sum, %y[%yi] : memref<?xf32>
      }
      gpu.return
    }

    // A gated feed-forward's two decode products and its SwiGLU in one
    // dispatch: y[n, m] = silu(x[n] · w_gate[m]) * (x[n] · w_up[m]), each
    // product as @matmul_f32 computes it and the gate as @silu_mul_f32
    // does, so the result is theirs bit for bit.
    // params: [N, K, M, x_row]; grid: as @matmul_f32's.
    gpu.func @matmul_glu_f32(%x: memref<?xf32>, %w_gate: memref<?xf32>,
                             %w_up: memref<?xf32>, %y: memref<?xf32>,
                             %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %gate = func.call @row_partial_f32(%x, %x_base, %w_gate, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32
      %up = func.call @row_partial_f32(%x, %x_base, %w_up, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32
      func.call @store_glu(%y, %params, %gate, %up, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, f32, index, index, index) -> ()
      gpu.return
    }

    // @matmul_glu_f32 with both weights in one byte format.
    // params: [N, K, M, x_row, format as @matmul_tiled_bytes]; grid: as the
    // decode products'.
    gpu.func @matmul_glu_bytes(%x: memref<?xf32>, %w_gate: memref<?xi8>,
                               %w_up: memref<?xi8>, %y: memref<?xf32>,
                               %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %format = memref.load %params[%c4] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %gate = func.call @row_partial_bytes(%x, %x_base, %w_gate, %m, %k_size, %tid, %format) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i32) -> f32
      %up = func.call @row_partial_bytes(%x, %x_base, %w_up, %m, %k_size, %tid, %format) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i32) -> f32
      func.call @store_glu(%y, %params, %gate, %up, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, f32, index, index, index) -> ()
      gpu.return
    }

    // Three decode products of one input in one dispatch (a layer's query,
    // key and value projections): row r of the M0 + M1 + M2 outputs is row
    // r of w0 into y0, else row r - M0 of w1 into y1, else row r - M0 - M1
    // of w2 into y2, each as @matmul_f32 computes it. Eight buffers, more
    // than the smallest Vulkan devices bind: NVIDIA and AMD programs use it.
    // params: [N, K, M0 + M1 + M2, x_row, M0, M1]; grid: as @matmul_f32's
    // over M0 + M1 + M2 rows.
    gpu.func @matmul3_f32(%x: memref<?xf32>, %w0: memref<?xf32>,
                          %w1: memref<?xf32>, %w2: memref<?xf32>,
                          %y0: memref<?xf32>, %y1: memref<?xf32>,
                          %y2: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %row = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_size = func.call @param_index(%params, %c1) : (memref<?xi32>, index) -> index
      %x_base = func.call @decode_x_base(%params, %n) : (memref<?xi32>, index) -> index
      %m_total = func.call @param_index(%params, %c2) : (memref<?xi32>, index) -> index
      %m0 = func.call @param_index(%params, %c4) : (memref<?xi32>, index) -> index
      %m1 = func.call @param_index(%params, %c5) : (memref<?xi32>, index) -> index
      %m01 = arith.addi %m0, %m1 : index
      %m2 = arith.subi %m_total, %m01 : index
      %in0 = arith.cmpi ult, %row, %m0 : index
      %in1 = arith.cmpi ult, %row, %m01 : index
      scf.if %in0 {
        %share = func.call @row_partial_f32(%x, %x_base, %w0, %row, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32
        func.call @store_sum_at(%y0, %m0, %share, %n, %row, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
      } else {
        scf.if %in1 {
          %r = arith.subi %row, %m0 : index
          %share = func.call @row_partial_f32(%x, %x_base, %w1, %r, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32
          func.call @store_sum_at(%y1, %m1, %share, %n, %r, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
        } else {
          %r = arith.subi %row, %m01 : index
          %share = func.call @row_partial_f32(%x, %x_base, %w2, %r, %k_size, %tid) : (memref<?xf32>, index, memref<?xf32>, index, index, index) -> f32
          func.call @store_sum_at(%y2, %m2, %share, %n, %r, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
        }
      }
      gpu.return
    }

    // @matmul3_f32 with the three weights in one byte format.
    // params: [N, K, M0 + M1 + M2, x_row, M0, M1, format as
    // @matmul_tiled_bytes]; grid: as @matmul3_f32's.
    gpu.func @matmul3_bytes(%x: memref<?xf32>, %w0: memref<?xi8>,
                            %w1: memref<?xi8>, %w2: memref<?xi8>,
                            %y0: memref<?xf32>, %y1: memref<?xf32>,
                            %y2: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %format = memref.load %params[%c6] : memref<?xi32>
      %row = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_size = func.call @param_index(%params, %c1) : (memref<?xi32>, index) -> index
      %x_base = func.call @decode_x_base(%params, %n) : (memref<?xi32>, index) -> index
      %m_total = func.call @param_index(%params, %c2) : (memref<?xi32>, index) -> index
      %m0 = func.call @param_index(%params, %c4) : (memref<?xi32>, index) -> index
      %m1 = func.call @param_index(%params, %c5) : (memref<?xi32>, index) -> index
      %m01 = arith.addi %m0, %m1 : index
      %m2 = arith.subi %m_total, %m01 : index
      %in0 = arith.cmpi ult, %row, %m0 : index
      %in1 = arith.cmpi ult, %row, %m01 : index
      scf.if %in0 {
        %share = func.call @row_partial_bytes(%x, %x_base, %w0, %row, %k_size, %tid, %format) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i32) -> f32
        func.call @store_sum_at(%y0, %m0, %share, %n, %row, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
      } else {
        scf.if %in1 {
          %r = arith.subi %row, %m0 : index
          %share = func.call @row_partial_bytes(%x, %x_base, %w1, %r, %k_size, %tid, %format) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i32) -> f32
          func.call @store_sum_at(%y1, %m1, %share, %n, %r, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
        } else {
          %r = arith.subi %row, %m01 : index
          %share = func.call @row_partial_bytes(%x, %x_base, %w2, %r, %k_size, %tid, %format) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i32) -> f32
          func.call @store_sum_at(%y2, %m2, %share, %n, %r, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
        }
      }
      gpu.return
    }

    // As @matmul_f32 with w in Q8_0: blocks of 34 bytes, an f16 scale then
    // 32 signed bytes, value = scale * byte. Each thread takes whole blocks
    // of the row, so the scale is widened once per 32 products.
    // params: [N, K, M, x_row] (K a multiple of 32); grid: (M, N, 1).
    gpu.func @matmul_q8_0(%x: memref<?xf32>, %w: memref<?xi8>,
                          %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %sum = func.call @row_partial_q8_0(%x, %x_base, %w, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xi8>, index, index, index) -> f32

      func.call @store_row_sum(%y, %params, %sum, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, index, index, index) -> ()
      gpu.return
    }

    // y[t, :] = table[ids[t], :]: the token embedding. params: [cols];
    // grid: (tokens, 1, 1).
    gpu.func @get_rows_f32(%table: memref<?xf32>, %ids: memref<?xi32>,
                           %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %token = gpu.block_id x
      %tid = gpu.thread_id x
      %cols_i32 = memref.load %params[%c0] : memref<?xi32>
      %cols = arith.index_cast %cols_i32 : i32 to index
      %id_i32 = memref.load %ids[%token] : memref<?xi32>
      %id = arith.index_cast %id_i32 : i32 to index
      %source = arith.muli %id, %cols : index
      %target = arith.muli %token, %cols : index
      scf.for %i = %tid to %cols step %c64 {
        %from = arith.addi %source, %i : index
        %to = arith.addi %target, %i : index
        %v = memref.load %table[%from] : memref<?xf32>
        memref.store %v, %y[%to] : memref<?xf32>
      }
      gpu.return
    }

    // As @get_rows_f32 from a Q8_0 table (rows of cols / 32 blocks of 34
    // bytes), dequantized. params: [cols]; grid: (tokens, 1, 1).
    gpu.func @get_rows_q8_0(%table: memref<?xi8>, %ids: memref<?xi32>,
                            %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %c34 = arith.constant 34 : index
      %c64 = arith.constant 64 : index
      %token = gpu.block_id x
      %tid = gpu.thread_id x
      %cols_i32 = memref.load %params[%c0] : memref<?xi32>
      %cols = arith.index_cast %cols_i32 : i32 to index
      %blocks = arith.divui %cols, %c32 : index
      %id_i32 = memref.load %ids[%token] : memref<?xi32>
      %id = arith.index_cast %id_i32 : i32 to index
      %row_blocks = arith.muli %id, %blocks : index
      %row_bytes = arith.muli %row_blocks, %c34 : index
      %target = arith.muli %token, %cols : index
      scf.for %i = %tid to %cols step %c64 {
        %block = arith.divui %i, %c32 : index
        %within = arith.remui %i, %c32 : index
        %block_bytes = arith.muli %block, %c34 : index
        %at = arith.addi %row_bytes, %block_bytes : index
        %half = func.call @load_u16(%table, %at) : (memref<?xi8>, index) -> i32
        %scale = func.call @f16_bits_to_f32(%half) : (i32) -> f32
        %quants = arith.addi %at, %c2 : index
        %qi = arith.addi %quants, %within : index
        %q = memref.load %table[%qi] : memref<?xi8>
        %qf = arith.sitofp %q : i8 to f32
        %v = arith.mulf %scale, %qf : f32
        %to = arith.addi %target, %i : index
        memref.store %v, %y[%to] : memref<?xf32>
      }
      gpu.return
    }

    // Rotary position embedding of x[tokens, heads, head_dim] from a table
    // of cos and sin per (token, pair) the host computes ([tokens,
    // head_dim / 2, 2]), so the angles are exact whatever precision a
    // device's sin and cos have. Pairs are adjacent (mode 0) or split halves
    // (mode 1, NeoX); elements past rotary_dim are copied.
    // params: [heads, head_dim, rotary_dim, mode]; grid: (tokens, heads, 1).
    gpu.func @rope_f32(%x: memref<?xf32>, %table: memref<?xf32>,
                       %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c64 = arith.constant 64 : index
      %c0_i32 = arith.constant 0 : i32
      %token = gpu.block_id x
      %head = gpu.block_id y
      %tid = gpu.thread_id x
      %heads_i32 = memref.load %params[%c0] : memref<?xi32>
      %dim_i32 = memref.load %params[%c1] : memref<?xi32>
      %rotary_i32 = memref.load %params[%c2] : memref<?xi32>
      %mode = memref.load %params[%c3] : memref<?xi32>
      %heads = arith.index_cast %heads_i32 : i32 to index
      %dim = arith.index_cast %dim_i32 : i32 to index
      %rotary = arith.index_cast %rotary_i32 : i32 to index
      %neox = arith.cmpi ne, %mode, %c0_i32 : i32
      %table_width = arith.divui %dim, %c2 : index
      %token_heads = arith.muli %token, %heads : index
      %row = arith.addi %token_heads, %head : index
      %base = arith.muli %row, %dim : index
      %table_row = arith.muli %token, %table_width : index
      scf.for %i = %tid to %dim step %c64 {
        %out = func.call @rope_element(%x, %base, %i, %table, %table_row, %rotary, %neox) : (memref<?xf32>, index, index, memref<?xf32>, index, index, i1) -> f32
        %at = arith.addi %base, %i : index
        memref.store %out, %y[%at] : memref<?xf32>
      }
      gpu.return
    }

    // Element `i` of the head at `base` of `x` after RoPE: rotated with its
    // partner (the next element, or the one half the rotary dimensions away
    // in NeoX mode) by the angle in row `table_row` of the table (cos, sin
    // pairs), or as it is past the first `rotary` elements.
    func.func private @rope_element(%x: memref<?xf32>, %base: index, %i: index, %table: memref<?xf32>, %table_row: index, %rotary: index, %neox: i1) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %half = arith.divui %rotary, %c2 : index
      %at = arith.addi %base, %i : index
      %v = memref.load %x[%at] : memref<?xf32>
      %rotated = arith.cmpi ult, %i, %rotary : index
      %out = scf.if %rotated -> f32 {
        %low = arith.cmpi ult, %i, %half : index
        %up = arith.addi %i, %half : index
        %down = arith.subi %i, %half : index
        %neox_partner = arith.select %low, %up, %down : index
        %neox_pair = arith.remui %i, %half : index
        %parity = arith.remui %i, %c2 : index
        %even = arith.cmpi eq, %parity, %c0 : index
        %normal_partner = arith.xori %i, %c1 : index
        %normal_pair = arith.divui %i, %c2 : index
        %partner = arith.select %neox, %neox_partner, %normal_partner : index
        %pair = arith.select %neox, %neox_pair, %normal_pair : index
        %first = arith.select %neox, %low, %even : i1
        %entry = arith.addi %table_row, %pair : index
        %cos_at = arith.muli %entry, %c2 : index
        %sin_at = arith.addi %cos_at, %c1 : index
        %cos = memref.load %table[%cos_at] : memref<?xf32>
        %sin = memref.load %table[%sin_at] : memref<?xf32>
        %partner_at = arith.addi %base, %partner : index
        %p = memref.load %x[%partner_at] : memref<?xf32>
        %negated = arith.negf %p : f32
        %signed = arith.select %first, %negated, %p : f32
        %a = arith.mulf %v, %cos : f32
        %b = arith.mulf %signed, %sin : f32
        %sum = arith.addf %a, %b : f32
        scf.yield %sum : f32
      } else {
        scf.yield %v : f32
      }
      return %out : f32
    }

    // The cache slot of `position` for a token whose block table starts at
    // `table_base` in `blocks`: the paged caches hold a sequence's position
    // p in block blocks[p / block_size], at offset p % block_size.
    func.func private @cache_slot(%blocks: memref<?xi32>, %table_base: index, %position: index, %block_size: index) -> index {
      %logical = arith.divui %position, %block_size : index
      %offset = arith.remui %position, %block_size : index
      %at = arith.addi %table_base, %logical : index
      %block_i32 = memref.load %blocks[%at] : memref<?xi32>
      %block = arith.index_cast %block_i32 : i32 to index
      %first = arith.muli %block, %block_size : index
      %slot = arith.addi %first, %offset : index
      return %slot : index
    }

    // A KV cache's words hold its elements as f32 (format 0) or as pairs of
    // 16-bit halves, the lower half first: IEEE halves (format 1) or
    // bfloat16 (format 2, the upper half of an f32). One kernel serves every
    // element type: element e of the cache.
    func.func private @cache_element(%cache: memref<?xi32>, %e: index, %format: i32) -> f32 {
      %c0_i32 = arith.constant 0 : i32
      %c2_i32 = arith.constant 2 : i32
      %halves = arith.cmpi ne, %format, %c0_i32 : i32
      %brain = arith.cmpi eq, %format, %c2_i32 : i32
      %value = scf.if %halves -> f32 {
        %c2 = arith.constant 2 : index
        %c16_i32 = arith.constant 16 : i32
        %low_bits = arith.constant 65535 : i32
        %word_at = arith.divui %e, %c2 : index
        %word = memref.load %cache[%word_at] : memref<?xi32>
        %odd = arith.remui %e, %c2 : index
        %odd_i32 = arith.index_cast %odd : index to i32
        %shift = arith.muli %odd_i32, %c16_i32 : i32
        %shifted = arith.shrui %word, %shift : i32
        %half = arith.andi %shifted, %low_bits : i32
        %v = scf.if %brain -> f32 {
          %upper = arith.shli %half, %c16_i32 : i32
          %b = arith.bitcast %upper : i32 to f32
          scf.yield %b : f32
        } else {
          %h = func.call @f16_bits_to_f32(%half) : (i32) -> f32
          scf.yield %h : f32
        }
        scf.yield %v : f32
      } else {
        %word = memref.load %cache[%e] : memref<?xi32>
        %v = arith.bitcast %word : i32 to f32
        scf.yield %v : f32
      }
      return %value : f32
    }

    // Word `at` of a cache of `format` (@cache_element's layout): `first`
    // as f32, or `first` and `second` as halves of the format, rounded to
    // nearest even as the CPU rounds.
    func.func private @store_cache_word(%cache: memref<?xi32>, %at: index, %first: f32, %second: f32, %format: i32) {
      %c0_i32 = arith.constant 0 : i32
      %c1_i32 = arith.constant 1 : i32
      %halves = arith.cmpi ne, %format, %c0_i32 : i32
      %ieee = arith.cmpi eq, %format, %c1_i32 : i32
      scf.if %halves {
        %word = scf.if %ieee -> i32 {
          %w = func.call @pack_f16x2(%first, %second) : (f32, f32) -> i32
          scf.yield %w : i32
        } else {
          %w = func.call @pack_bf16x2(%first, %second) : (f32, f32) -> i32
          scf.yield %w : i32
        }
        memref.store %word, %cache[%at] : memref<?xi32>
      } else {
        %word = arith.bitcast %first : f32 to i32
        memref.store %word, %cache[%at] : memref<?xi32>
      }
      return
    }

    // bfloat16 bits of lo in the low half, of hi in the high half
    // (@f32_to_bf16_bits).
    func.func private @pack_bf16x2(%lo: f32, %hi: f32) -> i32 {
      %sixteen = arith.constant 16 : i32
      %lo_bits = func.call @f32_to_bf16_bits(%lo) : (f32) -> i32
      %hi_bits = func.call @f32_to_bf16_bits(%hi) : (f32) -> i32
      %hi_shifted = arith.shli %hi_bits, %sixteen : i32
      %word = arith.ori %lo_bits, %hi_shifted : i32
      return %word : i32
    }

    // f32 → bfloat16 bits: the upper half, rounded to nearest even by
    // adding 0x7fff and the kept half's lowest bit (an overflow carries into
    // the exponent and gives infinity, as it should); a NaN is the quiet
    // 0x7fc0, as the CPU's code writes it (hetc-x86-expand-bf16).
    func.func private @f32_to_bf16_bits(%x: f32) -> i32 {
      %bits = arith.bitcast %x : f32 to i32
      %sixteen = arith.constant 16 : i32
      %one = arith.constant 1 : i32
      %bias = arith.constant 32767 : i32
      %quiet_nan = arith.constant 32704 : i32
      %kept = arith.shrui %bits, %sixteen : i32
      %lowest = arith.andi %kept, %one : i32
      %rounding = arith.addi %bias, %lowest : i32
      %rounded_bits = arith.addi %bits, %rounding : i32
      %rounded = arith.shrui %rounded_bits, %sixteen : i32
      %nan = arith.cmpf uno, %x, %x : f32
      %result = arith.select %nan, %quiet_nan, %rounded : i32
      return %result : i32
    }

    // f16 bits of lo in the low half, of hi in the high half, each rounded
    // to nearest even (@f32_to_f16_bits).
    func.func private @pack_f16x2(%lo: f32, %hi: f32) -> i32 {
      %sixteen = arith.constant 16 : i32
      %lo_bits = func.call @f32_to_f16_bits(%lo) : (f32) -> i32
      %hi_bits = func.call @f32_to_f16_bits(%hi) : (f32) -> i32
      %hi_shifted = arith.shli %hi_bits, %sixteen : i32
      %word = arith.ori %lo_bits, %hi_shifted : i32
      return %word : i32
    }

    // @pack_f16x2 by the hardware's conversion.
    func.func private @pack_f16x2_native(%lo: f32, %hi: f32) -> i32 {
      %pair = vector.from_elements %lo, %hi : vector<2xf32>
      %halves = arith.truncf %pair : vector<2xf32> to vector<2xf16>
      %word = vector.bitcast %halves : vector<2xf16> to vector<1xi32>
      %value = vector.extract %word[0] : i32 from vector<1xi32>
      return %value : i32
    }

    // f32 → IEEE half bits, rounded to nearest even, with integer
    // arithmetic and one f32 addition: at or past 65520 the result is
    // infinity (NaN stays NaN); below 2^-14 the addition of 0.5 rounds the
    // subnormal's bits into place; otherwise the exponent is rebased and
    // the 13 dropped bits rounded.
    func.func private @f32_to_f16_bits(%value: f32) -> i32 {
      %c13 = arith.constant 13 : i32
      %c16 = arith.constant 16 : i32
      %one = arith.constant 1 : i32
      %sign_mask = arith.constant -2147483648 : i32
      %f16_overflow = arith.constant 1199570944 : i32
      %f32_infinity = arith.constant 2139095040 : i32
      %f16_normal_min = arith.constant 947912704 : i32
      %half_bits = arith.constant 1056964608 : i32
      %rebias_and_round = arith.constant -939520001 : i32
      %infinity = arith.constant 31744 : i32
      %nan = arith.constant 32256 : i32
      %bits = arith.bitcast %value : f32 to i32
      %sign = arith.andi %bits, %sign_mask : i32
      %magnitude = arith.xori %bits, %sign : i32
      %is_nan = arith.cmpi ugt, %magnitude, %f32_infinity : i32
      %too_big = arith.cmpi uge, %magnitude, %f16_overflow : i32
      %big = arith.select %is_nan, %nan, %infinity : i32
      %is_small = arith.cmpi ult, %magnitude, %f16_normal_min : i32
      %magnitude_f = arith.bitcast %magnitude : i32 to f32
      %half = arith.bitcast %half_bits : i32 to f32
      %aligned = arith.addf %magnitude_f, %half : f32
      %aligned_bits = arith.bitcast %aligned : f32 to i32
      %small = arith.subi %aligned_bits, %half_bits : i32
      %dropped = arith.shrui %magnitude, %c13 : i32
      %odd = arith.andi %dropped, %one : i32
      %rebased = arith.addi %magnitude, %rebias_and_round : i32
      %rounded = arith.addi %rebased, %odd : i32
      %normal = arith.shrui %rounded, %c13 : i32
      %finite = arith.select %is_small, %small, %normal : i32
      %magnitude16 = arith.select %too_big, %big, %finite : i32
      %sign16 = arith.shrui %sign, %c16 : i32
      %result = arith.ori %magnitude16, %sign16 : i32
      return %result : i32
    }

    // Writes each token's keys and values ([tokens, kv_heads * head_dim],
    // f32) into the paged cache ([2, slots, kv_heads * head_dim]: keys,
    // then values; f32, f16 or bf16 by `format`, @cache_element) at its
    // position's slot (@cache_slot; a token's block table is row token *
    // table_stride of `blocks`: 0 when the tokens are one sequence's). A
    // thread writes whole words: one f32, or two halves. params: [row
    // (kv_heads * head_dim, even), slots, block_size, table_stride,
    // format]; grid: (tokens, 1, 1).
    gpu.func @kv_append_f32(%keys: memref<?xf32>, %values: memref<?xf32>,
                            %positions: memref<?xi32>, %blocks: memref<?xi32>,
                            %cache: memref<?xi32>,
                            %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %token = gpu.block_id x
      %tid = gpu.thread_id x
      %row_i32 = memref.load %params[%c0] : memref<?xi32>
      %context_i32 = memref.load %params[%c1] : memref<?xi32>
      %row = arith.index_cast %row_i32 : i32 to index
      %context = arith.index_cast %context_i32 : i32 to index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %block_size_i32 = memref.load %params[%c2] : memref<?xi32>
      %stride_i32 = memref.load %params[%c3] : memref<?xi32>
      %block_size = arith.index_cast %block_size_i32 : i32 to index
      %stride = arith.index_cast %stride_i32 : i32 to index
      %table_base = arith.muli %token, %stride : index
      %position_i32 = memref.load %positions[%token] : memref<?xi32>
      %position = arith.index_cast %position_i32 : i32 to index
      %slot = func.call @cache_slot(%blocks, %table_base, %position, %block_size) : (memref<?xi32>, index, index, index) -> index
      %c4 = arith.constant 4 : index
      %format = memref.load %params[%c4] : memref<?xi32>
      %c0_i32 = arith.constant 0 : i32
      %halves = arith.cmpi ne, %format, %c0_i32 : i32
      %per_word = arith.select %halves, %c2, %c1 : index
      %zero = arith.constant 0.0 : f32
      %source = arith.muli %token, %row : index
      %key_slot = arith.muli %slot, %row : index
      %part = arith.muli %context, %row : index
      %value_slot = arith.addi %part, %key_slot : index
      %words = arith.divui %row, %per_word : index
      %key_words = arith.divui %key_slot, %per_word : index
      %value_words = arith.divui %value_slot, %per_word : index
      scf.for %w = %tid to %words step %c64 {
        %i = arith.muli %w, %per_word : index
        %from = arith.addi %source, %i : index
        %k = memref.load %keys[%from] : memref<?xf32>
        %v = memref.load %values[%from] : memref<?xf32>
        %k1, %v1 = scf.if %halves -> (f32, f32) {
          %next = arith.addi %from, %c1 : index
          %k_next = memref.load %keys[%next] : memref<?xf32>
          %v_next = memref.load %values[%next] : memref<?xf32>
          scf.yield %k_next, %v_next : f32, f32
        } else {
          scf.yield %zero, %zero : f32, f32
        }
        %key_at = arith.addi %key_words, %w : index
        %value_at = arith.addi %value_words, %w : index
        func.call @store_cache_word(%cache, %key_at, %k, %k1, %format) : (memref<?xi32>, index, f32, f32, i32) -> ()
        func.call @store_cache_word(%cache, %value_at, %v, %v1, %format) : (memref<?xi32>, index, f32, f32, i32) -> ()
      }
      gpu.return
    }

    // @kv_append_f32 with the keys rotated as they are written (@rope_f32's
    // rotation, @rope_element): one dispatch and one pass over the keys
    // where there were two. params: [row = kv_heads * dim, slots, dim,
    // rotary, neox, block_size, table_stride, format]; the table holds each
    // token's angles; grid: (tokens, 1, 1).
    gpu.func @rope_kv_append_f32(%keys: memref<?xf32>, %table: memref<?xf32>,
                                 %values: memref<?xf32>, %positions: memref<?xi32>,
                                 %blocks: memref<?xi32>, %cache: memref<?xi32>,
                                 %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c64 = arith.constant 64 : index
      %c0_i32 = arith.constant 0 : i32
      %token = gpu.block_id x
      %tid = gpu.thread_id x
      %row_i32 = memref.load %params[%c0] : memref<?xi32>
      %context_i32 = memref.load %params[%c1] : memref<?xi32>
      %dim_i32 = memref.load %params[%c2] : memref<?xi32>
      %rotary_i32 = memref.load %params[%c3] : memref<?xi32>
      %mode = memref.load %params[%c4] : memref<?xi32>
      %row = arith.index_cast %row_i32 : i32 to index
      %context = arith.index_cast %context_i32 : i32 to index
      %dim = arith.index_cast %dim_i32 : i32 to index
      %rotary = arith.index_cast %rotary_i32 : i32 to index
      %neox = arith.cmpi ne, %mode, %c0_i32 : i32
      %table_width = arith.divui %dim, %c2 : index
      %table_row = arith.muli %token, %table_width : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %block_size_i32 = memref.load %params[%c5] : memref<?xi32>
      %stride_i32 = memref.load %params[%c6] : memref<?xi32>
      %block_size = arith.index_cast %block_size_i32 : i32 to index
      %stride = arith.index_cast %stride_i32 : i32 to index
      %table_base = arith.muli %token, %stride : index
      %position_i32 = memref.load %positions[%token] : memref<?xi32>
      %position = arith.index_cast %position_i32 : i32 to index
      %slot = func.call @cache_slot(%blocks, %table_base, %position, %block_size) : (memref<?xi32>, index, index, index) -> index
      %source = arith.muli %token, %row : index
      %key_slot = arith.muli %slot, %row : index
      %part = arith.muli %context, %row : index
      %value_slot = arith.addi %part, %key_slot : index
      %c7 = arith.constant 7 : index
      %format = memref.load %params[%c7] : memref<?xi32>
      %halves = arith.cmpi ne, %format, %c0_i32 : i32
      %per_word = arith.select %halves, %c2, %c1 : index
      %zero = arith.constant 0.0 : f32
      %words = arith.divui %row, %per_word : index
      %key_words = arith.divui %key_slot, %per_word : index
      %value_words = arith.divui %value_slot, %per_word : index
      // A word's two halves are neighbours within one head (dim is even).
      scf.for %w = %tid to %words step %c64 {
        %i = arith.muli %w, %per_word : index
        %head = arith.divui %i, %dim : index
        %element = arith.remui %i, %dim : index
        %head_offset = arith.muli %head, %dim : index
        %base = arith.addi %source, %head_offset : index
        %k = func.call @rope_element(%keys, %base, %element, %table, %table_row, %rotary, %neox) : (memref<?xf32>, index, index, memref<?xf32>, index, index, i1) -> f32
        %from = arith.addi %source, %i : index
        %v = memref.load %values[%from] : memref<?xf32>
        %k1, %v1 = scf.if %halves -> (f32, f32) {
          %next_element = arith.addi %element, %c1 : index
          %k_next = func.call @rope_element(%keys, %base, %next_element, %table, %table_row, %rotary, %neox) : (memref<?xf32>, index, index, memref<?xf32>, index, index, i1) -> f32
          %next = arith.addi %from, %c1 : index
          %v_next = memref.load %values[%next] : memref<?xf32>
          scf.yield %k_next, %v_next : f32, f32
        } else {
          scf.yield %zero, %zero : f32, f32
        }
        %key_at = arith.addi %key_words, %w : index
        %value_at = arith.addi %value_words, %w : index
        func.call @store_cache_word(%cache, %key_at, %k, %k1, %format) : (memref<?xi32>, index, f32, f32, i32) -> ()
        func.call @store_cache_word(%cache, %value_at, %v, %v1, %format) : (memref<?xi32>, index, f32, f32, i32) -> ()
      }
      gpu.return
    }

    // Grouped-query attention of q[tokens, heads, head_dim] over the paged
    // cache ([2, slots, kv_heads, head_dim]; a token's key p is at slot
    // @cache_slot of its block table, row token * table_stride of
    // `blocks`), one workgroup per (token, head).
    // Keys are taken 64 at a time with an online softmax (a running maximum
    // and sum; the accumulator rescaled as the maximum grows), so any context
    // runs in fixed workgroup memory and the score matrix is never stored.
    // Keys past key_count, and with causal masking past the token's own
    // position, are left out. head_dim is at most 256.
    // A decode step's one token splits its keys over workgroups instead
    // (keys_per_split > 0, workgroup z taking keys [z * keys_per_split, ...)):
    // each writes its unnormalized accumulator, maximum and sum as a record
    // of head_dim + 2 floats to `out`, at ((token * heads + head) * splits +
    // z), and @attention_combine_f32 merges them.
    // params: [heads, kv_heads, head_dim, slots, key_count, scale as f32
    // bits, causal, keys_per_split (0: one workgroup takes every key),
    // block_size, table_stride, format (@cache_element)]; grid: (tokens,
    // heads, splits).
    gpu.func @attention_f32(%q: memref<?xf32>, %cache: memref<?xi32>,
                            %positions: memref<?xi32>, %blocks: memref<?xi32>,
                            %out: memref<?xf32>,
                            %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %weights = memref.alloc() : memref<64xf32, 3>
      // The slot of each key of the chunk, found once for both passes.
      %slots = memref.alloc() : memref<64xi32, 3>
      %acc = memref.alloc() : memref<256xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %c6 = arith.constant 6 : index
      %c64 = arith.constant 64 : index
      %c0_i32 = arith.constant 0 : i32
      %zero = arith.constant 0.0 : f32
      // Below any score, finite, so exp() of differences never sees inf - inf.
      %lowest = arith.constant -1.0e30 : f32
      %token = gpu.block_id x
      %head = gpu.block_id y
      %tid = gpu.thread_id x
      %heads_i32 = memref.load %params[%c0] : memref<?xi32>
      %kv_heads_i32 = memref.load %params[%c1] : memref<?xi32>
      %dim_i32 = memref.load %params[%c2] : memref<?xi32>
      %context_i32 = memref.load %params[%c3] : memref<?xi32>
      %key_count_i32 = memref.load %params[%c4] : memref<?xi32>
      %scale_bits = memref.load %params[%c5] : memref<?xi32>
      %causal_i32 = memref.load %params[%c6] : memref<?xi32>
      %c7 = arith.constant 7 : index
      %per_split_i32 = memref.load %params[%c7] : memref<?xi32>
      %per_split = arith.index_cast %per_split_i32 : i32 to index
      %c8 = arith.constant 8 : index
      %c9 = arith.constant 9 : index
      %block_size_i32 = memref.load %params[%c8] : memref<?xi32>
      %stride_i32 = memref.load %params[%c9] : memref<?xi32>
      %block_size = arith.index_cast %block_size_i32 : i32 to index
      %stride = arith.index_cast %stride_i32 : i32 to index
      %table_base = arith.muli %token, %stride : index
      %c10 = arith.constant 10 : index
      %format = memref.load %params[%c10] : memref<?xi32>
      %split = gpu.block_id z
      %splits = gpu.grid_dim z
      %is_split = arith.cmpi ne, %per_split_i32, %c0_i32 : i32
      %scale = arith.bitcast %scale_bits : i32 to f32
      %heads = arith.index_cast %heads_i32 : i32 to index
      %kv_heads = arith.index_cast %kv_heads_i32 : i32 to index
      %dim = arith.index_cast %dim_i32 : i32 to index
      %context = arith.index_cast %context_i32 : i32 to index
      %key_count = arith.index_cast %key_count_i32 : i32 to index
      %causal = arith.cmpi ne, %causal_i32, %c0_i32 : i32
      %group = arith.divui %heads, %kv_heads : index
      %kv_head = arith.divui %head, %group : index
      %row = arith.muli %kv_heads, %dim : index
      %head_offset = arith.muli %kv_head, %dim : index
      %values_base = arith.muli %context, %row : index
      %token_heads = arith.muli %token, %heads : index
      %q_row = arith.addi %token_heads, %head : index
      %q_base = arith.muli %q_row, %dim : index
      %position_i32 = memref.load %positions[%token] : memref<?xi32>
      %position = arith.index_cast %position_i32 : i32 to index
      %own_count = arith.addi %position, %c1 : index
      %causal_count = arith.minui %own_count, %key_count : index
      %all = arith.select %causal, %causal_count, %key_count : index
      %split_start = arith.muli %split, %per_split : index
      %first = arith.minui %split_start, %all : index
      %split_end = arith.addi %first, %per_split : index
      %split_limit = arith.minui %split_end, %all : index
      %start = arith.select %is_split, %first, %c0 : index
      %limit = arith.select %is_split, %split_limit, %all : index
      scf.for %d = %tid to %dim step %c64 {
        memref.store %zero, %acc[%d] : memref<256xf32, 3>
      }
      %state:2 = scf.for %chunk = %start to %limit step %c64
          iter_args(%running_max = %lowest, %running_sum = %zero) -> (f32, f32) {
        %key = arith.addi %chunk, %tid : index
        %valid = arith.cmpi ult, %key, %limit : index
        %score, %key_slot = scf.if %valid -> (f32, index) {
          %slot = func.call @cache_slot(%blocks, %table_base, %key, %block_size) : (memref<?xi32>, index, index, index) -> index
          %key_row = arith.muli %slot, %row : index
          %key_base = arith.addi %key_row, %head_offset : index
          %dot = scf.for %d = %c0 to %dim step %c1 iter_args(%sum = %zero) -> f32 {
            %qi = arith.addi %q_base, %d : index
            %ki = arith.addi %key_base, %d : index
            %qv = memref.load %q[%qi] : memref<?xf32>
            %kv = func.call @cache_element(%cache, %ki, %format) : (memref<?xi32>, index, i32) -> f32
            %next = math.fma %qv, %kv, %sum : f32
            scf.yield %next : f32
          }
          %scaled = arith.mulf %dot, %scale : f32
          scf.yield %scaled, %slot : f32, index
        } else {
          scf.yield %lowest, %c0 : f32, index
        }
        %key_slot_i32 = arith.index_cast %key_slot : index to i32
        memref.store %key_slot_i32, %slots[%tid] : memref<64xi32, 3>
        %chunk_max = func.call @workgroup_max(%score, %tid) : (f32, index) -> f32
        %new_max = arith.maximumf %running_max, %chunk_max : f32
        %shifted = arith.subf %score, %new_max : f32
        %exp = math.exp %shifted : f32
        %weight = arith.select %valid, %exp, %zero : f32
        memref.store %weight, %weights[%tid] : memref<64xf32, 3>
        %chunk_sum = func.call @workgroup_sum(%weight, %tid) : (f32, index) -> f32
        %max_change = arith.subf %running_max, %new_max : f32
        %correction = math.exp %max_change : f32
        %kept = arith.mulf %running_sum, %correction : f32
        %new_sum = arith.addf %kept, %chunk_sum : f32
        %remaining = arith.subi %limit, %chunk : index
        %count = arith.minui %remaining, %c64 : index
        // Each thread owns the accumulator elements d ≡ tid (mod 64) and
        // reads the values of the chunk's keys along d (coalesced).
        scf.for %d = %tid to %dim step %c64 {
          %old = memref.load %acc[%d] : memref<256xf32, 3>
          %rescaled = arith.mulf %old, %correction : f32
          %value_column = arith.addi %values_base, %head_offset : index
          %column = arith.addi %value_column, %d : index
          %total = scf.for %t = %c0 to %count step %c1 iter_args(%sum = %rescaled) -> f32 {
            %w = memref.load %weights[%t] : memref<64xf32, 3>
            %k_slot_i32 = memref.load %slots[%t] : memref<64xi32, 3>
            %k_slot = arith.index_cast %k_slot_i32 : i32 to index
            %k_row = arith.muli %k_slot, %row : index
            %vi = arith.addi %column, %k_row : index
            %v = func.call @cache_element(%cache, %vi, %format) : (memref<?xi32>, index, i32) -> f32
            %next = math.fma %w, %v, %sum : f32
            scf.yield %next : f32
          }
          memref.store %total, %acc[%d] : memref<256xf32, 3>
        }
        gpu.barrier
        scf.yield %new_max, %new_sum : f32, f32
      }
      scf.if %is_split {
        %record_dim = arith.addi %dim, %c2 : index
        %q_splits = arith.muli %q_row, %splits : index
        %record = arith.addi %q_splits, %split : index
        %record_base = arith.muli %record, %record_dim : index
        scf.for %d = %tid to %dim step %c64 {
          %a = memref.load %acc[%d] : memref<256xf32, 3>
          %oi = arith.addi %record_base, %d : index
          memref.store %a, %out[%oi] : memref<?xf32>
        }
        %is_first = arith.cmpi eq, %tid, %c0 : index
        scf.if %is_first {
          %max_at = arith.addi %record_base, %dim : index
          %sum_at = arith.addi %max_at, %c1 : index
          memref.store %state#0, %out[%max_at] : memref<?xf32>
          memref.store %state#1, %out[%sum_at] : memref<?xf32>
        }
      } else {
        scf.for %d = %tid to %dim step %c64 {
          %a = memref.load %acc[%d] : memref<256xf32, 3>
          %normalized = arith.divf %a, %state#1 : f32
          %oi = arith.addi %q_base, %d : index
          memref.store %normalized, %out[%oi] : memref<?xf32>
        }
      }
      gpu.return
    }

    // Merges the records @attention_f32 wrote for a token's keys split over
    // workgroups: each split's accumulator and sum are rescaled to the
    // largest maximum, summed, and the accumulator divided by the sum.
    // params: [heads, head_dim, splits]; grid: (tokens, heads, 1).
    gpu.func @attention_combine_f32(%partial: memref<?xf32>, %out: memref<?xf32>,
                                    %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %lowest = arith.constant -1.0e30 : f32
      %token = gpu.block_id x
      %head = gpu.block_id y
      %tid = gpu.thread_id x
      %heads_i32 = memref.load %params[%c0] : memref<?xi32>
      %dim_i32 = memref.load %params[%c1] : memref<?xi32>
      %splits_i32 = memref.load %params[%c2] : memref<?xi32>
      %heads = arith.index_cast %heads_i32 : i32 to index
      %dim = arith.index_cast %dim_i32 : i32 to index
      %splits = arith.index_cast %splits_i32 : i32 to index
      %record_dim = arith.addi %dim, %c2 : index
      %token_heads = arith.muli %token, %heads : index
      %q_row = arith.addi %token_heads, %head : index
      %first_record = arith.muli %q_row, %splits : index
      %out_base = arith.muli %q_row, %dim : index
      %largest = scf.for %s = %c0 to %splits step %c1 iter_args(%m = %lowest) -> f32 {
        %record = arith.addi %first_record, %s : index
        %base = arith.muli %record, %record_dim : index
        %at = arith.addi %base, %dim : index
        %split_max = memref.load %partial[%at] : memref<?xf32>
        %next = arith.maximumf %m, %split_max : f32
        scf.yield %next : f32
      }
      %total = scf.for %s = %c0 to %splits step %c1 iter_args(%sum = %zero) -> f32 {
        %record = arith.addi %first_record, %s : index
        %base = arith.muli %record, %record_dim : index
        %max_at = arith.addi %base, %dim : index
        %sum_at = arith.addi %max_at, %c1 : index
        %split_max = memref.load %partial[%max_at] : memref<?xf32>
        %split_sum = memref.load %partial[%sum_at] : memref<?xf32>
        %shift = arith.subf %split_max, %largest : f32
        %factor = math.exp %shift : f32
        %next = math.fma %split_sum, %factor, %sum : f32
        scf.yield %next : f32
      }
      scf.for %d = %tid to %dim step %c64 {
        %value = scf.for %s = %c0 to %splits step %c1 iter_args(%sum = %zero) -> f32 {
          %record = arith.addi %first_record, %s : index
          %base = arith.muli %record, %record_dim : index
          %max_at = arith.addi %base, %dim : index
          %split_max = memref.load %partial[%max_at] : memref<?xf32>
          %shift = arith.subf %split_max, %largest : f32
          %factor = math.exp %shift : f32
          %ai = arith.addi %base, %d : index
          %a = memref.load %partial[%ai] : memref<?xf32>
          %next = math.fma %a, %factor, %sum : f32
          scf.yield %next : f32
        }
        %normalized = arith.divf %value, %total : f32
        %oi = arith.addi %out_base, %d : index
        memref.store %normalized, %out[%oi] : memref<?xf32>
      }
      gpu.return
    }

    // As @matmul_f32 with w in IEEE half precision, read as bytes
    // (little-endian pairs) and widened exactly. params: [N, K, M, x_row];
    // grid: (M, N, 1), or past 65535 rows as @output_row says.
    gpu.func @matmul_f16(%x: memref<?xf32>, %w: memref<?xi8>,
                         %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %bf16 = arith.constant false
      func.call @matmul_16bit(%x, %w, %y, %params, %bf16) : (memref<?xf32>, memref<?xi8>, memref<?xf32>, memref<?xi32>, i1) -> ()
      gpu.return
    }

    // As @matmul_f16 with w in bfloat16: the upper half of an f32.
    gpu.func @matmul_bf16(%x: memref<?xf32>, %w: memref<?xi8>,
                          %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %bf16 = arith.constant true
      func.call @matmul_16bit(%x, %w, %y, %params, %bf16) : (memref<?xf32>, memref<?xi8>, memref<?xf32>, memref<?xi32>, i1) -> ()
      gpu.return
    }

    // The body of @matmul_f16 (`bf16` false) and @matmul_bf16 (true). When
    // K is a multiple of 8 every row starts on 16 bytes, and each thread
    // takes 8 weights at a time (@dot_16bit_x8: one 128-bit load on GPUs
    // that have one), so 64 threads read 1 KiB of the row at once; other
    // rows, and the last of K, go one weight at a time.
    func.func private @matmul_16bit(%x: memref<?xf32>, %w: memref<?xi8>,
                                    %y: memref<?xf32>, %params: memref<?xi32>,
                                    %bf16: i1) {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %sum = func.call @row_partial_16bit(%x, %x_base, %w, %m, %k_size, %tid, %bf16) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i1) -> f32
      func.call @store_row_sum(%y, %params, %sum, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, index, index, index) -> ()
      return
    }

    // The 16 bits `bits` of an f16 (`bf16` false) or a bfloat16 (true) as
    // an f32, exactly.
    func.func private @widen_16bit(%bits: i32, %bf16: i1) -> f32 {
      %c16_i32 = arith.constant 16 : i32
      %value = scf.if %bf16 -> f32 {
        %wide = arith.shli %bits, %c16_i32 : i32
        %v = arith.bitcast %wide : i32 to f32
        scf.yield %v : f32
      } else {
        %v = func.call @f16_bits_to_f32(%bits) : (i32) -> f32
        scf.yield %v : f32
      }
      return %value : f32
    }

    // sum(x[xi + j] * w[j] for j < 8), the eight 16-bit weights from byte
    // `at` of `w` (16-byte aligned), widened exactly.
    func.func private @dot_16bit_x8(%w: memref<?xi8>, %at: index, %x: memref<?xf32>, %xi: index, %bf16: i1) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %zero = arith.constant 0.0 : f32
      %sum = scf.for %j = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
        %offset = arith.muli %j, %c2 : index
        %byte = arith.addi %at, %offset : index
        %bits = func.call @load_u16(%w, %byte) : (memref<?xi8>, index) -> i32
        %wv = func.call @widen_16bit(%bits, %bf16) : (i32, i1) -> f32
        %xj = arith.addi %xi, %j : index
        %xv = memref.load %x[%xj] : memref<?xf32>
        %next = math.fma %xv, %wv, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // @dot_16bit_x8 in two 128-bit loads (the weights, then the activations
    // in two halves' worth of f32) and hardware conversion (bfloat16: the
    // bits shifted into the upper half of each f32).
    func.func private @dot_16bit_x8_native(%w: memref<?xi8>, %at: index, %x: memref<?xf32>, %xi: index, %bf16: i1) -> f32 {
      %bytes = vector.load %w[%at] {alignment = 16} : memref<?xi8>, vector<16xi8>
      %weights = scf.if %bf16 -> vector<8xf32> {
        %words = vector.bitcast %bytes : vector<16xi8> to vector<8xi16>
        %wide = arith.extui %words : vector<8xi16> to vector<8xi32>
        %sixteen = arith.constant dense<16> : vector<8xi32>
        %shifted = arith.shli %wide, %sixteen : vector<8xi32>
        %v = vector.bitcast %shifted : vector<8xi32> to vector<8xf32>
        scf.yield %v : vector<8xf32>
      } else {
        %halves = vector.bitcast %bytes : vector<16xi8> to vector<8xf16>
        %v = arith.extf %halves : vector<8xf16> to vector<8xf32>
        scf.yield %v : vector<8xf32>
      }
      %xs = vector.load %x[%xi] {alignment = 16} : memref<?xf32>, vector<8xf32>
      %products = arith.mulf %xs, %weights : vector<8xf32>
      %sum = vector.reduction <add>, %products : vector<8xf32> into f32
      return %sum : f32
    }

    // As @matmul_q8_0 with w in Q4_0: blocks of 18 bytes, an f16 scale then
    // 16 bytes whose low nibbles are elements 0-15 and high nibbles 16-31,
    // value = scale * (nibble - 8). params: [N, K, M, x_row] (K a multiple
    // of 32); grid: (M, N, 1).
    gpu.func @matmul_q4_0(%x: memref<?xf32>, %w: memref<?xi8>,
                          %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %sum = func.call @row_partial_q4_0(%x, %x_base, %w, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xi8>, index, index, index) -> f32

      func.call @store_row_sum(%y, %params, %sum, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, index, index, index) -> ()
      gpu.return
    }

    // The token embedding from an f16, bf16, Q4_0, Q4_K or Q6_K table,
    // dequantized: params: [cols, format (1 f16, 2 bf16, 3 q4_0, 4 q4_k,
    // 5 q6_k)]; grid: (tokens, 1, 1).
    gpu.func @get_rows_bytes(%table: memref<?xi8>, %ids: memref<?xi32>,
                             %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %c18 = arith.constant 18 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c16_i32 = arith.constant 16 : i32
      %token = gpu.block_id x
      %tid = gpu.thread_id x
      %cols_i32 = memref.load %params[%c0] : memref<?xi32>
      %format = memref.load %params[%c1] : memref<?xi32>
      %cols = arith.index_cast %cols_i32 : i32 to index
      %id_i32 = memref.load %ids[%token] : memref<?xi32>
      %id = arith.index_cast %id_i32 : i32 to index
      %target = arith.muli %token, %cols : index
      %is_f16 = arith.cmpi eq, %format, %c1_i32 : i32
      %is_bf16 = arith.cmpi eq, %format, %c2_i32 : i32
      %c3_i32 = arith.constant 3 : i32
      %c4_i32 = arith.constant 4 : i32
      %c144 = arith.constant 144 : index
      %c210 = arith.constant 210 : index
      %c256 = arith.constant 256 : index
      %is_q4_0 = arith.cmpi eq, %format, %c3_i32 : i32
      %is_q4_k = arith.cmpi eq, %format, %c4_i32 : i32
      %blocks = arith.divui %cols, %c32 : index
      %row_blocks = arith.muli %id, %blocks : index
      %q4_row = arith.muli %row_blocks, %c18 : index
      %row_elements = arith.muli %id, %cols : index
      %half_row = arith.muli %row_elements, %c2 : index
      scf.for %i = %tid to %cols step %c64 {
        %i_bytes = arith.muli %i, %c2 : index
        %half_at = arith.addi %half_row, %i_bytes : index
        %value = scf.if %is_f16 -> f32 {
          %bits = func.call @load_u16(%table, %half_at) : (memref<?xi8>, index) -> i32
          %v = func.call @f16_bits_to_f32(%bits) : (i32) -> f32
          scf.yield %v : f32
        } else {
          %v = scf.if %is_bf16 -> f32 {
            %bits = func.call @load_u16(%table, %half_at) : (memref<?xi8>, index) -> i32
            %wide = arith.shli %bits, %c16_i32 : i32
            %f = arith.bitcast %wide : i32 to f32
            scf.yield %f : f32
          } else {
            %v2 = scf.if %is_q4_0 -> f32 {
            %block = arith.divui %i, %c32 : index
            %within = arith.remui %i, %c32 : index
            %block_bytes = arith.muli %block, %c18 : index
            %at = arith.addi %q4_row, %block_bytes : index
            %scale_bits = func.call @load_u16(%table, %at) : (memref<?xi8>, index) -> i32
            %scale = func.call @f16_bits_to_f32(%scale_bits) : (i32) -> f32
            %quants = arith.addi %at, %c2 : index
            %byte = arith.remui %within, %c16 : index
            %high = arith.divui %within, %c16 : index
            %qi = arith.addi %quants, %byte : index
            %q = func.call @nibble(%table, %qi, %high) : (memref<?xi8>, index, index) -> f32
            %f = arith.mulf %scale, %q : f32
            scf.yield %f : f32
            } else {
              %k_block = arith.divui %i, %c256 : index
              %k_within = arith.remui %i, %c256 : index
              %k_row_blocks = arith.divui %cols, %c256 : index
              %k_row_first = arith.muli %id, %k_row_blocks : index
              %k_index = arith.addi %k_row_first, %k_block : index
              %k_block_bytes = arith.select %is_q4_k, %c144, %c210 : index
              %k_at = arith.muli %k_index, %k_block_bytes : index
              %f = func.call @k_quant_element(%table, %k_at, %k_within, %is_q4_k) : (memref<?xi8>, index, index, i1) -> f32
              scf.yield %f : f32
            }
            scf.yield %v2 : f32
          }
          scf.yield %v : f32
        }
        %to = arith.addi %target, %i : index
        memref.store %value, %y[%to] : memref<?xf32>
      }
      gpu.return
    }

    // The decode products' shared steps. Each @row_partial_* is thread
    // tid's share (of 64) of the dot product of row m of w with x[x_base..]
    // over K; @store_row_sum adds the shares and writes y[n, m].

    func.func private @row_partial_f32(%x: memref<?xf32>, %x_base: index, %w: memref<?xf32>, %m: index, %k_size: index, %tid: index) -> f32 {
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %w_base = arith.muli %m, %k_size : index
      %sum = scf.for %k = %tid to %k_size step %c64 iter_args(%acc = %zero) -> f32 {
        %xi = arith.addi %x_base, %k : index
        %wi = arith.addi %w_base, %k : index
        %xv = memref.load %x[%xi] : memref<?xf32>
        %wv = memref.load %w[%wi] : memref<?xf32>
        %next = math.fma %xv, %wv, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // f16 or bf16 rows: eight weights at a time (@dot_16bit_x8) when K is a
    // multiple of 8, else one at a time.
    func.func private @row_partial_16bit(%x: memref<?xf32>, %x_base: index, %w: memref<?xi8>, %m: index, %k_size: index, %tid: index, %bf16: i1) -> f32 {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c512 = arith.constant 512 : index
      %c1024 = arith.constant 1024 : index
      %zero = arith.constant 0.0 : f32
      %w_row = arith.muli %m, %k_size : index
      %w_base = arith.muli %w_row, %c2 : index
      %k_rem = arith.remui %k_size, %c8 : index
      %aligned = arith.cmpi eq, %k_rem, %c0 : index
      %k_wide = arith.select %aligned, %k_size, %c0 : index
      %first8 = arith.muli %tid, %c8 : index
      // Two passes of 512 per iteration, both loads issued before either
      // sum: twice the bytes in flight per thread. The second pass past the
      // row reads the first pass's weights again and is not added, so the
      // sums are the one-pass loop's, in its order.
      %wide_sum = scf.for %k = %first8 to %k_wide step %c1024 iter_args(%acc = %zero) -> f32 {
        %k_next = arith.addi %k, %c512 : index
        %has_next = arith.cmpi ult, %k_next, %k_wide : index
        %k_second = arith.select %has_next, %k_next, %k : index
        %k_bytes = arith.muli %k, %c2 : index
        %at = arith.addi %w_base, %k_bytes : index
        %xi = arith.addi %x_base, %k : index
        %second_bytes = arith.muli %k_second, %c2 : index
        %second_at = arith.addi %w_base, %second_bytes : index
        %second_xi = arith.addi %x_base, %k_second : index
        %part = func.call @dot_16bit_x8(%w, %at, %x, %xi, %bf16) : (memref<?xi8>, index, memref<?xf32>, index, i1) -> f32
        %second = func.call @dot_16bit_x8(%w, %second_at, %x, %second_xi, %bf16) : (memref<?xi8>, index, memref<?xf32>, index, i1) -> f32
        %one = arith.addf %acc, %part : f32
        %two = arith.addf %one, %second : f32
        %next = arith.select %has_next, %two, %one : f32
        scf.yield %next : f32
      }
      %first1 = arith.addi %k_wide, %tid : index
      %sum = scf.for %k = %first1 to %k_size step %c64 iter_args(%acc = %wide_sum) -> f32 {
        %k_bytes = arith.muli %k, %c2 : index
        %at = arith.addi %w_base, %k_bytes : index
        %bits = func.call @load_u16(%w, %at) : (memref<?xi8>, index) -> i32
        %wv = func.call @widen_16bit(%bits, %bf16) : (i32, i1) -> f32
        %xi = arith.addi %x_base, %k : index
        %xv = memref.load %x[%xi] : memref<?xf32>
        %next = math.fma %xv, %wv, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // Q8_0 rows: each thread takes whole blocks, the scale widened once per
    // 32 products.
    func.func private @row_partial_q8_0(%x: memref<?xf32>, %x_base: index, %w: memref<?xi8>, %m: index, %k_size: index, %tid: index) -> f32 {
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %c34 = arith.constant 34 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %blocks = arith.divui %k_size, %c32 : index
      %row_blocks = arith.muli %m, %blocks : index
      %w_base = arith.muli %row_blocks, %c34 : index
      %sum = scf.for %b = %tid to %blocks step %c64 iter_args(%acc = %zero) -> f32 {
        %block_offset = arith.muli %b, %c34 : index
        %at = arith.addi %w_base, %block_offset : index
        %half = func.call @load_u16(%w, %at) : (memref<?xi8>, index) -> i32
        %scale = func.call @f16_bits_to_f32(%half) : (i32) -> f32
        %quants = arith.addi %at, %c2 : index
        %x_block = arith.muli %b, %c32 : index
        %x_at = arith.addi %x_base, %x_block : index
        %dot = func.call @q8_0_block_dot(%w, %quants, %x, %x_at) : (memref<?xi8>, index, memref<?xf32>, index) -> f32
        %next = math.fma %scale, %dot, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // Q4_0 rows, whole blocks per thread as Q8_0.
    func.func private @row_partial_q4_0(%x: memref<?xf32>, %x_base: index, %w: memref<?xi8>, %m: index, %k_size: index, %tid: index) -> f32 {
      %c2 = arith.constant 2 : index
      %c18 = arith.constant 18 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %blocks = arith.divui %k_size, %c32 : index
      %row_blocks = arith.muli %m, %blocks : index
      %w_base = arith.muli %row_blocks, %c18 : index
      %sum = scf.for %b = %tid to %blocks step %c64 iter_args(%acc = %zero) -> f32 {
        %block_offset = arith.muli %b, %c18 : index
        %at = arith.addi %w_base, %block_offset : index
        %half = func.call @load_u16(%w, %at) : (memref<?xi8>, index) -> i32
        %scale = func.call @f16_bits_to_f32(%half) : (i32) -> f32
        %quants = arith.addi %at, %c2 : index
        %x_block = arith.muli %b, %c32 : index
        %x_at = arith.addi %x_base, %x_block : index
        %dot = func.call @q4_0_block_dot(%w, %quants, %x, %x_at) : (memref<?xi8>, index, memref<?xf32>, index) -> f32
        %next = math.fma %scale, %dot, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // Q4_K or Q6_K rows: superblocks of 256 (144 or 210 bytes) per thread.
    func.func private @row_partial_k_quant(%x: memref<?xf32>, %x_base: index, %w: memref<?xi8>, %m: index, %k_size: index, %tid: index, %is_q4_k: i1) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %c144 = arith.constant 144 : index
      %c210 = arith.constant 210 : index
      %c256 = arith.constant 256 : index
      %zero = arith.constant 0.0 : f32
      %block_bytes = arith.select %is_q4_k, %c144, %c210 : index
      %blocks = arith.divui %k_size, %c256 : index
      %row_blocks = arith.muli %m, %blocks : index
      %w_base = arith.muli %row_blocks, %block_bytes : index
      %sum = scf.for %b = %tid to %blocks step %c64 iter_args(%acc = %zero) -> f32 {
        %block_offset = arith.muli %b, %block_bytes : index
        %at = arith.addi %w_base, %block_offset : index
        %x_block = arith.muli %b, %c256 : index
        %x_at = arith.addi %x_base, %x_block : index
        %dot = scf.for %e = %c0 to %c256 step %c1 iter_args(%inner = %zero) -> f32 {
          %wv = func.call @k_quant_element(%w, %at, %e, %is_q4_k) : (memref<?xi8>, index, index, i1) -> f32
          %xi = arith.addi %x_at, %e : index
          %xv = memref.load %x[%xi] : memref<?xf32>
          %next = math.fma %wv, %xv, %inner : f32
          scf.yield %next : f32
        }
        %next = arith.addf %acc, %dot : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // The share of a row in any byte format (the code of
    // @matmul_tiled_bytes), each format as its own kernel computes it.
    func.func private @row_partial_bytes(%x: memref<?xf32>, %x_base: index, %w: memref<?xi8>, %m: index, %k_size: index, %tid: index, %format: i32) -> f32 {
      %f16 = arith.constant 1 : i32
      %bf16 = arith.constant 2 : i32
      %q4_0 = arith.constant 3 : i32
      %q4_k = arith.constant 4 : i32
      %q6_k = arith.constant 5 : i32
      %is_f16 = arith.cmpi eq, %format, %f16 : i32
      %is_bf16 = arith.cmpi eq, %format, %bf16 : i32
      %is_half = arith.ori %is_f16, %is_bf16 : i1
      %is_q4_0 = arith.cmpi eq, %format, %q4_0 : i32
      %is_q4_k = arith.cmpi eq, %format, %q4_k : i32
      %is_q6_k = arith.cmpi eq, %format, %q6_k : i32
      %is_k = arith.ori %is_q4_k, %is_q6_k : i1
      %sum = scf.if %is_half -> f32 {
        %v = func.call @row_partial_16bit(%x, %x_base, %w, %m, %k_size, %tid, %is_bf16) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i1) -> f32
        scf.yield %v : f32
      } else {
        %rest = scf.if %is_q4_0 -> f32 {
          %v = func.call @row_partial_q4_0(%x, %x_base, %w, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xi8>, index, index, index) -> f32
          scf.yield %v : f32
        } else {
          %blocks = scf.if %is_k -> f32 {
            %v = func.call @row_partial_k_quant(%x, %x_base, %w, %m, %k_size, %tid, %is_q4_k) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i1) -> f32
            scf.yield %v : f32
          } else {
            %v = func.call @row_partial_q8_0(%x, %x_base, %w, %m, %k_size, %tid) : (memref<?xf32>, index, memref<?xi8>, index, index, index) -> f32
            scf.yield %v : f32
          }
          scf.yield %blocks : f32
        }
        scf.yield %rest : f32
      }
      return %sum : f32
    }

    // y[n * M + m] = the workgroup's sum of its threads' shares (params[2]
    // is M), written by thread 0.
    func.func private @store_row_sum(%y: memref<?xf32>, %params: memref<?xi32>, %share: f32, %n: index, %m: index, %tid: index) {
      %c2 = arith.constant 2 : index
      %m_size = func.call @param_index(%params, %c2) : (memref<?xi32>, index) -> index
      func.call @store_sum_at(%y, %m_size, %share, %n, %m, %tid) : (memref<?xf32>, index, f32, index, index, index) -> ()
      return
    }

    // params[i] as an index.
    func.func private @param_index(%params: memref<?xi32>, %i: index) -> index {
      %value = memref.load %params[%i] : memref<?xi32>
      %wide = arith.index_cast %value : i32 to index
      return %wide : index
    }

    // Where row n of a decode product's x starts: (n + x_row) * K, from
    // params [N, K, M, x_row, ...].
    func.func private @decode_x_base(%params: memref<?xi32>, %n: index) -> index {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %k_size = func.call @param_index(%params, %c1) : (memref<?xi32>, index) -> index
      %x_row = func.call @param_index(%params, %c3) : (memref<?xi32>, index) -> index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      return %x_base : index
    }

    // y[n * m_size + m] = the workgroup's sum of its threads' shares,
    // written by thread 0.
    func.func private @store_sum_at(%y: memref<?xf32>, %m_size: index, %share: f32, %n: index, %m: index, %tid: index) {
      %c0 = arith.constant 0 : index
      %total = func.call @workgroup_sum(%share, %tid) : (f32, index) -> f32
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m : index
        memref.store %total, %y[%yi] : memref<?xf32>
      }
      return
    }


    // silu(gate) * up, as @silu_mul_f32 computes it.
    func.func private @silu_times(%gate: f32, %up: f32) -> f32 {
      %one = arith.constant 1.0 : f32
      %negated = arith.negf %gate : f32
      %e = math.exp %negated : f32
      %denominator = arith.addf %one, %e : f32
      %silu = arith.divf %gate, %denominator : f32
      %out = arith.mulf %silu, %up : f32
      return %out : f32
    }

    // y[n * M + m] = silu(gate) * up from the threads' shares of both rows,
    // written by thread 0.
    func.func private @store_glu(%y: memref<?xf32>, %params: memref<?xi32>, %gate_share: f32, %up_share: f32, %n: index, %m: index, %tid: index) {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %m_size = arith.index_cast %m_i32 : i32 to index
      %gate = func.call @workgroup_sum(%gate_share, %tid) : (f32, index) -> f32
      %up = func.call @workgroup_sum(%up_share, %tid) : (f32, index) -> f32
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %out = func.call @silu_times(%gate, %up) : (f32, f32) -> f32
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m : index
        memref.store %out, %y[%yi] : memref<?xf32>
      }
      return
    }

    // The little-endian 16 bits at byte `at` of `bytes`, zero-extended.
    func.func private @load_u16(%bytes: memref<?xi8>, %at: index) -> i32 {
      %c1 = arith.constant 1 : index
      %mask = arith.constant 255 : i32
      %c8 = arith.constant 8 : i32
      %at1 = arith.addi %at, %c1 : index
      %lo8 = memref.load %bytes[%at] : memref<?xi8>
      %hi8 = memref.load %bytes[%at1] : memref<?xi8>
      %lo_wide = arith.extui %lo8 : i8 to i32
      %hi_wide = arith.extui %hi8 : i8 to i32
      %lo = arith.andi %lo_wide, %mask : i32
      %hi = arith.andi %hi_wide, %mask : i32
      %hi_shifted = arith.shli %hi, %c8 : i32
      %value = arith.ori %lo, %hi_shifted : i32
      return %value : i32
    }

    // The output row a decode product's workgroup computes (params[2] is M):
    // past the 65535 workgroups a grid axis promises (a vocabulary of 128256
    // rows), the rows go on along z. Workgroups past the last row compute
    // the last row again and write the same value.
    func.func private @output_row(%params: memref<?xi32>) -> index {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %x = gpu.block_id x
      %z = gpu.block_id z
      %width = gpu.grid_dim x
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %m_size = arith.index_cast %m_i32 : i32 to index
      %slice = arith.muli %z, %width : index
      %row = arith.addi %slice, %x : index
      %last = arith.subi %m_size, %c1 : index
      %m = arith.minui %row, %last : index
      return %m : index
    }

    // @load_u16 as one 16-bit load: every 16-bit field the library reads
    // (f16 weights, block scales) is 2-byte aligned in its GGUF layout.
    func.func private @load_u16_native(%bytes: memref<?xi8>, %at: index) -> i32 {
      %pair = vector.load %bytes[%at] {alignment = 2} : memref<?xi8>, vector<2xi8>
      %word = vector.bitcast %pair : vector<2xi8> to vector<1xi16>
      %half = vector.extract %word[0] : i16 from vector<1xi16>
      %value = arith.extui %half : i16 to i32
      return %value : i32
    }

    // sum(q[j] * x[x_at + j] for j < 32): the 32 signed quants of a Q8_0
    // block from byte `quants` of `w`, before its scale.
    func.func private @q8_0_block_dot(%w: memref<?xi8>, %quants: index, %x: memref<?xf32>, %x_at: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c32 = arith.constant 32 : index
      %zero = arith.constant 0.0 : f32
      %dot = scf.for %j = %c0 to %c32 step %c1 iter_args(%inner = %zero) -> f32 {
        %qi = arith.addi %quants, %j : index
        %q = memref.load %w[%qi] : memref<?xi8>
        %qf = arith.sitofp %q : i8 to f32
        %xi = arith.addi %x_at, %j : index
        %xv = memref.load %x[%xi] : memref<?xf32>
        %next = math.fma %qf, %xv, %inner : f32
        scf.yield %next : f32
      }
      return %dot : f32
    }

    // @q8_0_block_dot in 16-bit loads of the quants (a block is 2-byte
    // aligned) and 128-bit loads of x (a block's 32 values start on 128
    // bytes), with vector arithmetic.
    func.func private @q8_0_block_dot_native(%w: memref<?xi8>, %quants: index, %x: memref<?xf32>, %x_at: index) -> f32 {
      %q = vector.load %w[%quants] {alignment = 2} : memref<?xi8>, vector<32xi8>
      %qf = arith.sitofp %q : vector<32xi8> to vector<32xf32>
      %xs = vector.load %x[%x_at] {alignment = 16} : memref<?xf32>, vector<32xf32>
      %products = arith.mulf %qf, %xs : vector<32xf32>
      %dot = vector.reduction <add>, %products : vector<32xf32> into f32
      return %dot : f32
    }

    // sum(q[j] * x[x_at + j] for j < 32): a Q4_0 block's quants, nibbles
    // minus 8 (the low nibbles of its 16 bytes are elements 0..15, the high
    // ones 16..31), from byte `quants` of `w`, before its scale.
    func.func private @q4_0_block_dot(%w: memref<?xi8>, %quants: index, %x: memref<?xf32>, %x_at: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      %dot = scf.for %j = %c0 to %c16 step %c1 iter_args(%inner = %zero) -> f32 {
        %qi = arith.addi %quants, %j : index
        %low = func.call @nibble(%w, %qi, %c0) : (memref<?xi8>, index, index) -> f32
        %high = func.call @nibble(%w, %qi, %c1) : (memref<?xi8>, index, index) -> f32
        %xi_low = arith.addi %x_at, %j : index
        %xi_high = arith.addi %xi_low, %c16 : index
        %x_low = memref.load %x[%xi_low] : memref<?xf32>
        %x_high = memref.load %x[%xi_high] : memref<?xf32>
        %partial = math.fma %low, %x_low, %inner : f32
        %next = math.fma %high, %x_high, %partial : f32
        scf.yield %next : f32
      }
      return %dot : f32
    }

    // @q4_0_block_dot in 16-bit loads of the 16 quant bytes and 128-bit
    // loads of x, the nibbles split with vector arithmetic.
    func.func private @q4_0_block_dot_native(%w: memref<?xi8>, %quants: index, %x: memref<?xf32>, %x_at: index) -> f32 {
      %c16 = arith.constant 16 : index
      %mask = arith.constant dense<15> : vector<16xi32>
      %four = arith.constant dense<4> : vector<16xi32>
      %eight = arith.constant dense<8> : vector<16xi32>
      %bytes = vector.load %w[%quants] {alignment = 2} : memref<?xi8>, vector<16xi8>
      %wide = arith.extui %bytes : vector<16xi8> to vector<16xi32>
      %low_bits = arith.andi %wide, %mask : vector<16xi32>
      %high_bits = arith.shrui %wide, %four : vector<16xi32>
      %low_centered = arith.subi %low_bits, %eight : vector<16xi32>
      %high_centered = arith.subi %high_bits, %eight : vector<16xi32>
      %low = arith.sitofp %low_centered : vector<16xi32> to vector<16xf32>
      %high = arith.sitofp %high_centered : vector<16xi32> to vector<16xf32>
      %x_high_at = arith.addi %x_at, %c16 : index
      %x_low = vector.load %x[%x_at] {alignment = 16} : memref<?xf32>, vector<16xf32>
      %x_high = vector.load %x[%x_high_at] {alignment = 16} : memref<?xf32>, vector<16xf32>
      %low_products = arith.mulf %low, %x_low : vector<16xf32>
      %products = vector.fma %high, %x_high, %low_products : vector<16xf32>
      %dot = vector.reduction <add>, %products : vector<16xf32> into f32
      return %dot : f32
    }

    // Nibble `high` (0: low four bits, 1: high four) of byte `at`, minus 8.
    func.func private @nibble(%bytes: memref<?xi8>, %at: index, %high: index) -> f32 {
      %c4 = arith.constant 4 : i32
      %c8 = arith.constant 8 : i32
      %mask = arith.constant 15 : i32
      %byte8 = memref.load %bytes[%at] : memref<?xi8>
      %byte = arith.extui %byte8 : i8 to i32
      %high_i32 = arith.index_cast %high : index to i32
      %shift = arith.muli %high_i32, %c4 : i32
      %shifted = arith.shrui %byte, %shift : i32
      %bits = arith.andi %shifted, %mask : i32
      %centered = arith.subi %bits, %c8 : i32
      %value = arith.sitofp %centered : i32 to f32
      return %value : f32
    }

    // As @matmul_q8_0 with w in a K-quant (format 4: Q4_K, 144-byte blocks;
    // 5: Q6_K, 210-byte blocks; 256 elements each), dequantized element by
    // element as the CPU does. params: [N, K, M, x_row, format] (K a
    // multiple of 256); grid: (M, N, 1).
    gpu.func @matmul_k_quant(%x: memref<?xf32>, %w: memref<?xi8>,
                             %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %m = func.call @output_row(%params) : (memref<?xi32>) -> index
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %x_n = arith.addi %n, %x_row : index
      %x_base = arith.muli %x_n, %k_size : index
      %c4 = arith.constant 4 : index
      %q4_k = arith.constant 4 : i32
      %format = memref.load %params[%c4] : memref<?xi32>
      %is_q4_k = arith.cmpi eq, %format, %q4_k : i32
      %sum = func.call @row_partial_k_quant(%x, %x_base, %w, %m, %k_size, %tid, %is_q4_k) : (memref<?xf32>, index, memref<?xi8>, index, index, index, i1) -> f32

      func.call @store_row_sum(%y, %params, %sum, %n, %m, %tid) : (memref<?xf32>, memref<?xi32>, f32, index, index, index) -> ()
      gpu.return
    }

    // Element `e` (0-255) of the Q4_K block at byte `at` (with `q4_k`) or of
    // the Q6_K block there, as the CPU's dequantizer computes it.
    func.func private @k_quant_element(%bytes: memref<?xi8>, %at: index, %e: index, %q4_k: i1) -> f32 {
      %value = scf.if %q4_k -> f32 {
        %v = func.call @q4_k_element(%bytes, %at, %e) : (memref<?xi8>, index, index) -> f32
        scf.yield %v : f32
      } else {
        %v = func.call @q6_k_element(%bytes, %at, %e) : (memref<?xi8>, index, index) -> f32
        scf.yield %v : f32
      }
      return %value : f32
    }

    // Q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales and mins for
    // eight sub-blocks of 32, then 128 bytes of nibbles (each 32 bytes hold
    // two sub-blocks: low nibbles first). value = (d * scale) * q - dmin * min.
    func.func private @q4_k_element(%bytes: memref<?xi8>, %at: index, %e: index) -> f32 {
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %c4_i32 = arith.constant 4 : i32
      %c6_i32 = arith.constant 6 : i32
      %c15_i32 = arith.constant 15 : i32
      %c63_i32 = arith.constant 63 : i32
      %d_bits = func.call @load_u16(%bytes, %at) : (memref<?xi8>, index) -> i32
      %d = func.call @f16_bits_to_f32(%d_bits) : (i32) -> f32
      %dmin_at = arith.addi %at, %c2 : index
      %dmin_bits = func.call @load_u16(%bytes, %dmin_at) : (memref<?xi8>, index) -> i32
      %dmin = func.call @f16_bits_to_f32(%dmin_bits) : (i32) -> f32
      %group = arith.divui %e, %c64 : index
      %within = arith.remui %e, %c64 : index
      %high = arith.divui %within, %c32 : index
      %l = arith.remui %within, %c32 : index
      %group_bytes = arith.muli %group, %c32 : index
      %quants = arith.addi %at, %c16 : index
      %quant_row = arith.addi %quants, %group_bytes : index
      %quant_at = arith.addi %quant_row, %l : index
      %byte8 = memref.load %bytes[%quant_at] : memref<?xi8>
      %byte = arith.extui %byte8 : i8 to i32
      %high_i32 = arith.index_cast %high : index to i32
      %shift = arith.muli %high_i32, %c4_i32 : i32
      %shifted = arith.shrui %byte, %shift : i32
      %q_i32 = arith.andi %shifted, %c15_i32 : i32
      %q = arith.uitofp %q_i32 : i32 to f32
      // Sub-block j = 2 * group + high; its scale and min (ggml's
      // get_scale_min_k4): j < 4 reads bytes j and j + 4 directly, later
      // sub-blocks combine low nibbles of byte j + 4 with the top bits of
      // bytes j - 4 and j.
      %twice = arith.muli %group, %c2 : index
      %j = arith.addi %twice, %high : index
      %scales = arith.addi %at, %c4 : index
      %early = arith.cmpi ult, %j, %c4 : index
      %j_at = arith.addi %scales, %j : index
      %j4_at = arith.addi %j_at, %c4 : index
      %bj8 = memref.load %bytes[%j_at] : memref<?xi8>
      %bj4_8 = memref.load %bytes[%j4_at] : memref<?xi8>
      %bj = arith.extui %bj8 : i8 to i32
      %bj4 = arith.extui %bj4_8 : i8 to i32
      %pair:2 = scf.if %early -> (i32, i32) {
        %sc = arith.andi %bj, %c63_i32 : i32
        %mn = arith.andi %bj4, %c63_i32 : i32
        scf.yield %sc, %mn : i32, i32
      } else {
        %jm4_at = arith.subi %j_at, %c4 : index
        %bjm4_8 = memref.load %bytes[%jm4_at] : memref<?xi8>
        %bjm4 = arith.extui %bjm4_8 : i8 to i32
        %low_sc = arith.andi %bj4, %c15_i32 : i32
        %top_sc = arith.shrui %bjm4, %c6_i32 : i32
        %top_sc4 = arith.shli %top_sc, %c4_i32 : i32
        %sc = arith.ori %low_sc, %top_sc4 : i32
        %low_mn = arith.shrui %bj4, %c4_i32 : i32
        %top_mn = arith.shrui %bj, %c6_i32 : i32
        %top_mn4 = arith.shli %top_mn, %c4_i32 : i32
        %mn = arith.ori %low_mn, %top_mn4 : i32
        scf.yield %sc, %mn : i32, i32
      }
      %scale_f = arith.uitofp %pair#0 : i32 to f32
      %min_f = arith.uitofp %pair#1 : i32 to f32
      %scaled = arith.mulf %d, %scale_f : f32
      %offset = arith.mulf %dmin, %min_f : f32
      %product = arith.mulf %scaled, %q : f32
      %value = arith.subf %product, %offset : f32
      return %value : f32
    }

    // Q6_K: 128 bytes of low nibbles, 64 of high bit pairs, 16 signed
    // sub-block scales, then the f16 d. Each half of 128 elements takes 64
    // low bytes, 32 high bytes and 8 scales; within it, quarter k of 32
    // elements takes low nibbles (k = 0, 1) or high nibbles (k = 2, 3) of
    // bytes l or l + 32 and bits 2k..2k+1 of high byte l.
    // value = (d * scale) * (q - 32).
    func.func private @q6_k_element(%bytes: memref<?xi8>, %at: index, %e: index) -> f32 {
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %c128 = arith.constant 128 : index
      %c192 = arith.constant 192 : index
      %c208 = arith.constant 208 : index
      %c2_i32 = arith.constant 2 : i32
      %c3_i32 = arith.constant 3 : i32
      %c4_i32 = arith.constant 4 : i32
      %c15_i32 = arith.constant 15 : i32
      %c32_i32 = arith.constant 32 : i32
      %d_at = arith.addi %at, %c208 : index
      %d_bits = func.call @load_u16(%bytes, %d_at) : (memref<?xi8>, index) -> i32
      %d = func.call @f16_bits_to_f32(%d_bits) : (i32) -> f32
      %half = arith.divui %e, %c128 : index
      %r = arith.remui %e, %c128 : index
      %quarter = arith.divui %r, %c32 : index
      %l = arith.remui %r, %c32 : index
      %low_base = arith.muli %half, %c64 : index
      %high_base = arith.muli %half, %c32 : index
      %scale_base = arith.muli %half, %c8 : index
      // Quarters 1 and 3 read low byte l + 32.
      %odd = arith.remui %quarter, %c2 : index
      %odd_offset = arith.muli %odd, %c32 : index
      %low_index = arith.addi %low_base, %l : index
      %low_index2 = arith.addi %low_index, %odd_offset : index
      %low_at = arith.addi %at, %low_index2 : index
      %low8 = memref.load %bytes[%low_at] : memref<?xi8>
      %low = arith.extui %low8 : i8 to i32
      %upper = arith.divui %quarter, %c2 : index
      %upper_i32 = arith.index_cast %upper : index to i32
      %low_shift = arith.muli %upper_i32, %c4_i32 : i32
      %low_shifted = arith.shrui %low, %low_shift : i32
      %low_bits = arith.andi %low_shifted, %c15_i32 : i32
      %high_index = arith.addi %high_base, %l : index
      %high_offset = arith.addi %high_index, %c128 : index
      %high_at = arith.addi %at, %high_offset : index
      %high8 = memref.load %bytes[%high_at] : memref<?xi8>
      %high = arith.extui %high8 : i8 to i32
      %quarter_i32 = arith.index_cast %quarter : index to i32
      %high_shift = arith.muli %quarter_i32, %c2_i32 : i32
      %high_shifted = arith.shrui %high, %high_shift : i32
      %high_bits = arith.andi %high_shifted, %c3_i32 : i32
      %high_top = arith.shli %high_bits, %c4_i32 : i32
      %level = arith.ori %low_bits, %high_top : i32
      %centered = arith.subi %level, %c32_i32 : i32
      %q = arith.sitofp %centered : i32 to f32
      // Scale index: l / 16 + 2 * quarter within the half.
      %sub = arith.divui %l, %c16 : index
      %quarter2 = arith.muli %quarter, %c2 : index
      %scale_index = arith.addi %sub, %quarter2 : index
      %scale_index2 = arith.addi %scale_base, %scale_index : index
      %scale_offset = arith.addi %scale_index2, %c192 : index
      %scale_at = arith.addi %at, %scale_offset : index
      %scale8 = memref.load %bytes[%scale_at] : memref<?xi8>
      %scale = arith.sitofp %scale8 : i8 to f32
      %scaled = arith.mulf %d, %scale : f32
      %value = arith.mulf %scaled, %q : f32
      return %value : f32
    }

    // Element k of row `row` of a weight in a byte format (as
    // @matmul_tiled_bytes numbers them) with rows of `cols` elements.
    func.func private @weight_element(%w: memref<?xi8>, %row: index, %k: index, %cols: index, %format: i32) -> f32 {
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %c18 = arith.constant 18 : index
      %c32 = arith.constant 32 : index
      %c34 = arith.constant 34 : index
      %c144 = arith.constant 144 : index
      %c210 = arith.constant 210 : index
      %c256 = arith.constant 256 : index
      %c16_i32 = arith.constant 16 : i32
      %f16 = arith.constant 1 : i32
      %bf16 = arith.constant 2 : i32
      %q4_0 = arith.constant 3 : i32
      %q4_k = arith.constant 4 : i32
      %q6_k = arith.constant 5 : i32
      %is_f16 = arith.cmpi eq, %format, %f16 : i32
      %is_bf16 = arith.cmpi eq, %format, %bf16 : i32
      %is_q4_0 = arith.cmpi eq, %format, %q4_0 : i32
      %is_q4_k = arith.cmpi eq, %format, %q4_k : i32
      %is_q6_k = arith.cmpi eq, %format, %q6_k : i32
      %is_half = arith.ori %is_f16, %is_bf16 : i1
      %is_k = arith.ori %is_q4_k, %is_q6_k : i1
      %value = scf.if %is_half -> f32 {
        %row_elements = arith.muli %row, %cols : index
        %element = arith.addi %row_elements, %k : index
        %at = arith.muli %element, %c2 : index
        %bits = func.call @load_u16(%w, %at) : (memref<?xi8>, index) -> i32
        %v = scf.if %is_f16 -> f32 {
          %h = func.call @f16_bits_to_f32(%bits) : (i32) -> f32
          scf.yield %h : f32
        } else {
          %wide = arith.shli %bits, %c16_i32 : i32
          %b = arith.bitcast %wide : i32 to f32
          scf.yield %b : f32
        }
        scf.yield %v : f32
      } else {
        %v = scf.if %is_k -> f32 {
          // Super-blocks of 256 elements: 144 bytes (Q4_K) or 210 (Q6_K).
          %block_bytes = arith.select %is_q4_k, %c144, %c210 : index
          %blocks = arith.divui %cols, %c256 : index
          %row_blocks = arith.muli %row, %blocks : index
          %block = arith.divui %k, %c256 : index
          %index = arith.addi %row_blocks, %block : index
          %at = arith.muli %index, %block_bytes : index
          %e = arith.remui %k, %c256 : index
          %q = func.call @k_quant_element(%w, %at, %e, %is_q4_k) : (memref<?xi8>, index, index, i1) -> f32
          scf.yield %q : f32
        } else {
          // Blocks of 32: an f16 scale, then 16 bytes of nibbles (Q4_0; the
          // low nibbles are elements 0-15) or 32 signed bytes (Q8_0).
          %block_bytes = arith.select %is_q4_0, %c18, %c34 : index
          %blocks = arith.divui %cols, %c32 : index
          %row_blocks = arith.muli %row, %blocks : index
          %block = arith.divui %k, %c32 : index
          %index = arith.addi %row_blocks, %block : index
          %at = arith.muli %index, %block_bytes : index
          %half = func.call @load_u16(%w, %at) : (memref<?xi8>, index) -> i32
          %scale = func.call @f16_bits_to_f32(%half) : (i32) -> f32
          %quants = arith.addi %at, %c2 : index
          %e = arith.remui %k, %c32 : index
          %q = scf.if %is_q4_0 -> f32 {
            %j = arith.remui %e, %c16 : index
            %high = arith.divui %e, %c16 : index
            %qi = arith.addi %quants, %j : index
            %n = func.call @nibble(%w, %qi, %high) : (memref<?xi8>, index, index) -> f32
            scf.yield %n : f32
          } else {
            %qi = arith.addi %quants, %e : index
            %byte = memref.load %w[%qi] : memref<?xi8>
            %b = arith.sitofp %byte : i8 to f32
            scf.yield %b : f32
          }
          %scaled = arith.mulf %scale, %q : f32
          scf.yield %scaled : f32
        }
        scf.yield %v : f32
      }
      return %value : f32
    }

    // The sum over the workgroup's 64 threads of each one's `value`, for
    // every thread: a tree through workgroup memory. Called by all 64 threads
    // in uniform control flow; the last barrier lets the caller reduce again.
    func.func private @workgroup_sum(%value: f32, %tid: index) -> f32 {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      memref.store %value, %partial[%tid] : memref<64xf32, 3>
      gpu.barrier
      scf.for %step = %c0 to %c6 step %c1 {
        %stride = arith.shrui %c32, %step : index
        %active = arith.cmpi ult, %tid, %stride : index
        scf.if %active {
          %other = arith.addi %tid, %stride : index
          %a = memref.load %partial[%tid] : memref<64xf32, 3>
          %b = memref.load %partial[%other] : memref<64xf32, 3>
          %ab = arith.addf %a, %b : f32
          memref.store %ab, %partial[%tid] : memref<64xf32, 3>
        }
        gpu.barrier
      }
      %total = memref.load %partial[%c0] : memref<64xf32, 3>
      gpu.barrier
      return %total : f32
    }

    // As @workgroup_sum, the maximum.
    func.func private @workgroup_max(%value: f32, %tid: index) -> f32 {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      memref.store %value, %partial[%tid] : memref<64xf32, 3>
      gpu.barrier
      scf.for %step = %c0 to %c6 step %c1 {
        %stride = arith.shrui %c32, %step : index
        %active = arith.cmpi ult, %tid, %stride : index
        scf.if %active {
          %other = arith.addi %tid, %stride : index
          %a = memref.load %partial[%tid] : memref<64xf32, 3>
          %b = memref.load %partial[%other] : memref<64xf32, 3>
          %ab = arith.maximumf %a, %b : f32
          memref.store %ab, %partial[%tid] : memref<64xf32, 3>
        }
        gpu.barrier
      }
      %total = memref.load %partial[%c0] : memref<64xf32, 3>
      gpu.barrier
      return %total : f32
    }

    // @workgroup_sum for devices with subgroup arithmetic (the "subgroup"
    // variant of the library; hetc-spirv-specialize-kernels swaps it in):
    // each subgroup reduces in registers, its first lane writes the partial,
    // and every thread adds the partials in subgroup order, so all threads
    // agree on the total. Any subgroup size works, and one barrier replaces
    // the tree's seven.
    func.func private @workgroup_sum_subgroup(%value: f32, %tid: index) -> f32 {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %reduced = gpu.subgroup_reduce add %value : (f32) -> f32
      %subgroup = gpu.subgroup_id : index
      %subgroups = gpu.num_subgroups : index
      %lane = gpu.lane_id
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        memref.store %reduced, %partial[%subgroup] : memref<64xf32, 3>
      }
      gpu.barrier
      %total = scf.for %s = %c0 to %subgroups step %c1 iter_args(%acc = %zero) -> f32 {
        %p = memref.load %partial[%s] : memref<64xf32, 3>
        %next = arith.addf %acc, %p : f32
        scf.yield %next : f32
      }
      gpu.barrier
      return %total : f32
    }

    // As @workgroup_sum_subgroup, the maximum.
    func.func private @workgroup_max_subgroup(%value: f32, %tid: index) -> f32 {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %reduced = gpu.subgroup_reduce maximumf %value : (f32) -> f32
      %subgroup = gpu.subgroup_id : index
      %subgroups = gpu.num_subgroups : index
      %lane = gpu.lane_id
      %first = arith.cmpi eq, %lane, %c0 : index
      scf.if %first {
        memref.store %reduced, %partial[%subgroup] : memref<64xf32, 3>
      }
      gpu.barrier
      %start = memref.load %partial[%c0] : memref<64xf32, 3>
      %total = scf.for %s = %c1 to %subgroups step %c1 iter_args(%acc = %start) -> f32 {
        %p = memref.load %partial[%s] : memref<64xf32, 3>
        %next = arith.maximumf %acc, %p : f32
        scf.yield %next : f32
      }
      gpu.barrier
      return %total : f32
    }

    // IEEE half bits (low 16 bits of `half`) → f32, exactly, with integer
    // arithmetic: normal numbers rebias the exponent, subnormals scale the
    // mantissa by 2^-24, infinities and NaNs keep their mantissa.
    func.func private @f16_bits_to_f32(%half: i32) -> f32 {
      %c10 = arith.constant 10 : i32
      %c13 = arith.constant 13 : i32
      %c15 = arith.constant 15 : i32
      %c23 = arith.constant 23 : i32
      %c31 = arith.constant 31 : i32
      %c112 = arith.constant 112 : i32
      %c0 = arith.constant 0 : i32
      %mantissa_mask = arith.constant 1023 : i32
      %exponent_mask = arith.constant 31 : i32
      %infinity = arith.constant 2139095040 : i32
      %two_pow_minus_24 = arith.constant 5.96046448e-08 : f32
      %sign_bit = arith.shrui %half, %c15 : i32
      %sign = arith.shli %sign_bit, %c31 : i32
      %exponent_raw = arith.shrui %half, %c10 : i32
      %exponent = arith.andi %exponent_raw, %exponent_mask : i32
      %mantissa = arith.andi %half, %mantissa_mask : i32
      %mantissa_wide = arith.shli %mantissa, %c13 : i32
      %rebiased = arith.addi %exponent, %c112 : i32
      %exponent_bits = arith.shli %rebiased, %c23 : i32
      %normal_magnitude = arith.ori %exponent_bits, %mantissa_wide : i32
      %special_magnitude = arith.ori %infinity, %mantissa_wide : i32
      %is_special = arith.cmpi eq, %exponent, %c31 : i32
      %magnitude = arith.select %is_special, %special_magnitude, %normal_magnitude : i32
      %bits = arith.ori %sign, %magnitude : i32
      %normal = arith.bitcast %bits : i32 to f32
      %mantissa_f = arith.uitofp %mantissa : i32 to f32
      %subnormal_magnitude = arith.mulf %mantissa_f, %two_pow_minus_24 : f32
      %subnormal_negated = arith.negf %subnormal_magnitude : f32
      %is_negative = arith.cmpi ne, %sign_bit, %c0 : i32
      %subnormal = arith.select %is_negative, %subnormal_negated, %subnormal_magnitude : f32
      %is_subnormal = arith.cmpi eq, %exponent, %c0 : i32
      %value = arith.select %is_subnormal, %subnormal, %normal : f32
      return %value : f32
    }

    // @f16_bits_to_f32 by the hardware's conversion, which is exact too.
    func.func private @f16_bits_to_f32_native(%half: i32) -> f32 {
      %bits = arith.trunci %half : i32 to i16
      %value16 = arith.bitcast %bits : i16 to f16
      %value = arith.extf %value16 : f16 to f32
      return %value : f32
    }
  }
}
