// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// Row sum of exp(x), then log: prologue and epilogue fused into one kernel.
func.func @main(%x: tensor<8x100xf32>) -> tensor<8xf32> {
  %e = "accy.exp"(%x) : (tensor<8x100xf32>) -> tensor<8x100xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<8x100xf32>) -> tensor<8xf32>
  %l = "accy.log"(%s) : (tensor<8xf32>) -> tensor<8xf32>
  func.return %l : tensor<8xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}@kernels::@main_k0_reduction
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      scf.for {{.*}} iter_args({{.*}}) -> (vector<16xf32>)
// CHECK:      vector.load
// CHECK:      math.exp {{.*}} : vector<16xf32>
// CHECK:      scf.for {{.*}} -> (f32)
// CHECK:      vector.reduction <add>
// CHECK:      math.log
// CHECK:      memref.store
// CHECK-NOT:  gpu.barrier

// GPU-DAG:    memref.alloca() : memref<{{[0-9]+}}xf32, #gpu.address_space<workgroup>>
// GPU-DAG:    gpu.block_id
// GPU:        gpu.barrier
