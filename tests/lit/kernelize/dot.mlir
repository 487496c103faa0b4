// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// matmul + bias + relu: one dot kernel with the epilogue fused.
func.func @main(%a: tensor<17x33xf32>, %b: tensor<33x32xf32>, %c: tensor<32xf32>) -> tensor<17x32xf32> {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<17x33xf32>, tensor<33x32xf32>) -> tensor<17x32xf32>
  %cb = "accy.broadcast"(%c) <{dims = array<i64: 1>}> : (tensor<32xf32>) -> tensor<17x32xf32>
  %s = "accy.add"(%d, %cb) : (tensor<17x32xf32>, tensor<17x32xf32>) -> tensor<17x32xf32>
  %r = "accy.relu"(%s) : (tensor<17x32xf32>) -> tensor<17x32xf32>
  func.return %r : tensor<17x32xf32>
}

// A small product: one CPU register tile kernel, min(dot_rows, M) = 12
// vector<16xf32> accumulators read straight from the operands.
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_dot_general
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:      vector.load
// CHECK:      vector.broadcast
// CHECK:      math.fma {{.*}} : vector<16xf32>
// CHECK:      arith.maximumf {{.*}} : vector<16xf32>
// CHECK:      vector.store

// On the gpu profile, 16x16 work-items of register tiles: 8x8 by default,
// halved down to 4x4 for a product too small to make 256 work-groups (k,
// 33, is too short to split). The staged k step holds 4 columns of the
// 64-row lhs block and 4 rows of the 64-column rhs block (fetched during
// the step before). A work-item owns runs of 4 consecutive rows and
// columns, so each staged k is one aligned 4-wide load of each staged tile
// (16-byte aligned local arrays; the lhs's k rows padded by 8, so that a
// warp's staging stores fall in distinct banks) and 16 fmas.
// GPU:        memref.alloca() {alignment = 16 : i64} : memref<288xf32, #gpu.address_space<workgroup>>
// GPU-NEXT:   memref.alloca() {alignment = 16 : i64} : memref<256xf32, #gpu.address_space<workgroup>>
// GPU:        gpu.barrier
// GPU:        vector.load {{.*}} {alignment = 16 : i64} : memref<288xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// GPU-COUNT-4: vector.extract
// GPU:        vector.load {{.*}} {alignment = 16 : i64} : memref<256xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// GPU-COUNT-4: vector.extract
// GPU-COUNT-16: math.fma
// GPU:        gpu.barrier
