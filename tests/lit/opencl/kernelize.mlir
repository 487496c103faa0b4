// RUN: accy-opt %s -p kernelize -t opencl | filecheck %s
// A tensor program through kernelize and the OpenCL C backend.

builtin.module attributes {accy.target = #accy.target<profile = "cpu">} {
  func.func @main(%x: tensor<8x32xf32>, %y: tensor<8x32xf32>) -> tensor<8xf32> {
    %e = "accy.exp"(%x) : (tensor<8x32xf32>) -> tensor<8x32xf32>
    %m = "accy.mul"(%e, %y) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
    %s = "accy.reduce"(%m) <{kind = "sum", axes = array<i64: 1>}> : (tensor<8x32xf32>) -> tensor<8xf32>
    func.return %s : tensor<8xf32>
  }
}

// CHECK: __kernel void main_k{{[0-9]+}}_{{[a-z_]+}}(
// CHECK: get_global_id(0)
// CHECK: vload16(
// CHECK: exp(
