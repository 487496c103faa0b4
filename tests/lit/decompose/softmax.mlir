// softmax and log_softmax become max / sub / exp / sum / div (log) along the
// axis, with accy.broadcast restoring the reduced dim.
// RUN: accy-opt %s -p decompose | filecheck %s
// RUN: accy-opt %s -p decompose | accy-opt | filecheck %s

// CHECK-LABEL: func.func @softmax
// CHECK-SAME:    (%x: tensor<3x17xf32>)
// CHECK-NEXT:    %[[M:.*]] = accy.reduce %x {kind = "max", axes = array<i64: 1>} : tensor<3x17xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[MB:.*]] = accy.broadcast %[[M]] {dims = array<i64: 0>} : tensor<3xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[D:.*]] = accy.sub %x, %[[MB]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[E:.*]] = accy.exp %[[D]] : tensor<3x17xf32>
// CHECK-NEXT:    %[[S:.*]] = accy.reduce %[[E]] {kind = "sum", axes = array<i64: 1>} : tensor<3x17xf32> -> tensor<3xf32>
// CHECK-NEXT:    %[[SB:.*]] = accy.broadcast %[[S]] {dims = array<i64: 0>} : tensor<3xf32> -> tensor<3x17xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.div %[[E]], %[[SB]] : tensor<3x17xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<3x17xf32>
func.func @softmax(%x: tensor<3x17xf32>) -> tensor<3x17xf32> {
  %0 = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  func.return %0 : tensor<3x17xf32>
}

// The axis may be any dim; the broadcast keeps the others.
// CHECK-LABEL: func.func @softmax_middle
// CHECK-NEXT:    %[[M:.*]] = accy.reduce %x {kind = "max", axes = array<i64: 1>} : tensor<2x5x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:    %{{.*}} = accy.broadcast %[[M]] {dims = array<i64: 0, 2>} : tensor<2x3xf32> -> tensor<2x5x3xf32>
// CHECK-NOT:     accy.softmax
// CHECK:         func.return
func.func @softmax_middle(%x: tensor<2x5x3xf32>) -> tensor<2x5x3xf32> {
  %0 = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  func.return %0 : tensor<2x5x3xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK-SAME:    (%x: tensor<17xf32>)
// CHECK-NEXT:    %[[M:.*]] = accy.reduce %x {kind = "max", axes = array<i64: 0>} : tensor<17xf32> -> tensor<f32>
// CHECK-NEXT:    %[[MB:.*]] = accy.broadcast %[[M]] {dims = array<i64>} : tensor<f32> -> tensor<17xf32>
// CHECK-NEXT:    %[[D:.*]] = accy.sub %x, %[[MB]] : tensor<17xf32>
// CHECK-NEXT:    %[[E:.*]] = accy.exp %[[D]] : tensor<17xf32>
// CHECK-NEXT:    %[[S:.*]] = accy.reduce %[[E]] {kind = "sum", axes = array<i64: 0>} : tensor<17xf32> -> tensor<f32>
// CHECK-NEXT:    %[[L:.*]] = accy.log %[[S]] : tensor<f32>
// CHECK-NEXT:    %[[LB:.*]] = accy.broadcast %[[L]] {dims = array<i64>} : tensor<f32> -> tensor<17xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.sub %[[D]], %[[LB]] : tensor<17xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<17xf32>
func.func @log_softmax(%x: tensor<17xf32>) -> tensor<17xf32> {
  %0 = "accy.log_softmax"(%x) <{axis = 0 : i64}> : (tensor<17xf32>) -> tensor<17xf32>
  func.return %0 : tensor<17xf32>
}
