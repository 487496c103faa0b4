// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// exp(x) + broadcast(bias): the bias is read through stride 0, dims merge to
// rows of 37, each work-item owns 16 lanes of a row with a scalar tail.
func.func @main(%x: tensor<4x37xf32>, %b: tensor<37xf32>) -> tensor<4x37xf32> {
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<37xf32>) -> tensor<4x37xf32>
  %e = "accy.exp"(%x) : (tensor<4x37xf32>) -> tensor<4x37xf32>
  %s = "accy.add"(%e, %bb) : (tensor<4x37xf32>, tensor<4x37xf32>) -> tensor<4x37xf32>
  func.return %s : tensor<4x37xf32>
}

// CHECK:      func.func @main(%{{.*}}: memref<148xf32>, %{{.*}}: memref<37xf32>) -> memref<148xf32>
// CHECK-SAME: accy.peak_bytes
// CHECK:      %[[OUT:.*]] = memref.alloc() : memref<148xf32>
// CHECK:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// CHECK:      func.return %[[OUT]] : memref<148xf32>
// CHECK:      "gpu.module"() <{sym_name = "kernels"}>
// CHECK:      "gpu.global_id"()
// CHECK:      scf.if
// CHECK:      vector.load {{.*}} : memref<148xf32>, vector<16xf32>
// CHECK:      math.exp {{.*}} : vector<16xf32>
// CHECK:      vector.store
// CHECK:      } else {
// CHECK:      scf.for
// CHECK:      memref.load
// CHECK:      memref.store
// CHECK:      sym_name = "main_k0_elementwise", accy.kind = "elementwise"

// GPU:        vector.load {{.*}} vector<4xf32>
