// RUN: accy-opt %s -p loop-invariant-code-motion | filecheck %s

// Work that reads no carried value leaves the loop, in body order and
// innermost loops first: x·Wᵀ (invariant in both loops) ends up before the
// outer one, the view and the exp with it; what reads a carried value stays.
func.func @main(%h0: tensor<4x4xf32>, %w: tensor<4x4xf32>, %x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %h = "accy.iterate"(%h0) <{count = 3 : i64}> ({
  ^bb0(%hi: tensor<4x4xf32>):
    %wt = "accy.transpose"(%w) <{permutation = array<i64: 1, 0>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %xe = "accy.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %g = "accy.iterate"(%hi) <{count = 2 : i64}> ({
    ^bb1(%gi: tensor<4x4xf32>):
      %xw = "accy.dot_general"(%xe, %wt) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      %s = "accy.add"(%gi, %xw) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      "accy.yield"(%s) : (tensor<4x4xf32>) -> ()
    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %0 = "accy.dot_general"(%g, %wt) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    "accy.yield"(%0) : (tensor<4x4xf32>) -> ()
  }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %h : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[WT:.*]] = accy.transpose %w
// CHECK-NEXT:    %[[XE:.*]] = accy.exp %x
// CHECK-NEXT:    %[[XW:.*]] = accy.dot_general %[[XE]], %[[WT]]
// CHECK-NEXT:    "accy.iterate"(%h0)
// CHECK-NEXT:    ^{{.*}}(%[[HI:.*]]: tensor<4x4xf32>):
// CHECK-NEXT:      "accy.iterate"(%[[HI]])
// CHECK-NEXT:      ^{{.*}}(%[[GI:.*]]: tensor<4x4xf32>):
// CHECK-NEXT:        accy.add %[[GI]], %[[XW]]
// CHECK-NEXT:        accy.yield
// CHECK-NEXT:      })
// CHECK-NEXT:      accy.dot_general %{{.*}}, %[[WT]]
// CHECK-NEXT:      accy.yield

// Nothing to move: the pass leaves the IR as it was.
func.func @carried(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<3xf32>):
    %t = "accy.tanh"(%a) : (tensor<3xf32>) -> tensor<3xf32>
    "accy.yield"(%t) : (tensor<3xf32>) -> ()
  }) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}

// CHECK-LABEL: func.func @carried
// CHECK-NEXT:    "accy.iterate"(%x)
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: tensor<3xf32>):
// CHECK-NEXT:      accy.tanh %[[A]]
