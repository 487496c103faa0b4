// A program with a work item no kernel can run: its target says the device
// computes no float64 (fp64 = false), so the float64 work in the middle runs
// on the host reference path, between the kernels before and after it (a
// row sum, read through a reshape, and a scan of what it returns).
builtin.module attributes {accy.target = #accy.target<fp64 = false>} {
  func.func @main(%x: tensor<5x7xf32>) -> (tensor<5x1xf32>, tensor<5x1xf32>) {
    %r = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<5x7xf32>) -> tensor<5xf32>
    %rv = "accy.reshape"(%r) : (tensor<5xf32>) -> tensor<5x1xf32>
    %h = "accy.cast"(%rv) : (tensor<5x1xf32>) -> tensor<5x1xf64>
    %t = "accy.tanh"(%h) : (tensor<5x1xf64>) -> tensor<5x1xf64>
    %f = "accy.cast"(%t) : (tensor<5x1xf64>) -> tensor<5x1xf32>
    %s = "accy.scan"(%f) <{kind = "sum", axis = 0 : i64, exclusive = false, reverse = false}> : (tensor<5x1xf32>) -> tensor<5x1xf32>
    func.return %f, %s : tensor<5x1xf32>, tensor<5x1xf32>
  }
}
