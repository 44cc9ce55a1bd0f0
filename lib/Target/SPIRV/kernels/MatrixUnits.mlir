// The kernel library's products on matrix units: NVIDIA's tensor cores
// (mma.sync) and AMD's matrix cores (MFMA), for prefill products of 16-bit
// and block-quantized weights. The library's build merges this gpu.module
// into Kernels.mlir's, whose helpers (@weight_element, @f16_bits_to_f32,
// @load_u16) it calls, so it is checked as part of the library, not alone.
//
// The products' helpers have portable forms that define each fragment
// layout through workgroup memory (the SPIR-V tests run the kernels with
// them on any Vulkan device) and _nvptx / _amdgpu forms that are the units'
// instructions; each kernel says which units it was written for
// (hetc.matrix_units) and the other LLVM GPU target leaves it out.
module attributes {gpu.container_module} {
  gpu.module @llm_kernels {

    // As @matmul_tiled_bytes on matrix units (NVIDIA's mma.sync through
    // @mma_16x8x16): each workgroup of 128 threads, four warps of 32,
    // computes a 64x64 tile of y. Each 32-wide slice of k is staged in
    // workgroup memory as f16 pairs, one 32-bit word per two k: x rounded to
    // f16, w widened or dequantized to f16 (as llama.cpp's CUDA back end
    // feeds its tensor cores); products and sums stay f32. Warp (wn, wm)
    // owns tokens 32wn.. and outputs 32wm.. of the tile: eight 16x8
    // products per 16 k, whose fragments it reads from the staged words.
    // The tiles are double-buffered: each slice is staged while the one
    // before it is multiplied, with one barrier a slice.
    // params: [N, K, M, x_row, format as @matmul_tiled_bytes] (K a multiple
    // of 32); grid: (ceil(M / 64), ceil(N / 64), 1).
    gpu.func @matmul_mma_bytes(%x: memref<?xf32>, %w: memref<?xi8>,
                               %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {hetc.matrix_units = "nvptx",
                    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [128, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c20 = arith.constant 20 : index
      %c24 = arith.constant 24 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      // Tile rows of 16 words padded to 20, so a fragment's 32 lanes read
      // 32 different banks; rows 64-127 are the second buffer.
      %xs = memref.alloc() : memref<2560xi32, 3>
      %ws = memref.alloc() : memref<2560xi32, 3>
      %scratch = memref.alloc() : memref<768xi32, 3>
      %t = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %n_i32 = memref.load %params[%c0] : memref<?xi32>
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %format = memref.load %params[%c4] : memref<?xi32>
      %n_size = arith.index_cast %n_i32 : i32 to index
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %m0 = arith.muli %bx, %c64 : index
      %n0 = arith.muli %by, %c64 : index
      // Staging: thread t fills words 8h..8h+7 (k 16h..16h+15 of the slice)
      // of row t/2 of both tiles.
      %stage_row = arith.divui %t, %c2 : index
      %half = arith.remui %t, %c2 : index
      %stage_row_at = arith.muli %stage_row, %c20 : index
      %half_words = arith.muli %half, %c8 : index
      %stage_at = arith.addi %stage_row_at, %half_words : index
      %half_k = arith.muli %half, %c16 : index
      %x_n = arith.addi %n0, %stage_row : index
      %x_ok = arith.cmpi ult, %x_n, %n_size : index
      %x_source_row = arith.addi %x_n, %x_row : index
      %x_row_start = arith.muli %x_source_row, %k_size : index
      %x_base = arith.addi %x_row_start, %half_k : index
      %w_m = arith.addi %m0, %stage_row : index
      %w_ok = arith.cmpi ult, %w_m, %m_size : index
      // Fragments: warp (wn, wm), lane (g, q) = (lane / 4, lane % 4).
      %warp = arith.divui %t, %c32 : index
      %lane = arith.remui %t, %c32 : index
      %g = arith.divui %lane, %c4 : index
      %q = arith.remui %lane, %c4 : index
      %wn = arith.divui %warp, %c2 : index
      %wm = arith.remui %warp, %c2 : index
      %a_row0 = arith.muli %wn, %c32 : index
      %a_row1 = arith.addi %a_row0, %c16 : index
      %b_row0 = arith.muli %wm, %c32 : index
      %b_row1 = arith.addi %b_row0, %c8 : index
      %b_row2 = arith.addi %b_row0, %c16 : index
      %b_row3 = arith.addi %b_row0, %c24 : index
      %has_first = arith.cmpi ult, %c0, %k_size : index
      scf.if %has_first {
        func.call @stage_slice(%x, %w, %xs, %ws, %x_ok, %w_ok, %x_base, %w_m, %c0, %half_k, %k_size, %format, %stage_at, %c0, %c8) : (memref<?xf32>, memref<?xi8>, memref<2560xi32, 3>, memref<2560xi32, 3>, i1, i1, index, index, index, index, index, i32, index, index, index) -> ()
      }
      gpu.barrier
      %acc:8 = scf.for %k0 = %c0 to %k_size step %c32
          iter_args(%d00 = %zero, %d01 = %zero, %d02 = %zero, %d03 = %zero,
                    %d10 = %zero, %d11 = %zero, %d12 = %zero, %d13 = %zero)
          -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
              vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
        // The next slice goes into the other buffer while this one is read;
        // the barrier below ends both.
        %slice = arith.divui %k0, %c32 : index
        %buffer = arith.remui %slice, %c2 : index
        %k_next = arith.addi %k0, %c32 : index
        %has_next = arith.cmpi ult, %k_next, %k_size : index
        scf.if %has_next {
          %next_buffer = arith.subi %c1, %buffer : index
          func.call @stage_slice(%x, %w, %xs, %ws, %x_ok, %w_ok, %x_base, %w_m, %k_next, %half_k, %k_size, %format, %stage_at, %next_buffer, %c8) : (memref<?xf32>, memref<?xi8>, memref<2560xi32, 3>, memref<2560xi32, 3>, i1, i1, index, index, index, index, index, i32, index, index, index) -> ()
        }
        %buffer_rows = arith.muli %buffer, %c64 : index
        %a_row0_in = arith.addi %a_row0, %buffer_rows : index
        %a_row1_in = arith.addi %a_row1, %buffer_rows : index
        %b_row0_in = arith.addi %b_row0, %buffer_rows : index
        %b_row1_in = arith.addi %b_row1, %buffer_rows : index
        %b_row2_in = arith.addi %b_row2, %buffer_rows : index
        %b_row3_in = arith.addi %b_row3, %buffer_rows : index
        %step:8 = scf.for %kw = %c0 to %c16 step %c8
            iter_args(%e00 = %d00, %e01 = %d01, %e02 = %d02, %e03 = %d03,
                      %e10 = %d10, %e11 = %d11, %e12 = %d12, %e13 = %d13)
            -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
                vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
          %a0 = func.call @mma_a_fragment(%xs, %a_row0_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<4xi32>
          %a1 = func.call @mma_a_fragment(%xs, %a_row1_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<4xi32>
          %b0 = func.call @mma_b_fragment(%ws, %b_row0_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<2xi32>
          %b1 = func.call @mma_b_fragment(%ws, %b_row1_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<2xi32>
          %b2 = func.call @mma_b_fragment(%ws, %b_row2_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<2xi32>
          %b3 = func.call @mma_b_fragment(%ws, %b_row3_in, %kw, %g, %q) : (memref<2560xi32, 3>, index, index, index, index) -> vector<2xi32>
          %f00 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a0, %b0, %e00) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f01 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a0, %b1, %e01) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f02 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a0, %b2, %e02) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f03 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a0, %b3, %e03) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f10 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a1, %b0, %e10) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f11 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a1, %b1, %e11) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f12 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a1, %b2, %e12) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f13 = func.call @mma_16x8x16(%scratch, %warp, %lane, %a1, %b3, %e13) : (memref<768xi32, 3>, index, index, vector<4xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          scf.yield %f00, %f01, %f02, %f03, %f10, %f11, %f12, %f13
              : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
                vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
        }
        gpu.barrier
        scf.yield %step#0, %step#1, %step#2, %step#3, %step#4, %step#5, %step#6, %step#7
            : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>,
              vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
      }
      %y_n0 = arith.addi %n0, %a_row0 : index
      %y_n1 = arith.addi %n0, %a_row1 : index
      %y_m0 = arith.addi %m0, %b_row0 : index
      %y_m1 = arith.addi %m0, %b_row1 : index
      %y_m2 = arith.addi %m0, %b_row2 : index
      %y_m3 = arith.addi %m0, %b_row3 : index
      func.call @store_mma_tile(%y, %acc#0, %y_n0, %y_m0, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#1, %y_n0, %y_m1, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#2, %y_n0, %y_m2, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#3, %y_n0, %y_m3, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#4, %y_n1, %y_m0, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#5, %y_n1, %y_m1, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#6, %y_n1, %y_m2, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      func.call @store_mma_tile(%y, %acc#7, %y_n1, %y_m3, %g, %q, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index, index) -> ()
      gpu.return
    }

    // @matmul_mma_bytes on AMD's matrix cores (CDNA's MFMA through
    // @mfma_16x16x16): each workgroup of 256 threads, four wavefronts of
    // 64, computes a 64x64 tile of y from the same f16 staging; wavefront
    // (wn, wm) owns tokens 32wn.. and outputs 32wm.., four 16x16 products
    // per 16 k.
    // params: [N, K, M, x_row, format as @matmul_tiled_bytes] (K a multiple
    // of 32); grid: (ceil(M / 64), ceil(N / 64), 1).
    gpu.func @matmul_mfma_bytes(%x: memref<?xf32>, %w: memref<?xi8>,
                                %y: memref<?xf32>, %params: memref<?xi32>) kernel
        attributes {hetc.matrix_units = "amdgpu",
                    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c20 = arith.constant 20 : index
      %c32 = arith.constant 32 : index
      %c64 = arith.constant 64 : index
      %zero = arith.constant dense<0.0> : vector<4xf32>
      %xs = memref.alloc() : memref<2560xi32, 3>
      %ws = memref.alloc() : memref<2560xi32, 3>
      %scratch = memref.alloc() : memref<1024xi32, 3>
      %t = gpu.thread_id x
      %bx = gpu.block_id x
      %by = gpu.block_id y
      %n_i32 = memref.load %params[%c0] : memref<?xi32>
      %k_i32 = memref.load %params[%c1] : memref<?xi32>
      %m_i32 = memref.load %params[%c2] : memref<?xi32>
      %x_row_i32 = memref.load %params[%c3] : memref<?xi32>
      %format = memref.load %params[%c4] : memref<?xi32>
      %n_size = arith.index_cast %n_i32 : i32 to index
      %k_size = arith.index_cast %k_i32 : i32 to index
      %m_size = arith.index_cast %m_i32 : i32 to index
      %x_row = arith.index_cast %x_row_i32 : i32 to index
      %m0 = arith.muli %bx, %c64 : index
      %n0 = arith.muli %by, %c64 : index
      // Staging: thread t fills words 4p..4p+3 (k 8p..8p+7 of the slice) of
      // row t/4 of both tiles, p = t % 4.
      %stage_row = arith.divui %t, %c4 : index
      %part = arith.remui %t, %c4 : index
      %stage_row_at = arith.muli %stage_row, %c20 : index
      %part_words = arith.muli %part, %c4 : index
      %stage_at = arith.addi %stage_row_at, %part_words : index
      %part_k = arith.muli %part, %c8 : index
      %x_n = arith.addi %n0, %stage_row : index
      %x_ok = arith.cmpi ult, %x_n, %n_size : index
      %x_source_row = arith.addi %x_n, %x_row : index
      %x_row_start = arith.muli %x_source_row, %k_size : index
      %x_base = arith.addi %x_row_start, %part_k : index
      %w_m = arith.addi %m0, %stage_row : index
      %w_ok = arith.cmpi ult, %w_m, %m_size : index
      %wave = arith.divui %t, %c64 : index
      %lane = arith.remui %t, %c64 : index
      %wn = arith.divui %wave, %c2 : index
      %wm = arith.remui %wave, %c2 : index
      %a_row0 = arith.muli %wn, %c32 : index
      %a_row1 = arith.addi %a_row0, %c16 : index
      %b_row0 = arith.muli %wm, %c32 : index
      %b_row1 = arith.addi %b_row0, %c16 : index
      %has_first = arith.cmpi ult, %c0, %k_size : index
      scf.if %has_first {
        func.call @stage_slice(%x, %w, %xs, %ws, %x_ok, %w_ok, %x_base, %w_m, %c0, %part_k, %k_size, %format, %stage_at, %c0, %c4) : (memref<?xf32>, memref<?xi8>, memref<2560xi32, 3>, memref<2560xi32, 3>, i1, i1, index, index, index, index, index, i32, index, index, index) -> ()
      }
      gpu.barrier
      %acc:4 = scf.for %k0 = %c0 to %k_size step %c32
          iter_args(%d00 = %zero, %d01 = %zero, %d10 = %zero, %d11 = %zero)
          -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
        // The next slice goes into the other buffer while this one is read;
        // the barrier below ends both.
        %slice = arith.divui %k0, %c32 : index
        %buffer = arith.remui %slice, %c2 : index
        %k_next = arith.addi %k0, %c32 : index
        %has_next = arith.cmpi ult, %k_next, %k_size : index
        scf.if %has_next {
          %next_buffer = arith.subi %c1, %buffer : index
          func.call @stage_slice(%x, %w, %xs, %ws, %x_ok, %w_ok, %x_base, %w_m, %k_next, %part_k, %k_size, %format, %stage_at, %next_buffer, %c4) : (memref<?xf32>, memref<?xi8>, memref<2560xi32, 3>, memref<2560xi32, 3>, i1, i1, index, index, index, index, index, i32, index, index, index) -> ()
        }
        %buffer_rows = arith.muli %buffer, %c64 : index
        %a_row0_in = arith.addi %a_row0, %buffer_rows : index
        %a_row1_in = arith.addi %a_row1, %buffer_rows : index
        %b_row0_in = arith.addi %b_row0, %buffer_rows : index
        %b_row1_in = arith.addi %b_row1, %buffer_rows : index
        %step:4 = scf.for %kw = %c0 to %c16 step %c8
            iter_args(%e00 = %d00, %e01 = %d01, %e10 = %d10, %e11 = %d11)
            -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>) {
          %a0 = func.call @mfma_fragment(%xs, %a_row0_in, %kw, %lane) : (memref<2560xi32, 3>, index, index, index) -> vector<2xi32>
          %a1 = func.call @mfma_fragment(%xs, %a_row1_in, %kw, %lane) : (memref<2560xi32, 3>, index, index, index) -> vector<2xi32>
          %b0 = func.call @mfma_fragment(%ws, %b_row0_in, %kw, %lane) : (memref<2560xi32, 3>, index, index, index) -> vector<2xi32>
          %b1 = func.call @mfma_fragment(%ws, %b_row1_in, %kw, %lane) : (memref<2560xi32, 3>, index, index, index) -> vector<2xi32>
          %f00 = func.call @mfma_16x16x16(%scratch, %wave, %lane, %a0, %b0, %e00) : (memref<1024xi32, 3>, index, index, vector<2xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f01 = func.call @mfma_16x16x16(%scratch, %wave, %lane, %a0, %b1, %e01) : (memref<1024xi32, 3>, index, index, vector<2xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f10 = func.call @mfma_16x16x16(%scratch, %wave, %lane, %a1, %b0, %e10) : (memref<1024xi32, 3>, index, index, vector<2xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          %f11 = func.call @mfma_16x16x16(%scratch, %wave, %lane, %a1, %b1, %e11) : (memref<1024xi32, 3>, index, index, vector<2xi32>, vector<2xi32>, vector<4xf32>) -> vector<4xf32>
          scf.yield %f00, %f01, %f10, %f11 : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
        }
        gpu.barrier
        scf.yield %step#0, %step#1, %step#2, %step#3 : vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>
      }
      %y_n0 = arith.addi %n0, %a_row0 : index
      %y_n1 = arith.addi %n0, %a_row1 : index
      %y_m0 = arith.addi %m0, %b_row0 : index
      %y_m1 = arith.addi %m0, %b_row1 : index
      func.call @store_mfma_tile(%y, %acc#0, %y_n0, %y_m0, %lane, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index) -> ()
      func.call @store_mfma_tile(%y, %acc#1, %y_n0, %y_m1, %lane, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index) -> ()
      func.call @store_mfma_tile(%y, %acc#2, %y_n1, %y_m0, %lane, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index) -> ()
      func.call @store_mfma_tile(%y, %acc#3, %y_n1, %y_m1, %lane, %n_size, %m_size) : (memref<?xf32>, vector<4xf32>, index, index, index, index, index) -> ()
      gpu.return
    }

    // Slice k0..k0+31 of this thread's staging rows of x and w into buffer
    // `buffer` (0 or 1: rows 0-63 or 64-127) of the double-buffered tiles.
    func.func private @stage_slice(%x: memref<?xf32>, %w: memref<?xi8>, %xs: memref<2560xi32, 3>, %ws: memref<2560xi32, 3>, %x_ok: i1, %w_ok: i1, %x_base: index, %w_m: index, %k0: index, %part_k: index, %k_size: index, %format: i32, %stage_at: index, %buffer: index, %words: index) {
      %c1280 = arith.constant 1280 : index
      %buffer_at = arith.muli %buffer, %c1280 : index
      %to = arith.addi %stage_at, %buffer_at : index
      %x_at = arith.addi %x_base, %k0 : index
      func.call @stage_x_words(%x, %xs, %x_ok, %x_at, %to, %words) : (memref<?xf32>, memref<2560xi32, 3>, i1, index, index, index) -> ()
      %k_at = arith.addi %k0, %part_k : index
      func.call @stage_w_words(%w, %ws, %w_ok, %w_m, %k_at, %k_size, %format, %to, %words) : (memref<?xi8>, memref<2560xi32, 3>, i1, index, index, index, i32, index, index) -> ()
      return
    }

    // Words to..to+words-1 of a staged tile: x[from..from+2*words-1] (a row
    // of x, `from` a multiple of 4, `words` even) as f16 pairs, or zeros
    // where the row is past N (!ok).
    func.func private @stage_x_words(%x: memref<?xf32>, %tile: memref<2560xi32, 3>, %ok: i1, %from: index, %to: index, %words: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      scf.if %ok {
        %quads = arith.divui %words, %c2 : index
        scf.for %i = %c0 to %quads step %c1 {
          %i4 = arith.muli %i, %c4 : index
          %at = arith.addi %from, %i4 : index
          %v = func.call @load_f32x4(%x, %at) : (memref<?xf32>, index) -> vector<4xf32>
          %v0 = vector.extract %v[0] : f32 from vector<4xf32>
          %v1 = vector.extract %v[1] : f32 from vector<4xf32>
          %v2 = vector.extract %v[2] : f32 from vector<4xf32>
          %v3 = vector.extract %v[3] : f32 from vector<4xf32>
          %lo = func.call @pack_f16x2(%v0, %v1) : (f32, f32) -> i32
          %hi = func.call @pack_f16x2(%v2, %v3) : (f32, f32) -> i32
          %i2 = arith.muli %i, %c2 : index
          %slot = arith.addi %to, %i2 : index
          %slot1 = arith.addi %slot, %c1 : index
          memref.store %lo, %tile[%slot] : memref<2560xi32, 3>
          memref.store %hi, %tile[%slot1] : memref<2560xi32, 3>
        }
      } else {
        func.call @fill_words(%tile, %to, %words) : (memref<2560xi32, 3>, index, index) -> ()
      }
      return
    }

    // Words to..to+words-1 of a staged tile: w[row, k_first..k_first +
    // 2*words-1] as f16 pairs, or zeros where the row is past M (!ok). f16
    // rows are copied 128 bits at a time (`words` a multiple of 4, k_first
    // of 8); other formats dequantized (@weight_element) and rounded.
    func.func private @stage_w_words(%w: memref<?xi8>, %tile: memref<2560xi32, 3>, %ok: i1, %row: index, %k_first: index, %k_size: index, %format: i32, %to: index, %words: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %f16 = arith.constant 1 : i32
      %is_f16 = arith.cmpi eq, %format, %f16 : i32
      %copy = arith.andi %ok, %is_f16 : i1
      scf.if %copy {
        %row_start = arith.muli %row, %k_size : index
        %first = arith.addi %row_start, %k_first : index
        %from = arith.muli %first, %c2 : index
        %quads = arith.divui %words, %c4 : index
        scf.for %i = %c0 to %quads step %c1 {
          %i16 = arith.muli %i, %c16 : index
          %at = arith.addi %from, %i16 : index
          %quad = func.call @load_u32x4(%w, %at) : (memref<?xi8>, index) -> vector<4xi32>
          %i4 = arith.muli %i, %c4 : index
          %slot = arith.addi %to, %i4 : index
          func.call @store_u32x4(%tile, %slot, %quad) : (memref<2560xi32, 3>, index, vector<4xi32>) -> ()
        }
      } else {
        scf.if %ok {
          scf.for %i = %c0 to %words step %c1 {
            %i2 = arith.muli %i, %c2 : index
            %k = arith.addi %k_first, %i2 : index
            %k1 = arith.addi %k, %c1 : index
            %e0 = func.call @weight_element(%w, %row, %k, %k_size, %format) : (memref<?xi8>, index, index, index, i32) -> f32
            %e1 = func.call @weight_element(%w, %row, %k1, %k_size, %format) : (memref<?xi8>, index, index, index, i32) -> f32
            %pair = func.call @pack_f16x2(%e0, %e1) : (f32, f32) -> i32
            %slot = arith.addi %to, %i : index
            memref.store %pair, %tile[%slot] : memref<2560xi32, 3>
          }
        } else {
          func.call @fill_words(%tile, %to, %words) : (memref<2560xi32, 3>, index, index) -> ()
        }
      }
      return
    }

    // Zeros in words at..at+count-1 of a staged tile.
    func.func private @fill_words(%tile: memref<2560xi32, 3>, %at: index, %count: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0 : i32
      scf.for %i = %c0 to %count step %c1 {
        %to = arith.addi %at, %i : index
        memref.store %zero, %tile[%to] : memref<2560xi32, 3>
      }
      return
    }

    // words into a staged tile at at..at+3.
    func.func private @store_u32x4(%tile: memref<2560xi32, 3>, %at: index, %words: vector<4xi32>) {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %at1 = arith.addi %at, %c1 : index
      %at2 = arith.addi %at, %c2 : index
      %at3 = arith.addi %at, %c3 : index
      %w0 = vector.extract %words[0] : i32 from vector<4xi32>
      %w1 = vector.extract %words[1] : i32 from vector<4xi32>
      %w2 = vector.extract %words[2] : i32 from vector<4xi32>
      %w3 = vector.extract %words[3] : i32 from vector<4xi32>
      memref.store %w0, %tile[%at] : memref<2560xi32, 3>
      memref.store %w1, %tile[%at1] : memref<2560xi32, 3>
      memref.store %w2, %tile[%at2] : memref<2560xi32, 3>
      memref.store %w3, %tile[%at3] : memref<2560xi32, 3>
      return
    }

    // x[at..at+3].
    func.func private @load_f32x4(%x: memref<?xf32>, %at: index) -> vector<4xf32> {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %at1 = arith.addi %at, %c1 : index
      %at2 = arith.addi %at, %c2 : index
      %at3 = arith.addi %at, %c3 : index
      %v0 = memref.load %x[%at] : memref<?xf32>
      %v1 = memref.load %x[%at1] : memref<?xf32>
      %v2 = memref.load %x[%at2] : memref<?xf32>
      %v3 = memref.load %x[%at3] : memref<?xf32>
      %v = vector.from_elements %v0, %v1, %v2, %v3 : vector<4xf32>
      return %v : vector<4xf32>
    }

    // @load_f32x4 as one 128-bit load (`at` is a multiple of 4).
    func.func private @load_f32x4_native(%x: memref<?xf32>, %at: index) -> vector<4xf32> {
      %v = vector.load %x[%at] {alignment = 16} : memref<?xf32>, vector<4xf32>
      return %v : vector<4xf32>
    }

    // The 16 bytes at `at` of `bytes` as four little-endian words.
    func.func private @load_u32x4(%bytes: memref<?xi8>, %at: index) -> vector<4xi32> {
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c6 = arith.constant 6 : index
      %c8 = arith.constant 8 : index
      %c10 = arith.constant 10 : index
      %c12 = arith.constant 12 : index
      %c14 = arith.constant 14 : index
      %at2 = arith.addi %at, %c2 : index
      %at4 = arith.addi %at, %c4 : index
      %at6 = arith.addi %at, %c6 : index
      %at8 = arith.addi %at, %c8 : index
      %at10 = arith.addi %at, %c10 : index
      %at12 = arith.addi %at, %c12 : index
      %at14 = arith.addi %at, %c14 : index
      %w0 = func.call @load_u32_halves(%bytes, %at, %at2) : (memref<?xi8>, index, index) -> i32
      %w1 = func.call @load_u32_halves(%bytes, %at4, %at6) : (memref<?xi8>, index, index) -> i32
      %w2 = func.call @load_u32_halves(%bytes, %at8, %at10) : (memref<?xi8>, index, index) -> i32
      %w3 = func.call @load_u32_halves(%bytes, %at12, %at14) : (memref<?xi8>, index, index) -> i32
      %words = vector.from_elements %w0, %w1, %w2, %w3 : vector<4xi32>
      return %words : vector<4xi32>
    }

    // @load_u32x4 as one 128-bit load (`at` is 16-byte aligned).
    func.func private @load_u32x4_native(%bytes: memref<?xi8>, %at: index) -> vector<4xi32> {
      %v = vector.load %bytes[%at] {alignment = 16} : memref<?xi8>, vector<16xi8>
      %words = vector.bitcast %v : vector<16xi8> to vector<4xi32>
      return %words : vector<4xi32>
    }

    // The word whose low half is at byte `low` and high half at `high`.
    func.func private @load_u32_halves(%bytes: memref<?xi8>, %low: index, %high: index) -> i32 {
      %sixteen = arith.constant 16 : i32
      %lo = func.call @load_u16(%bytes, %low) : (memref<?xi8>, index) -> i32
      %hi = func.call @load_u16(%bytes, %high) : (memref<?xi8>, index) -> i32
      %hi_shifted = arith.shli %hi, %sixteen : i32
      %word = arith.ori %lo, %hi_shifted : i32
      return %word : i32
    }


    // NVIDIA's 16x8x16 products (@matmul_mma_bytes): a product's
    // fragments are NVIDIA's mma.sync m16n8k16 layout, lane (g, q) =
    // (lane / 4, lane % 4) of a warp holding, in 32-bit words of two f16
    // (the lower k in the low half):
    // - A (16 rows by 16 k): a[0] row g, word q; a[1] row g + 8, word q;
    //   a[2] row g, word q + 4; a[3] row g + 8, word q + 4;
    // - B (16 k by 8 columns): b[0] column g, word q; b[1] column g, word
    //   q + 4;
    // - C and D (16 rows by 8 columns, f32): c[0], c[1] row g, columns 2q
    //   and 2q + 1; c[2], c[3] the same in row g + 8.

    // A's fragment from a staged tile (rows of 20 words) at rows row0..+15
    // and words kw..kw+7.
    func.func private @mma_a_fragment(%tile: memref<2560xi32, 3>, %row0: index, %kw: index, %g: index, %q: index) -> vector<4xi32> {
      %c4 = arith.constant 4 : index
      %c160 = arith.constant 160 : index
      %c20 = arith.constant 20 : index
      %row = arith.addi %row0, %g : index
      %row_at = arith.muli %row, %c20 : index
      %word = arith.addi %kw, %q : index
      %at0 = arith.addi %row_at, %word : index
      %at1 = arith.addi %at0, %c160 : index
      %at2 = arith.addi %at0, %c4 : index
      %at3 = arith.addi %at1, %c4 : index
      %a0 = memref.load %tile[%at0] : memref<2560xi32, 3>
      %a1 = memref.load %tile[%at1] : memref<2560xi32, 3>
      %a2 = memref.load %tile[%at2] : memref<2560xi32, 3>
      %a3 = memref.load %tile[%at3] : memref<2560xi32, 3>
      %a = vector.from_elements %a0, %a1, %a2, %a3 : vector<4xi32>
      return %a : vector<4xi32>
    }

    // @mma_a_fragment in one ldmatrix.x4: lane l gives the address of row
    // l % 16 at word kw + 4 (l / 16), and matrix i lands in register i as
    // the layout above wants (rows 16 bytes apart and 16-byte aligned: 80
    // bytes a row, kw a multiple of 4 words).
    func.func private @mma_a_fragment_nvptx(%tile: memref<2560xi32, 3>, %row0: index, %kw: index, %g: index, %q: index) -> vector<4xi32> {
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c20 = arith.constant 20 : index
      %g4 = arith.muli %g, %c4 : index
      %lane = arith.addi %g4, %q : index
      %lane_row = arith.remui %lane, %c16 : index
      %half = arith.divui %lane, %c16 : index
      %row = arith.addi %row0, %lane_row : index
      %row_at = arith.muli %row, %c20 : index
      %half4 = arith.muli %half, %c4 : index
      %word = arith.addi %kw, %half4 : index
      %at = arith.addi %row_at, %word : index
      %m = nvgpu.ldmatrix %tile[%at] {numTiles = 4 : i32, transpose = false} : memref<2560xi32, 3> -> vector<4x1xi32>
      %m0 = vector.extract %m[0, 0] : i32 from vector<4x1xi32>
      %m1 = vector.extract %m[1, 0] : i32 from vector<4x1xi32>
      %m2 = vector.extract %m[2, 0] : i32 from vector<4x1xi32>
      %m3 = vector.extract %m[3, 0] : i32 from vector<4x1xi32>
      %a = vector.from_elements %m0, %m1, %m2, %m3 : vector<4xi32>
      return %a : vector<4xi32>
    }

    // B's fragment from a staged tile of w's rows (each row one column of
    // B) at rows row0..+7 and words kw..kw+7.
    func.func private @mma_b_fragment(%tile: memref<2560xi32, 3>, %row0: index, %kw: index, %g: index, %q: index) -> vector<2xi32> {
      %c4 = arith.constant 4 : index
      %c20 = arith.constant 20 : index
      %row = arith.addi %row0, %g : index
      %row_at = arith.muli %row, %c20 : index
      %word = arith.addi %kw, %q : index
      %at0 = arith.addi %row_at, %word : index
      %at1 = arith.addi %at0, %c4 : index
      %b0 = memref.load %tile[%at0] : memref<2560xi32, 3>
      %b1 = memref.load %tile[%at1] : memref<2560xi32, 3>
      %b = vector.from_elements %b0, %b1 : vector<2xi32>
      return %b : vector<2xi32>
    }

    // @mma_b_fragment in one ldmatrix.x2: lanes 0-15 give the addresses of
    // rows l % 8 at word kw + 4 ((l / 8) % 2) (the other lanes' are not
    // read, but stay inside the tile).
    func.func private @mma_b_fragment_nvptx(%tile: memref<2560xi32, 3>, %row0: index, %kw: index, %g: index, %q: index) -> vector<2xi32> {
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c20 = arith.constant 20 : index
      %g4 = arith.muli %g, %c4 : index
      %lane = arith.addi %g4, %q : index
      %lane_row = arith.remui %lane, %c8 : index
      %eighth = arith.divui %lane, %c8 : index
      %half = arith.remui %eighth, %c2 : index
      %row = arith.addi %row0, %lane_row : index
      %row_at = arith.muli %row, %c20 : index
      %half4 = arith.muli %half, %c4 : index
      %word = arith.addi %kw, %half4 : index
      %at = arith.addi %row_at, %word : index
      %m = nvgpu.ldmatrix %tile[%at] {numTiles = 2 : i32, transpose = false} : memref<2560xi32, 3> -> vector<2x1xi32>
      %m0 = vector.extract %m[0, 0] : i32 from vector<2x1xi32>
      %m1 = vector.extract %m[1, 0] : i32 from vector<2x1xi32>
      %b = vector.from_elements %m0, %m1 : vector<2xi32>
      return %b : vector<2xi32>
    }

    // D = A * B + C over one warp's fragments. This portable form is the
    // layout's definition: the warp's lanes put their fragments in its
    // 192 words of `scratch`, and each lane sums its four elements of D from
    // there (the barriers assume every thread of the workgroup calls it
    // alike, as @matmul_mma_bytes does). Only tests run it; NVIDIA GPUs run
    // @mma_16x8x16_nvptx.
    func.func private @mma_16x8x16(%scratch: memref<768xi32, 3>, %warp: index, %lane: index, %a: vector<4xi32>, %b: vector<2xi32>, %c: vector<4xf32>) -> vector<4xf32> {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c128 = arith.constant 128 : index
      %c192 = arith.constant 192 : index
      %base = arith.muli %warp, %c192 : index
      %lane4 = arith.muli %lane, %c4 : index
      %a_at = arith.addi %base, %lane4 : index
      %a1_at = arith.addi %a_at, %c1 : index
      %a2_at = arith.addi %a_at, %c2 : index
      %a3_at = arith.addi %a_at, %c3 : index
      %a0 = vector.extract %a[0] : i32 from vector<4xi32>
      %a1 = vector.extract %a[1] : i32 from vector<4xi32>
      %a2 = vector.extract %a[2] : i32 from vector<4xi32>
      %a3 = vector.extract %a[3] : i32 from vector<4xi32>
      memref.store %a0, %scratch[%a_at] : memref<768xi32, 3>
      memref.store %a1, %scratch[%a1_at] : memref<768xi32, 3>
      memref.store %a2, %scratch[%a2_at] : memref<768xi32, 3>
      memref.store %a3, %scratch[%a3_at] : memref<768xi32, 3>
      %b_base = arith.addi %base, %c128 : index
      %lane2 = arith.muli %lane, %c2 : index
      %b_at = arith.addi %b_base, %lane2 : index
      %b1_at = arith.addi %b_at, %c1 : index
      %b0 = vector.extract %b[0] : i32 from vector<2xi32>
      %b1 = vector.extract %b[1] : i32 from vector<2xi32>
      memref.store %b0, %scratch[%b_at] : memref<768xi32, 3>
      memref.store %b1, %scratch[%b1_at] : memref<768xi32, 3>
      gpu.barrier
      %g = arith.divui %lane, %c4 : index
      %q = arith.remui %lane, %c4 : index
      %row_hi = arith.addi %g, %c8 : index
      %col0 = arith.muli %q, %c2 : index
      %col1 = arith.addi %col0, %c1 : index
      %s0 = func.call @mma_reference_dot(%scratch, %base, %g, %col0) : (memref<768xi32, 3>, index, index, index) -> f32
      %s1 = func.call @mma_reference_dot(%scratch, %base, %g, %col1) : (memref<768xi32, 3>, index, index, index) -> f32
      %s2 = func.call @mma_reference_dot(%scratch, %base, %row_hi, %col0) : (memref<768xi32, 3>, index, index, index) -> f32
      %s3 = func.call @mma_reference_dot(%scratch, %base, %row_hi, %col1) : (memref<768xi32, 3>, index, index, index) -> f32
      gpu.barrier
      %s = vector.from_elements %s0, %s1, %s2, %s3 : vector<4xf32>
      %d = arith.addf %c, %s : vector<4xf32>
      return %d : vector<4xf32>
    }

    // @mma_16x8x16 on NVIDIA's tensor cores: one mma.sync.m16n8k16 with
    // f16 inputs and f32 accumulators.
    func.func private @mma_16x8x16_nvptx(%scratch: memref<768xi32, 3>, %warp: index, %lane: index, %a: vector<4xi32>, %b: vector<2xi32>, %c: vector<4xf32>) -> vector<4xf32> {
      // The operands as rows of registers, as nvgpu.mma.sync takes them
      // (built element by element: the LLVM lowering takes no shape_cast or
      // strided slice of these vectors).
      %a_empty = arith.constant dense<0.0> : vector<4x2xf16>
      %b_empty = arith.constant dense<0.0> : vector<2x2xf16>
      %c_empty = arith.constant dense<0.0> : vector<2x2xf32>
      %a0_word = vector.extract %a[0] : i32 from vector<4xi32>
      %a0 = vector.from_elements %a0_word : vector<1xi32>
      %a1_word = vector.extract %a[1] : i32 from vector<4xi32>
      %a1 = vector.from_elements %a1_word : vector<1xi32>
      %a2_word = vector.extract %a[2] : i32 from vector<4xi32>
      %a2 = vector.from_elements %a2_word : vector<1xi32>
      %a3_word = vector.extract %a[3] : i32 from vector<4xi32>
      %a3 = vector.from_elements %a3_word : vector<1xi32>
      %a0h = vector.bitcast %a0 : vector<1xi32> to vector<2xf16>
      %a1h = vector.bitcast %a1 : vector<1xi32> to vector<2xf16>
      %a2h = vector.bitcast %a2 : vector<1xi32> to vector<2xf16>
      %a3h = vector.bitcast %a3 : vector<1xi32> to vector<2xf16>
      %ra0 = vector.insert %a0h, %a_empty [0] : vector<2xf16> into vector<4x2xf16>
      %ra1 = vector.insert %a1h, %ra0 [1] : vector<2xf16> into vector<4x2xf16>
      %ra2 = vector.insert %a2h, %ra1 [2] : vector<2xf16> into vector<4x2xf16>
      %a_rows = vector.insert %a3h, %ra2 [3] : vector<2xf16> into vector<4x2xf16>
      %b0_word = vector.extract %b[0] : i32 from vector<2xi32>
      %b0 = vector.from_elements %b0_word : vector<1xi32>
      %b1_word = vector.extract %b[1] : i32 from vector<2xi32>
      %b1 = vector.from_elements %b1_word : vector<1xi32>
      %b0h = vector.bitcast %b0 : vector<1xi32> to vector<2xf16>
      %b1h = vector.bitcast %b1 : vector<1xi32> to vector<2xf16>
      %rb0 = vector.insert %b0h, %b_empty [0] : vector<2xf16> into vector<2x2xf16>
      %b_rows = vector.insert %b1h, %rb0 [1] : vector<2xf16> into vector<2x2xf16>
      %c0 = vector.extract %c[0] : f32 from vector<4xf32>
      %c1 = vector.extract %c[1] : f32 from vector<4xf32>
      %c2 = vector.extract %c[2] : f32 from vector<4xf32>
      %c3 = vector.extract %c[3] : f32 from vector<4xf32>
      %c_lo = vector.from_elements %c0, %c1 : vector<2xf32>
      %c_hi = vector.from_elements %c2, %c3 : vector<2xf32>
      %rc0 = vector.insert %c_lo, %c_empty [0] : vector<2xf32> into vector<2x2xf32>
      %c_rows = vector.insert %c_hi, %rc0 [1] : vector<2xf32> into vector<2x2xf32>
      %d_rows = nvgpu.mma.sync (%a_rows, %b_rows, %c_rows) {mmaShape = [16, 8, 16]}
          : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
      %d_lo = vector.extract %d_rows[0] : vector<2xf32> from vector<2x2xf32>
      %d_hi = vector.extract %d_rows[1] : vector<2xf32> from vector<2x2xf32>
      %d0 = vector.extract %d_lo[0] : f32 from vector<2xf32>
      %d1 = vector.extract %d_lo[1] : f32 from vector<2xf32>
      %d2 = vector.extract %d_hi[0] : f32 from vector<2xf32>
      %d3 = vector.extract %d_hi[1] : f32 from vector<2xf32>
      %d = vector.from_elements %d0, %d1, %d2, %d3 : vector<4xf32>
      return %d : vector<4xf32>
    }

    // sum over k of A[row, k] * B[k, col], from the fragments a warp put at
    // `base` of `scratch` (A's 4 words per lane, then B's 2).
    func.func private @mma_reference_dot(%scratch: memref<768xi32, 3>, %base: index, %row: index, %col: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c8 = arith.constant 8 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %sixteen = arith.constant 16 : i32
      %low_half = arith.constant 65535 : i32
      %zero = arith.constant 0.0 : f32
      %g_a = arith.remui %row, %c8 : index
      %upper = arith.divui %row, %c8 : index
      %a_lane_base = arith.muli %g_a, %c4 : index
      %b_lane_base = arith.muli %col, %c4 : index
      %b_base = arith.addi %base, %c128 : index
      %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> f32 {
        %word = arith.divui %k, %c2 : index
        %which = arith.remui %k, %c2 : index
        %q = arith.remui %word, %c4 : index
        %second = arith.divui %word, %c4 : index
        // A: register upper + 2 * second of lane (row % 8, word % 4).
        %a_lane = arith.addi %a_lane_base, %q : index
        %second2 = arith.muli %second, %c2 : index
        %a_reg = arith.addi %upper, %second2 : index
        %a_lane4 = arith.muli %a_lane, %c4 : index
        %a_off = arith.addi %a_lane4, %a_reg : index
        %a_at = arith.addi %base, %a_off : index
        // B: register `second` of lane (col, word % 4).
        %b_lane = arith.addi %b_lane_base, %q : index
        %b_lane2 = arith.muli %b_lane, %c2 : index
        %b_off = arith.addi %b_lane2, %second : index
        %b_at = arith.addi %b_base, %b_off : index
        %a_word = memref.load %scratch[%a_at] : memref<768xi32, 3>
        %b_word = memref.load %scratch[%b_at] : memref<768xi32, 3>
        %which_i32 = arith.index_cast %which : index to i32
        %shift = arith.muli %which_i32, %sixteen : i32
        %a_shifted = arith.shrui %a_word, %shift : i32
        %b_shifted = arith.shrui %b_word, %shift : i32
        %a_bits = arith.andi %a_shifted, %low_half : i32
        %b_bits = arith.andi %b_shifted, %low_half : i32
        %av = func.call @f16_bits_to_f32(%a_bits) : (i32) -> f32
        %bv = func.call @f16_bits_to_f32(%b_bits) : (i32) -> f32
        %next = math.fma %av, %bv, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // AMD's 16x16x16 products (@matmul_mfma_bytes): CDNA's
    // v_mfma_f32_16x16x16f16 layout over a wavefront of 64 lanes, in
    // words of two f16 (the lower k in the low half):
    // - A (16 rows by 16 k): lane l holds row l % 16, words 2(l / 16) and
    //   2(l / 16) + 1 (k 4(l / 16)..+3);
    // - B (16 k by 16 columns): lane l holds column l % 16, the same words;
    // - C and D (f32): lane l holds column l % 16, rows 4(l / 16)..+3.

    // A's (or B's) fragment from a staged tile whose rows are A's rows (B's
    // columns) row0..+15, at words kw..kw+7.
    func.func private @mfma_fragment(%tile: memref<2560xi32, 3>, %row0: index, %kw: index, %lane: index) -> vector<2xi32> {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c16 = arith.constant 16 : index
      %c20 = arith.constant 20 : index
      %lane_row = arith.remui %lane, %c16 : index
      %group = arith.divui %lane, %c16 : index
      %row = arith.addi %row0, %lane_row : index
      %row_at = arith.muli %row, %c20 : index
      %group2 = arith.muli %group, %c2 : index
      %word = arith.addi %kw, %group2 : index
      %at0 = arith.addi %row_at, %word : index
      %at1 = arith.addi %at0, %c1 : index
      %v0 = memref.load %tile[%at0] : memref<2560xi32, 3>
      %v1 = memref.load %tile[%at1] : memref<2560xi32, 3>
      %v = vector.from_elements %v0, %v1 : vector<2xi32>
      return %v : vector<2xi32>
    }

    // D = A * B + C over one wavefront's fragments, the layout's definition
    // (as @mma_16x8x16): the lanes put their fragments in the wavefront's
    // 256 words of `scratch`, then each sums its four elements of D. Only
    // tests run it; AMD GPUs run @mfma_16x16x16_amdgpu.
    func.func private @mfma_16x16x16(%scratch: memref<1024xi32, 3>, %wave: index, %lane: index, %a: vector<2xi32>, %b: vector<2xi32>, %c: vector<4xf32>) -> vector<4xf32> {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %c256 = arith.constant 256 : index
      %base = arith.muli %wave, %c256 : index
      %lane2 = arith.muli %lane, %c2 : index
      %a_at = arith.addi %base, %lane2 : index
      %a1_at = arith.addi %a_at, %c1 : index
      %b_at = arith.addi %a_at, %c128 : index
      %b1_at = arith.addi %b_at, %c1 : index
      %a0 = vector.extract %a[0] : i32 from vector<2xi32>
      %a1 = vector.extract %a[1] : i32 from vector<2xi32>
      %b0 = vector.extract %b[0] : i32 from vector<2xi32>
      %b1 = vector.extract %b[1] : i32 from vector<2xi32>
      memref.store %a0, %scratch[%a_at] : memref<1024xi32, 3>
      memref.store %a1, %scratch[%a1_at] : memref<1024xi32, 3>
      memref.store %b0, %scratch[%b_at] : memref<1024xi32, 3>
      memref.store %b1, %scratch[%b1_at] : memref<1024xi32, 3>
      gpu.barrier
      %col = arith.remui %lane, %c16 : index
      %group = arith.divui %lane, %c16 : index
      %row0 = arith.muli %group, %c4 : index
      %row1 = arith.addi %row0, %c1 : index
      %row2 = arith.addi %row0, %c2 : index
      %row3 = arith.addi %row0, %c3 : index
      %s0 = func.call @mfma_reference_dot(%scratch, %base, %row0, %col) : (memref<1024xi32, 3>, index, index, index) -> f32
      %s1 = func.call @mfma_reference_dot(%scratch, %base, %row1, %col) : (memref<1024xi32, 3>, index, index, index) -> f32
      %s2 = func.call @mfma_reference_dot(%scratch, %base, %row2, %col) : (memref<1024xi32, 3>, index, index, index) -> f32
      %s3 = func.call @mfma_reference_dot(%scratch, %base, %row3, %col) : (memref<1024xi32, 3>, index, index, index) -> f32
      gpu.barrier
      %s = vector.from_elements %s0, %s1, %s2, %s3 : vector<4xf32>
      %d = arith.addf %c, %s : vector<4xf32>
      return %d : vector<4xf32>
    }

    // @mfma_16x16x16 on CDNA's matrix cores: one v_mfma_f32_16x16x16f16.
    func.func private @mfma_16x16x16_amdgpu(%scratch: memref<1024xi32, 3>, %wave: index, %lane: index, %a: vector<2xi32>, %b: vector<2xi32>, %c: vector<4xf32>) -> vector<4xf32> {
      %a_halves = vector.bitcast %a : vector<2xi32> to vector<4xf16>
      %b_halves = vector.bitcast %b : vector<2xi32> to vector<4xf16>
      %d = amdgpu.mfma 16x16x16 %a_halves * %b_halves + %c blgp = none
          : vector<4xf16>, vector<4xf16>, vector<4xf32>
      return %d : vector<4xf32>
    }

    // sum over k of A[row, k] * B[k, col], from the fragments a wavefront
    // put at `base` of `scratch` (A's 2 words per lane, then B's).
    func.func private @mfma_reference_dot(%scratch: memref<1024xi32, 3>, %base: index, %row: index, %col: index) -> f32 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %c128 = arith.constant 128 : index
      %sixteen = arith.constant 16 : i32
      %low_half = arith.constant 65535 : i32
      %zero = arith.constant 0.0 : f32
      %b_base = arith.addi %base, %c128 : index
      %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> f32 {
        // Element k is in lane row (or col) + 16 (k / 4), word (k % 4) / 2.
        %group = arith.divui %k, %c4 : index
        %group16 = arith.muli %group, %c16 : index
        %in_group = arith.remui %k, %c4 : index
        %word = arith.divui %in_group, %c2 : index
        %which = arith.remui %k, %c2 : index
        %a_lane = arith.addi %row, %group16 : index
        %b_lane = arith.addi %col, %group16 : index
        %a_lane2 = arith.muli %a_lane, %c2 : index
        %b_lane2 = arith.muli %b_lane, %c2 : index
        %a_off = arith.addi %a_lane2, %word : index
        %b_off = arith.addi %b_lane2, %word : index
        %a_at = arith.addi %base, %a_off : index
        %b_at = arith.addi %b_base, %b_off : index
        %a_word = memref.load %scratch[%a_at] : memref<1024xi32, 3>
        %b_word = memref.load %scratch[%b_at] : memref<1024xi32, 3>
        %which_i32 = arith.index_cast %which : index to i32
        %shift = arith.muli %which_i32, %sixteen : i32
        %a_shifted = arith.shrui %a_word, %shift : i32
        %b_shifted = arith.shrui %b_word, %shift : i32
        %a_bits = arith.andi %a_shifted, %low_half : i32
        %b_bits = arith.andi %b_shifted, %low_half : i32
        %av = func.call @f16_bits_to_f32(%a_bits) : (i32) -> f32
        %bv = func.call @f16_bits_to_f32(%b_bits) : (i32) -> f32
        %next = math.fma %av, %bv, %acc : f32
        scf.yield %next : f32
      }
      return %sum : f32
    }

    // Writes a wavefront's 16x16 tile of D (f32) to y[row0.., col0..]
    // where inside [N, M].
    func.func private @store_mfma_tile(%y: memref<?xf32>, %d: vector<4xf32>, %row0: index, %col0: index, %lane: index, %n_size: index, %m_size: index) {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %lane_col = arith.remui %lane, %c16 : index
      %group = arith.divui %lane, %c16 : index
      %col = arith.addi %col0, %lane_col : index
      %group4 = arith.muli %group, %c4 : index
      %row_a = arith.addi %row0, %group4 : index
      %row_b = arith.addi %row_a, %c1 : index
      %row_c = arith.addi %row_a, %c2 : index
      %row_d = arith.addi %row_a, %c3 : index
      %d0 = vector.extract %d[0] : f32 from vector<4xf32>
      %d1 = vector.extract %d[1] : f32 from vector<4xf32>
      %d2 = vector.extract %d[2] : f32 from vector<4xf32>
      %d3 = vector.extract %d[3] : f32 from vector<4xf32>
      func.call @store_inside(%y, %d0, %row_a, %col, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d1, %row_b, %col, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d2, %row_c, %col, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d3, %row_d, %col, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      return
    }

    // Writes a warp's 16x8 tile of D (f32) to y[row0.., col0..] where
    // inside [N, M].
    func.func private @store_mma_tile(%y: memref<?xf32>, %d: vector<4xf32>, %row0: index, %col0: index, %g: index, %q: index, %n_size: index, %m_size: index) {
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c8 = arith.constant 8 : index
      %row_lo = arith.addi %row0, %g : index
      %row_hi = arith.addi %row_lo, %c8 : index
      %q2 = arith.muli %q, %c2 : index
      %col_lo = arith.addi %col0, %q2 : index
      %col_hi = arith.addi %col_lo, %c1 : index
      %d0 = vector.extract %d[0] : f32 from vector<4xf32>
      %d1 = vector.extract %d[1] : f32 from vector<4xf32>
      %d2 = vector.extract %d[2] : f32 from vector<4xf32>
      %d3 = vector.extract %d[3] : f32 from vector<4xf32>
      func.call @store_inside(%y, %d0, %row_lo, %col_lo, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d1, %row_lo, %col_hi, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d2, %row_hi, %col_lo, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      func.call @store_inside(%y, %d3, %row_hi, %col_hi, %n_size, %m_size) : (memref<?xf32>, f32, index, index, index, index) -> ()
      return
    }

    // y[row * M + col] = value where row < N and col < M.
    func.func private @store_inside(%y: memref<?xf32>, %value: f32, %row: index, %col: index, %n_size: index, %m_size: index) {
      %row_ok = arith.cmpi ult, %row, %n_size : index
      %col_ok = arith.cmpi ult, %col, %m_size : index
      %ok = arith.andi %row_ok, %col_ok : i1
      scf.if %ok {
        %row_at = arith.muli %row, %m_size : index
        %at = arith.addi %row_at, %col : index
        memref.store %value, %y[%at] : memref<?xf32>
      }
      return
    }
  }
}
