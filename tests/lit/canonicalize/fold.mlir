// Constant folding through elementwise and shape ops, evaluated by the
// reference interpreter; literals past 1<<16 elements are not materialised.
// RUN: accy-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @splat_chain
// CHECK-NEXT:    %{{.*}} = accy.constant dense<2.800000e+01> : tensor<3x17xf32>
// CHECK-NEXT:    func.return
func.func @splat_chain() -> tensor<3x17xf32> {
  %a = "accy.constant"() <{value = dense<2.0> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %b = "accy.constant"() <{value = dense<3.0> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %0 = "accy.mul"(%a, %b) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %1 = "accy.add"(%0, %0) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %2 = "accy.add"(%1, %a) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %3 = "accy.sub"(%2, %a) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %4 = "accy.sub"(%3, %0) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %5 = "accy.add"(%4, %1) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %6 = "accy.add"(%5, %a) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %7 = "accy.sub"(%6, %b) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %8 = "accy.add"(%7, %1) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %9 = "accy.sub"(%8, %b) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %10 = "accy.add"(%9, %a) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  func.return %10 : tensor<3x17xf32>
}

// CHECK-LABEL: func.func @unary_and_shape
// CHECK-NEXT:    %{{.*}} = accy.constant dense<[3.000000e+00, 4.000000e+00, 1.000000e+00, 2.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    func.return
func.func @unary_and_shape() -> tensor<4xf32> {
  %a = "accy.constant"() <{value = dense<[[-1.0, -2.0], [-3.0, -4.0]]> : tensor<2x2xf32>}> : () -> tensor<2x2xf32>
  %0 = "accy.abs"(%a) : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %1 = "accy.transpose"(%0) <{permutation = array<i64: 1, 0>}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %2 = "accy.reshape"(%1) : (tensor<2x2xf32>) -> tensor<4xf32>
  %3 = "accy.slice"(%2) <{start = array<i64: 1>, limit = array<i64: 4>, stride = array<i64: 2>}> : (tensor<4xf32>) -> tensor<2xf32>
  %4 = "accy.slice"(%2) <{start = array<i64: 0>, limit = array<i64: 4>, stride = array<i64: 2>}> : (tensor<4xf32>) -> tensor<2xf32>
  %5 = "accy.concat"(%3, %4) <{axis = 0 : i64}> : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  func.return %5 : tensor<4xf32>
}

// Integer division by zero is defined (x / 0 = 0) and folds like any other.
// CHECK-LABEL: func.func @integers_and_masks
// CHECK-NEXT:    %{{.*}} = accy.constant dense<[3, 0, -2]> : tensor<3xi32>
// CHECK-NEXT:    %{{.*}} = accy.constant dense<[true, false, false]> : tensor<3xi1>
// CHECK-NEXT:    func.return
func.func @integers_and_masks() -> (tensor<3xi32>, tensor<3xi1>) {
  %a = "accy.constant"() <{value = dense<[7, 5, -5]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %b = "accy.constant"() <{value = dense<[2, 0, 2]> : tensor<3xi32>}> : () -> tensor<3xi32>
  %0 = "accy.div"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  %1 = "accy.cmp"(%0, %b) <{predicate = "gt"}> : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  func.return %0, %1 : tensor<3xi32>, tensor<3xi1>
}

// Reductions are not folded, nor are ops with a non-literal operand.
// CHECK-LABEL: func.func @not_folded
// CHECK:         accy.reduce
// CHECK:         accy.add %x
// CHECK:         func.return
func.func @not_folded(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %a = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>}> : () -> tensor<4xf32>
  %0 = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 0>}> : (tensor<4xf32>) -> tensor<f32>
  %1 = "accy.add"(%x, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1 : tensor<f32>, tensor<4xf32>
}

// 256x257 = 65792 elements > 65536: left as an op.
// CHECK-LABEL: func.func @too_large
// CHECK:         accy.exp
func.func @too_large() -> tensor<256x257xf32> {
  %a = "accy.constant"() <{value = dense<1.0> : tensor<256x257xf32>}> : () -> tensor<256x257xf32>
  %0 = "accy.exp"(%a) : (tensor<256x257xf32>) -> tensor<256x257xf32>
  func.return %0 : tensor<256x257xf32>
}
