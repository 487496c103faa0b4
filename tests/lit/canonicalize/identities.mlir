// Algebraic identities with splat literals, neg(neg x), select on a literal
// condition, and no-op casts.
// RUN: accy-opt %s -p canonicalize | filecheck %s

// CHECK-LABEL: func.func @neutral
// CHECK-SAME:    (%x: tensor<3x17xf32>)
// CHECK-NEXT:    func.return %x, %x, %x, %x, %x, %x : tensor<3x17xf32>
func.func @neutral(%x: tensor<3x17xf32>) -> (tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>) {
  %z = "accy.constant"() <{value = dense<0.0> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %o = "accy.constant"() <{value = dense<1.0> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %0 = "accy.add"(%x, %z) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %1 = "accy.add"(%z, %x) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %2 = "accy.sub"(%x, %z) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %3 = "accy.mul"(%x, %o) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %4 = "accy.mul"(%o, %x) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %5 = "accy.div"(%x, %o) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>
}

// CHECK-LABEL: func.func @neutral_int
// CHECK-NEXT:    func.return %i, %i : tensor<5xi32>, tensor<5xi32>
func.func @neutral_int(%i: tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>) {
  %z = "accy.constant"() <{value = dense<0> : tensor<5xi32>}> : () -> tensor<5xi32>
  %o = "accy.constant"() <{value = dense<1> : tensor<5xi32>}> : () -> tensor<5xi32>
  %0 = "accy.add"(%z, %i) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  %1 = "accy.div"(%0, %o) : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>
  func.return %0, %1 : tensor<5xi32>, tensor<5xi32>
}

// 0 - x, 1 / x, x * 0 and non-splat literals are not identities.
// CHECK-LABEL: func.func @not_neutral
// CHECK:         accy.sub %z, %x
// CHECK:         accy.div %o, %x
// CHECK:         accy.mul %x, %z
// CHECK:         accy.add %x, %r
func.func @not_neutral(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %z = "accy.constant"() <{value = dense<0.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %o = "accy.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<2xf32>
  %r = "accy.constant"() <{value = dense<[0.0, 1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
  %0 = "accy.sub"(%z, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = "accy.div"(%o, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %2 = "accy.mul"(%x, %z) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %3 = "accy.add"(%x, %r) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @double_neg
// CHECK-NEXT:    %[[N:.*]] = accy.neg %x
// CHECK-NEXT:    func.return %x, %[[N]]
func.func @double_neg(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = "accy.neg"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = "accy.neg"(%0) : (tensor<3xf32>) -> tensor<3xf32>
  %2 = "accy.neg"(%1) : (tensor<3xf32>) -> tensor<3xf32>
  %3 = "accy.neg"(%2) : (tensor<3xf32>) -> tensor<3xf32>
  %4 = "accy.neg"(%3) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %3, %4 : tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @select
// CHECK-SAME:    (%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>)
// CHECK-NEXT:    %[[S:.*]] = accy.select %c, %a, %b
// CHECK-NEXT:    func.return %a, %b, %a, %[[S]]
func.func @select(%c: tensor<3xi1>, %a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %t = "accy.constant"() <{value = dense<true> : tensor<3xi1>}> : () -> tensor<3xi1>
  %f = "accy.constant"() <{value = dense<false> : tensor<3xi1>}> : () -> tensor<3xi1>
  %0 = "accy.select"(%t, %a, %b) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "accy.select"(%f, %a, %b) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %2 = "accy.select"(%c, %a, %a) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %3 = "accy.select"(%c, %a, %b) : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @cast
// CHECK-NEXT:    %[[C:.*]] = accy.cast %x : tensor<4xf32> -> tensor<4xi32>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @cast(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = "accy.cast"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "accy.cast"(%0) : (tensor<4xf32>) -> tensor<4xi32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xi32>
}
