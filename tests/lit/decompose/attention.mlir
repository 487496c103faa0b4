// attention becomes dot_general (q·kᵀ, batch dims leading) * scale, an
// optional causal mask, the softmax primitives, and dot_general with v.
// RUN: accy-opt %s -p decompose | filecheck %s
// RUN: accy-opt %s -p decompose | accy-opt | filecheck %s

// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x4xf32>)
// CHECK-NEXT:    %[[S:.*]] = accy.dot_general %q, %k {lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 2>} : tensor<2x5x8xf32>, tensor<2x7x8xf32> -> tensor<2x5x7xf32>
// CHECK-NEXT:    %[[SC0:.*]] = accy.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT:    %[[SC:.*]] = accy.broadcast %[[SC0]] {dims = array<i64>} : tensor<f32> -> tensor<2x5x7xf32>
// CHECK-NEXT:    %[[X:.*]] = accy.mul %[[S]], %[[SC]] : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[M:.*]] = accy.reduce %[[X]] {kind = "max", axes = array<i64: 2>} : tensor<2x5x7xf32> -> tensor<2x5xf32>
// CHECK-NEXT:    %[[MB:.*]] = accy.broadcast %[[M]] {dims = array<i64: 0, 1>} : tensor<2x5xf32> -> tensor<2x5x7xf32>
// CHECK-NEXT:    %[[D:.*]] = accy.sub %[[X]], %[[MB]] : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[E:.*]] = accy.exp %[[D]] : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[SUM:.*]] = accy.reduce %[[E]] {kind = "sum", axes = array<i64: 2>} : tensor<2x5x7xf32> -> tensor<2x5xf32>
// CHECK-NEXT:    %[[SUMB:.*]] = accy.broadcast %[[SUM]] {dims = array<i64: 0, 1>} : tensor<2x5xf32> -> tensor<2x5x7xf32>
// CHECK-NEXT:    %[[P:.*]] = accy.div %[[E]], %[[SUMB]] : tensor<2x5x7xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.dot_general %[[P]], %v {lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>} : tensor<2x5x7xf32>, tensor<2x7x4xf32> -> tensor<2x5x4xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<2x5x4xf32>
func.func @attention(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x4xf32>) -> tensor<2x5x4xf32> {
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.125 : f32, causal = false}> : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %0 : tensor<2x5x4xf32>
}

// Causal: scores where key index > query index take the lowest finite f32
// (key 0 is never masked, so no row is all masked). Scalars are rank-0
// literals broadcast, so they cost one element at any size.
// CHECK-LABEL: func.func @causal
// CHECK-SAME:    (%q: tensor<3x2xf32>, %k: tensor<4x2xf32>, %v: tensor<4x2xf32>)
// CHECK-NEXT:    %[[S:.*]] = accy.dot_general %q, %k {lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 1>} : tensor<3x2xf32>, tensor<4x2xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[SC0:.*]] = accy.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %[[SC:.*]] = accy.broadcast %[[SC0]] {dims = array<i64>} : tensor<f32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[X:.*]] = accy.mul %[[S]], %[[SC]] : tensor<3x4xf32>
// CHECK-NEXT:    %[[KI:.*]] = accy.constant dense<[0, 1, 2, 3]> : tensor<4xi32>
// CHECK-NEXT:    %[[KB:.*]] = accy.broadcast %[[KI]] {dims = array<i64: 1>} : tensor<4xi32> -> tensor<3x4xi32>
// CHECK-NEXT:    %[[QI:.*]] = accy.constant dense<[0, 1, 2]> : tensor<3xi32>
// CHECK-NEXT:    %[[QB:.*]] = accy.broadcast %[[QI]] {dims = array<i64: 0>} : tensor<3xi32> -> tensor<3x4xi32>
// CHECK-NEXT:    %[[MASK:.*]] = accy.cmp "gt", %[[KB]], %[[QB]] : tensor<3x4xi32> -> tensor<3x4xi1>
// CHECK-NEXT:    %[[LOW0:.*]] = accy.constant dense<-3.40282347e+38> : tensor<f32>
// CHECK-NEXT:    %[[LOW:.*]] = accy.broadcast %[[LOW0]] {dims = array<i64>} : tensor<f32> -> tensor<3x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = accy.select %[[MASK]], %[[LOW]], %[[X]] : tensor<3x4xi1>, tensor<3x4xf32>
// CHECK-NEXT:    %{{.*}} = accy.reduce %[[Y]] {kind = "max", axes = array<i64: 1>}
// CHECK:         accy.dot_general %{{.*}}, %v {lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>} : tensor<3x4xf32>, tensor<4x2xf32> -> tensor<3x2xf32>
// CHECK-NEXT:    func.return
func.func @causal(%q: tensor<3x2xf32>, %k: tensor<4x2xf32>, %v: tensor<4x2xf32>) -> tensor<3x2xf32> {
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.5 : f32, causal = true}> : (tensor<3x2xf32>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}
