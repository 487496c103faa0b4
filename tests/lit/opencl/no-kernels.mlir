// RUN: not accy-opt %s -t opencl 2>&1 | filecheck %s

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// CHECK: error: opencl: the module holds no gpu.module @kernels (run the kernelize pass first
