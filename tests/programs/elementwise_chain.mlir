// A chain of 10 elementwise ops over one [33, 17] tensor and a second input
// (one fused elementwise kernel).
func.func @main(%x: tensor<33x17xf32>, %y: tensor<33x17xf32>) -> tensor<33x17xf32> {
  %half = "accy.constant"() <{value = dense<0.5> : tensor<33x17xf32>}> : () -> tensor<33x17xf32>
  %0 = "accy.mul"(%x, %half) : (tensor<33x17xf32>, tensor<33x17xf32>) -> tensor<33x17xf32>
  %1 = "accy.add"(%0, %y) : (tensor<33x17xf32>, tensor<33x17xf32>) -> tensor<33x17xf32>
  %2 = "accy.tanh"(%1) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  %3 = "accy.exp"(%2) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  %4 = "accy.sub"(%3, %half) : (tensor<33x17xf32>, tensor<33x17xf32>) -> tensor<33x17xf32>
  %5 = "accy.abs"(%4) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  %6 = "accy.sqrt"(%5) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  %7 = "accy.max"(%6, %y) : (tensor<33x17xf32>, tensor<33x17xf32>) -> tensor<33x17xf32>
  %8 = "accy.sigmoid"(%7) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  %9 = "accy.neg"(%8) : (tensor<33x17xf32>) -> tensor<33x17xf32>
  func.return %9 : tensor<33x17xf32>
}
