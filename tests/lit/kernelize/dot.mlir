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

// The CPU register tile: 4 vector<16xf32> accumulators.
// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_dot_general
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:      vector.load
// CHECK:      vector.broadcast
// CHECK:      math.fma {{.*}} : vector<16xf32>
// CHECK:      arith.maximumf {{.*}} : vector<16xf32>
// CHECK:      vector.store

// GPU:        memref.alloca() : memref<256xf32, #gpu.address_space<workgroup>>
// GPU:        gpu.barrier
// GPU:        math.fma
