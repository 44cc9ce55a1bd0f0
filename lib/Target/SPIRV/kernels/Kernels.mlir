// The SPIR-V target's kernel library: the llm ops as GPU kernels, written as
// a GPU wants them and lowered by upstream MLIR (gpu → spirv) for Vulkan.
//
// Conventions, shared with the runtime that dispatches them:
// - tensors are flat storage buffers (memref<?xT>), row-major;
// - the last argument is a parameter buffer of i32 values (sizes, and f32
//   constants as their bits), so one pipeline serves every shape;
// - workgroups are 64 threads for row reductions (a tree reduction through
//   workgroup memory, which every Vulkan device has; subgroup operations
//   come with per-device capabilities) and 256 for element-wise kernels;
// - block-quantized weights are read as bytes in their GGUF layout and
//   dequantized in registers; bytes and f16 values are emulated with 32-bit
//   loads where the device lacks 8/16-bit storage, and f16 is widened with
//   integer arithmetic, so no kernel needs a Float16 capability.
//
// Memory space 3 is workgroup memory (Vulkan's Workgroup storage class).
module attributes {gpu.container_module} {
  gpu.module @llm_kernels {

    // y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w
    // params: [cols, eps as f32 bits]; grid: (rows, 1, 1).
    gpu.func @rms_norm_f32(%x: memref<?xf32>, %w: memref<?xf32>,
                           %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
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
      memref.store %sum, %partial[%tid] : memref<64xf32, 3>
      gpu.barrier
      scf.for %k = %c0 to %c6 step %c1 {
        %stride = arith.shrui %c32, %k : index
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
      %one = arith.constant 1.0 : f32
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
        %negated = arith.negf %g : f32
        %e = math.exp %negated : f32
        %denominator = arith.addf %one, %e : f32
        %silu = arith.divf %g, %denominator : f32
        %out = arith.mulf %silu, %u : f32
        memref.store %out, %y[%i] : memref<?xf32>
      }
      gpu.return
    }

    // y[n, m] = sum_k x[n, k] * w[m, k] (x · wᵀ with w as the model stores
    // it, rows of K). One workgroup per output element: its 64 threads read
    // consecutive elements of the weight row (coalesced) and reduce.
    // params: [N, K, M]; grid: (M, N, 1).
    gpu.func @matmul_f32(%x: memref<?xf32>, %w: memref<?xf32>,
                         %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %m = gpu.block_id x
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %x_base = arith.muli %n, %k_size : index
      %w_base = arith.muli %m, %k_size : index
      %sum = scf.for %k = %tid to %k_size step %c64 iter_args(%acc = %zero) -> f32 {
        %xi = arith.addi %x_base, %k : index
        %wi = arith.addi %w_base, %k : index
        %xv = memref.load %x[%xi] : memref<?xf32>
        %wv = memref.load %w[%wi] : memref<?xf32>
        %next = math.fma %xv, %wv, %acc : f32
        scf.yield %next : f32
      }
      memref.store %sum, %partial[%tid] : memref<64xf32, 3>
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
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %total = memref.load %partial[%c0] : memref<64xf32, 3>
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m : index
        memref.store %total, %y[%yi] : memref<?xf32>
      }
      gpu.return
    }

    // As @matmul_f32 with w in Q8_0: blocks of 34 bytes, an f16 scale then
    // 32 signed bytes, value = scale * byte. Each thread takes whole blocks
    // of the row, so the scale is widened once per 32 products.
    // params: [N, K, M] (K a multiple of 32); grid: (M, N, 1).
    gpu.func @matmul_q8_0(%x: memref<?xf32>, %w: memref<?xi8>,
                          %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %partial = memref.alloc() : memref<64xf32, 3>
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c6 = arith.constant 6 : index
      %c32 = arith.constant 32 : index
      %c34 = arith.constant 34 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant 0.0 : f32
      %i8_mask = arith.constant 255 : i32
      %c8_i32 = arith.constant 8 : i32
      %m = gpu.block_id x
      %n = gpu.block_id y
      %tid = gpu.thread_id x
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %blocks = arith.divui %k_size, %c32 : index
      %x_base = arith.muli %n, %k_size : index
      %row_blocks = arith.muli %m, %blocks : index
      %w_base = arith.muli %row_blocks, %c34 : index
      %sum = scf.for %b = %tid to %blocks step %c64 iter_args(%acc = %zero) -> f32 {
        %block_offset = arith.muli %b, %c34 : index
        %at = arith.addi %w_base, %block_offset : index
        // The f16 scale, little-endian.
        %at1 = arith.addi %at, %c1 : index
        %lo8 = memref.load %w[%at] : memref<?xi8>
        %hi8 = memref.load %w[%at1] : memref<?xi8>
        %lo_wide = arith.extui %lo8 : i8 to i32
        %hi_wide = arith.extui %hi8 : i8 to i32
        %lo = arith.andi %lo_wide, %i8_mask : i32
        %hi = arith.andi %hi_wide, %i8_mask : i32
        %hi_shifted = arith.shli %hi, %c8_i32 : i32
        %half = arith.ori %lo, %hi_shifted : i32
        %scale = func.call @f16_bits_to_f32(%half) : (i32) -> f32
        %quants = arith.addi %at, %c2 : index
        %x_block = arith.muli %b, %c32 : index
        %x_at = arith.addi %x_base, %x_block : index
        %dot = scf.for %j = %c0 to %c32 step %c1 iter_args(%inner = %zero) -> f32 {
          %qi = arith.addi %quants, %j : index
          %q = memref.load %w[%qi] : memref<?xi8>
          %qf = arith.sitofp %q : i8 to f32
          %xi = arith.addi %x_at, %j : index
          %xv = memref.load %x[%xi] : memref<?xf32>
          %next = math.fma %qf, %xv, %inner : f32
          scf.yield %next : f32
        }
        %next = math.fma %scale, %dot, %acc : f32
        scf.yield %next : f32
      }
      memref.store %sum, %partial[%tid] : memref<64xf32, 3>
      gpu.barrier
      scf.for %step = %c0 to %c6 step %c1 {
        %stride = arith.shrui %c32, %step : index
        %active = arith.cmpi ult, %tid, %stride : index
        scf.if %active {
          %other = arith.addi %tid, %stride : index
          %a = memref.load %partial[%tid] : memref<64xf32, 3>
          %b2 = memref.load %partial[%other] : memref<64xf32, 3>
          %ab = arith.addf %a, %b2 : f32
          memref.store %ab, %partial[%tid] : memref<64xf32, 3>
        }
        gpu.barrier
      }
      %first = arith.cmpi eq, %tid, %c0 : index
      scf.if %first {
        %total = memref.load %partial[%c0] : memref<64xf32, 3>
        %row = arith.muli %n, %m_size : index
        %yi = arith.addi %row, %m : index
        memref.store %total, %y[%yi] : memref<?xf32>
      }
      gpu.return
    }

    // IEEE half bits (low 16 bits of `half`) → f32, exactly, with integer
    // arithmetic: normal numbers rebias the exponent, subnormals scale the
    // mantissa by 2^-24, infinities and NaNs keep their mantissa.
    func.func @f16_bits_to_f32(%half: i32) -> f32 {
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
  }
}
