// layer_norm becomes mean / sub / mul / mean / add eps / rsqrt / mul over the
// last dim, then gamma and beta broadcast along the rows.
// RUN: accy-opt %s -p decompose | filecheck %s
// RUN: accy-opt %s -p decompose | accy-opt | filecheck %s

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    (%x: tensor<3x17xf32>, %g: tensor<17xf32>, %b: tensor<17xf32>)
// CHECK-NEXT:    %[[MU:.*]] = accy.reduce %x {kind = "mean", axes = array<i64: 1>} : tensor<3x17xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[MUB:.*]] = accy.broadcast %[[MU]] {dims = array<i64: 0>} : tensor<3xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[C:.*]] = accy.sub %x, %[[MUB]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[SQ:.*]] = accy.mul %[[C]], %[[C]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[VAR:.*]] = accy.reduce %[[SQ]] {kind = "mean", axes = array<i64: 1>} : tensor<3x17xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[EPS0:.*]] = accy.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[EPS:.*]] = accy.broadcast %[[EPS0]] {dims = array<i64>} : tensor<f32> -> tensor<3xf32>
// CHECK-NEXT:    %[[VE:.*]] = accy.add %[[VAR]], %[[EPS]] : tensor<3xf32>
// CHECK-NEXT:    %[[INV:.*]] = accy.rsqrt %[[VE]] : tensor<3xf32>
// CHECK-NEXT:    %[[INVB:.*]] = accy.broadcast %[[INV]] {dims = array<i64: 0>} : tensor<3xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[N:.*]] = accy.mul %[[C]], %[[INVB]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[GB:.*]] = accy.broadcast %g {dims = array<i64: 1>} : tensor<17xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[NG:.*]] = accy.mul %[[N]], %[[GB]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[BB:.*]] = accy.broadcast %b {dims = array<i64: 1>} : tensor<17xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.add %[[NG]], %[[BB]] : tensor<3x17xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<3x17xf32>
func.func @layer_norm(%x: tensor<3x17xf32>, %g: tensor<17xf32>, %b: tensor<17xf32>) -> tensor<3x17xf32> {
  %0 = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-03 : f32}> : (tensor<3x17xf32>, tensor<17xf32>, tensor<17xf32>) -> tensor<3x17xf32>
  func.return %0 : tensor<3x17xf32>
}
