// RUN: hetc-opt %s --split-input-file --hetc-x86-emulate-amx --verify-diagnostics | FileCheck %s

// Each tile becomes a 2-D vector of its shape. A load or store moves one
// vector per tile row: rows of a 2-D buffer without a stride, rows `stride`
// elements apart along the innermost index with one. tdpbsud (signed lhs,
// zero-extended rhs) is one vpdpbusd per lhs row and 4 lhs codes: the rhs row
// (4 codes of each of 16 columns) as the unsigned operand, the lhs codes
// broadcast to every column as the signed one.
// CHECK-LABEL: func.func @signed_by_unsigned
// CHECK-SAME: (%[[A:.+]]: memref<?x64xi8>, %[[B:.+]]: memref<512xi8>, %[[C:.+]]: memref<16x16xi32>, %[[ROW:.+]]: index)
// CHECK: %[[A0:.+]] = vector.load %[[A]][%[[ROW]], %{{.+}}] : memref<?x64xi8>, vector<32xi8>
// CHECK: %[[NEXT:.+]] = arith.addi %[[ROW]], %{{.+}} : index
// CHECK: vector.load %[[A]][%[[NEXT]], %{{.+}}] : memref<?x64xi8>, vector<32xi8>
// CHECK-COUNT-14: vector.load %[[A]]
// CHECK: vector.load %[[B]][%{{.+}}] : memref<512xi8>, vector<64xi8>
// CHECK: %[[STRIDE:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[B1:.+]] = arith.addi %{{.+}}, %[[STRIDE]] : index
// CHECK: vector.load %[[B]][%[[B1]]] : memref<512xi8>, vector<64xi8>
// CHECK: %[[RHS:.+]] = vector.insert %{{.+}} [7] : vector<64xi8> into vector<8x64xi8>
// CHECK: %[[WORDS:.+]] = vector.bitcast %{{.+}} : vector<32xi8> to vector<8xi32>
// CHECK: %[[QUAD:.+]] = vector.extract %[[WORDS]][0] : i32 from vector<8xi32>
// CHECK: %[[SPLAT:.+]] = vector.broadcast %[[QUAD]] : i32 to vector<16xi32>
// CHECK: %[[BYTES:.+]] = vector.bitcast %[[SPLAT]] : vector<16xi32> to vector<64xi8>
// CHECK: %[[RHS0:.+]] = vector.extract %[[RHS]][0] : vector<64xi8> from vector<8x64xi8>
// CHECK: call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %[[RHS0]], %[[BYTES]])
// CHECK: vector.extract %[[WORDS]][1] : i32 from vector<8xi32>
// CHECK: %[[RHS1:.+]] = vector.extract %[[RHS]][1] : vector<64xi8> from vector<8x64xi8>
// CHECK: call @llvm.x86.avx512.vpdpbusd.512(%{{.+}}, %[[RHS1]], %{{.+}})
// CHECK-COUNT-126: call @llvm.x86.avx512.vpdpbusd.512
// CHECK-COUNT-16: vector.store %{{.+}}, %[[C]][%{{.+}}, %{{.+}}] : memref<16x16xi32>, vector<16xi32>
// CHECK-NOT: amx.
func.func @signed_by_unsigned(%a: memref<?x64xi8>, %b: memref<512xi8>, %c: memref<16x16xi32>, %row: index) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %lhs = amx.tile_load %a[%row, %c0] : memref<?x64xi8> into !amx.tile<16x32xi8>
  %rhs = amx.tile_load %b[%c0], %c64 : memref<512xi8> into !amx.tile<8x64xi8>
  %zero = amx.tile_zero : !amx.tile<16x16xi32>
  %product = amx.tile_muli %lhs, %rhs zext, %zero : !amx.tile<16x32xi8>, !amx.tile<8x64xi8>, !amx.tile<16x16xi32>
  amx.tile_store %c[%c0, %c0], %product : memref<16x16xi32>, !amx.tile<16x16xi32>
  return
}

// -----

// The other sign combinations are the sums themselves: both operands widened
// (sign- or zero-extended as their flags say), multiplied, and each column's
// 4 products reduced into its accumulator.
// CHECK-LABEL: func.func @signed_by_signed
// CHECK-NOT: vpdpbusd
// CHECK: arith.extsi %{{.+}} : vector<64xi8> to vector<64xi32>
// CHECK: arith.extsi %{{.+}} : vector<64xi8> to vector<64xi32>
// CHECK: %[[PRODUCTS:.+]] = arith.muli %{{.+}}, %{{.+}} : vector<64xi32>
// CHECK: %[[GROUPED:.+]] = vector.shape_cast %[[PRODUCTS]] : vector<64xi32> to vector<16x4xi32>
// CHECK: vector.multi_reduction <add>, %[[GROUPED]], %{{.+}} [1] : vector<16x4xi32> to vector<16xi32>
func.func @signed_by_signed(%a: memref<16x64xi8>, %b: memref<16x64xi8>, %c: memref<16x16xi32>) {
  %c0 = arith.constant 0 : index
  %lhs = amx.tile_load %a[%c0, %c0] : memref<16x64xi8> into !amx.tile<16x64xi8>
  %rhs = amx.tile_load %b[%c0, %c0] : memref<16x64xi8> into !amx.tile<16x64xi8>
  %acc = amx.tile_load %c[%c0, %c0] : memref<16x16xi32> into !amx.tile<16x16xi32>
  %product = amx.tile_muli %lhs, %rhs, %acc : !amx.tile<16x64xi8>, !amx.tile<16x64xi8>, !amx.tile<16x16xi32>
  amx.tile_store %c[%c0, %c0], %product : memref<16x16xi32>, !amx.tile<16x16xi32>
  return
}

