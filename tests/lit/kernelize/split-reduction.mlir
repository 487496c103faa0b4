// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// The mean of 100000 elements is longer than one accumulator's chunk (16
// lanes x 256 on the CPU, 256 work-items x 256 on the GPU): partial sums of
// every chunk into a scratch buffer, then their total, divided by the count.
func.func @main(%x: tensor<100000xf32>) -> tensor<f32> {
  %m = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 0>}> : (tensor<100000xf32>) -> tensor<f32>
  func.return %m : tensor<f32>
}

// CHECK:      %[[PARTIALS:.*]] = memref.alloc() : memref<25xf32>
// CHECK:      "gpu.launch_func"({{.*}}%[[PARTIALS]]) {{.*}}@kernels::@main_k0_reduction_partials
// CHECK:      "gpu.launch_func"({{.*}}%[[PARTIALS]]) {{.*}}@kernels::@main_k0_reduction
// CHECK:      memref.dealloc %[[PARTIALS]] : memref<25xf32>
// CHECK:      "gpu.func"() <{function_type = (memref<100000xf32>, memref<25xf32>) -> (), kernel}>
// CHECK:      scf.for {{.*}} -> (vector<16xf32>)
// CHECK:      vector.load
// CHECK:      vector.reduction <add>
// CHECK:      memref.store {{.*}} : memref<25xf32>
// CHECK:      sym_name = "main_k0_reduction_partials"
// CHECK:      "gpu.func"() <{function_type = (memref<100000xf32>, memref<1xf32>, memref<25xf32>) -> (), kernel}>
// CHECK:      memref.load {{.*}} : memref<25xf32>
// CHECK:      arith.divf
// CHECK:      sym_name = "main_k0_reduction"
// CHECK-NOT:  gpu.barrier

// GPU:        memref.alloc() : memref<2xf32>
// GPU:        @kernels::@main_k0_reduction_partials
// GPU:        @kernels::@main_k0_reduction
// GPU:        gpu.barrier
