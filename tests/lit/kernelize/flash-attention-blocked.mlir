// RUN: accy-opt %s -p kernelize | filecheck %s

// A causal attention large enough for the CPU profile's blocked kernel
// (Sq·Sk·(D+Dv) >= 64³ per head): three packs, then a work-item per block of
// 4 query rows (query_rows) over tiles of 64 keys (key_tile). Two heads of
// 100 queries and keys, D = Dv = 64: q packed as 2 x 25 blocks x 64 x 4
// (12800), kᵀ as 2 x 2 tiles x (64 + 1 index row) x 64 (16640), v as 2 x
// 128 padded rows x 64 (16384); no 2x100x100 (20000-element) score buffer.
func.func @main(%q: tensor<2x100x64xf32>, %k: tensor<2x100x64xf32>, %v: tensor<2x100x64xf32>) -> tensor<2x100x64xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.125 : f32, causal = true}> : (tensor<2x100x64xf32>, tensor<2x100x64xf32>, tensor<2x100x64xf32>) -> tensor<2x100x64xf32>
  func.return %o : tensor<2x100x64xf32>
}

// CHECK-NOT:  memref<20000x
// CHECK:      memref.alloc() : memref<12800xf32>
// CHECK:      memref.alloc() : memref<16640xf32>
// CHECK:      memref.alloc() : memref<16384xf32>
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention_pack_q,
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention_pack_k,
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention_pack_v,
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_flash_attention,
// CHECK-NOT:  "gpu.launch_func"
// The kᵀ pack's last row: each key's index as a float.
// CHECK:      arith.sitofp
// The blocks: the 4 x 64 scores as 16 vector accumulators over D...
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:        vector.load {{.*}} : memref<16640xf32>, vector<16xf32>
// CHECK:        math.fma {{.*}} : vector<16xf32>
// ... keys past the query (causal) set to -inf by the index row, the online softmax per row...
// CHECK:      accy_kernel.vcmp "oge", {{.*}} : vector<16xf32> -> vector<16xi1>
// CHECK:      accy_kernel.vselect
// CHECK:      vector.reduction <maximumf>
// CHECK:      math.exp {{.*}} : vector<16xf32>
// CHECK:      vector.store {{.*}} : memref<256xf32>, vector<16xf32>
// ... then p (through a private array) times v rows into the 4 x 64 accumulators.
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:        vector.load {{.*}} : memref<16384xf32>, vector<16xf32>
// CHECK:        math.fma {{.*}} : vector<16xf32>
// CHECK:      arith.divf
// CHECK:      vector.store {{.*}} : memref<12800xf32>, vector<16xf32>
// CHECK-NOT:  gpu.barrier
// CHECK-NOT:  memref<20000x
