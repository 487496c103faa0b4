// RUN: accy-opt %s -p kernelize --verify-bounds | filecheck %s

// iota * 2 along the columns: one kernel, the column index converted.
func.func @iota(%two: tensor<f32>) -> tensor<3x7xf32> {
  %p = "accy.iota"() <{dimension = 1 : i64}> : () -> tensor<3x7xf32>
  %b = "accy.broadcast"(%two) <{dims = array<i64>}> : (tensor<f32>) -> tensor<3x7xf32>
  %m = "accy.mul"(%p, %b) : (tensor<3x7xf32>, tensor<3x7xf32>) -> tensor<3x7xf32>
  func.return %m : tensor<3x7xf32>
}

// CHECK:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@iota_k0_elementwise
// CHECK-NOT:  "gpu.launch_func"
// CHECK:      "gpu.func"() <{function_type = (memref<1xf32>, memref<21xf32>) -> ()
// CHECK:      %[[COL:.*]] = arith.remsi %{{.*}}, %{{.*}} : index
// CHECK:      %[[C:.*]] = arith.index_cast %[[COL]] : index to i32
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[C]] : i32 to f32
// CHECK:      arith.mulf %[[F]], %{{.*}} : f32