// -----

// A bf16 tile product is one FMA per accumulator row, pair element and
// pair, in tdpbf16ps's order: each rhs row widened to f32 and split into the
// pairs' first and second elements, each lhs element broadcast. Sums a K loop
// carries in tiles become the loop's vector iter_args.
// CHECK-LABEL: func.func @bf16_loop
// CHECK-SAME: (%[[A:.+]]: memref<16x32xbf16>, %[[B:.+]]: memref<16x32xbf16>, %[[C:.+]]: memref<16x16xf32>, %[[N:.+]]: index)
// CHECK: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : vector<16x16xf32>
// CHECK: %[[SUMS:.+]] = scf.for %{{.+}} = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[ZERO]]) -> (vector<16x16xf32>)
// CHECK-COUNT-16: vector.load %[[A]]
// CHECK-COUNT-16: vector.load %[[B]]
// CHECK: %[[RHS0:.+]] = arith.extf %{{.+}} : vector<32xbf16> to vector<32xf32>
// CHECK: %[[EVEN:.+]], %[[ODD:.+]] = vector.deinterleave %[[RHS0]] : vector<32xf32> -> vector<16xf32>
// CHECK-COUNT-15: vector.deinterleave
// CHECK: %[[ROW0:.+]] = vector.extract %[[ACC]][0] : vector<16xf32> from vector<16x16xf32>
// CHECK: %[[LHS0:.+]] = arith.extf %{{.+}} : vector<32xbf16> to vector<32xf32>
// CHECK: %[[A00:.+]] = vector.extract %[[LHS0]][0] : f32 from vector<32xf32>
// CHECK: %[[SPLAT00:.+]] = vector.broadcast %[[A00]] : f32 to vector<16xf32>
// CHECK: %[[S0:.+]] = vector.fma %[[SPLAT00]], %[[EVEN]], %[[ROW0]] : vector<16xf32>
// CHECK: %[[A01:.+]] = vector.extract %[[LHS0]][1] : f32 from vector<32xf32>
// CHECK: %[[SPLAT01:.+]] = vector.broadcast %[[A01]] : f32 to vector<16xf32>
// CHECK: vector.fma %[[SPLAT01]], %[[ODD]], %[[S0]] : vector<16xf32>
// CHECK-COUNT-510: vector.fma
// CHECK: scf.yield %{{.+}} : vector<16x16xf32>
// CHECK-COUNT-16: vector.store %{{.+}}, %[[C]][%{{.+}}, %{{.+}}] : memref<16x16xf32>, vector<16xf32>
// CHECK-NOT: amx.
func.func @bf16_loop(%a: memref<16x32xbf16>, %b: memref<16x32xbf16>, %c: memref<16x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = amx.tile_zero : !amx.tile<16x16xf32>
  %sums = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (!amx.tile<16x16xf32>) {
    %lhs = amx.tile_load %a[%c0, %c0] : memref<16x32xbf16> into !amx.tile<16x32xbf16>
    %rhs = amx.tile_load %b[%c0, %c0] : memref<16x32xbf16> into !amx.tile<16x32xbf16>
    %next = amx.tile_mulf %lhs, %rhs, %acc : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
    scf.yield %next : !amx.tile<16x16xf32>
  }
  amx.tile_store %c[%c0, %c0], %sums : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}

// -----

// f16 tile products (AMX-FP16) are not emulated.
func.func @f16_tiles(%a: memref<16x32xf16>, %c: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %lhs = amx.tile_load %a[%c0, %c0] : memref<16x32xf16> into !amx.tile<16x32xf16>
  %acc = amx.tile_zero : !amx.tile<16x16xf32>
  // expected-error @+1 {{hetc-x86-emulate-amx: only bf16 tile products are emulated}}
  %product = amx.tile_mulf %lhs, %lhs, %acc : !amx.tile<16x32xf16>, !amx.tile<16x32xf16>, !amx.tile<16x16xf32>
  amx.tile_store %c[%c0, %c0], %product : memref<16x16xf32>, !amx.tile<16x16xf32>
  return
}

// -----

// Tiles passed through any region but an scf.for's iter_args are not
// emulated.
func.func @tile_through_if(%c: memref<16x16xi32>, %p: i1) {
  %c0 = arith.constant 0 : index
  %zero = amx.tile_zero : !amx.tile<16x16xi32>
  // expected-error @+1 {{hetc-x86-emulate-amx: tiles pass through scf.if, which is not emulated (scf.for is)}}
  %chosen = scf.if %p -> (!amx.tile<16x16xi32>) {
    scf.yield %zero : !amx.tile<16x16xi32>
  } else {
    scf.yield %zero : !amx.tile<16x16xi32>
  }
  amx.tile_store %c[%c0, %c0], %chosen : memref<16x16xi32>, !amx.tile<16x16xi32>
  return
}
