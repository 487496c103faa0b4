// RUN: accy-opt %s -p kernelize | filecheck %s

// A product of 100x70 by 70x80 (over 64^3 multiply-adds) on the CPU
// profile: both operands packed into scratch panels first (two launches),
// then 12x32 register tiles over the panels: 24 vector<16xf32>
// accumulators, every k step 2 rhs vector loads and 12 lhs scalars.
func.func @main(%a: tensor<100x70xf32>, %b: tensor<70x80xf32>) -> tensor<100x80xf32> {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<100x70xf32>, tensor<70x80xf32>) -> tensor<100x80xf32>
  func.return %d : tensor<100x80xf32>
}

// ceil(100/12) = 9 row panels of 70x12, ceil(80/32) = 3 column panels of 70x32.
// CHECK:      %[[PA:.*]] = memref.alloc() : memref<7560xf32>
// CHECK-NEXT: %[[PB:.*]] = memref.alloc() : memref<6720xf32>
// CHECK:      "gpu.launch_func"({{.*}}%[[PA]]) <{kernel = @kernels::@main_k0_dot_general_pack_a
// CHECK:      "gpu.launch_func"({{.*}}%[[PB]]) <{kernel = @kernels::@main_k0_dot_general_pack_b
// CHECK:      "gpu.launch_func"({{.*}}%[[PA]], %[[PB]]) <{kernel = @kernels::@main_k0_dot_general,
// CHECK:      memref.dealloc %[[PA]]
// CHECK:      memref.dealloc %[[PB]]
// CHECK:      sym_name = "main_k0_dot_general_pack_b"
// CHECK:      memref.alloca() : memref<384xf32>
// CHECK:      scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK-COUNT-2: vector.load
// CHECK-COUNT-24: math.fma
// CHECK:      sym_name = "main_k0_dot_general"
