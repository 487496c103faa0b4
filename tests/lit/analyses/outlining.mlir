// RUN: accy-opt %s -p 'print-analysis{analysis=outlining}' | filecheck %s

// Kernels have stable names; inputs are arguments, constants and other
// kernels' outputs in first-use order (views are ops inside, never inputs);
// outputs are what later kernels read or the function returns.

// CHECK-LABEL: outlining @mlp: 2 kernels
// CHECK-NEXT:  kernel mlp_k0_dot_general: ins(%x, %w1, %b1) outs(%h)
// CHECK-NEXT:    ops: accy.dot_general, accy.broadcast, accy.add, accy.relu
// CHECK-NEXT:  kernel mlp_k1_dot_general: ins(%w2, %h, %c) outs(%o)
// CHECK-NEXT:    ops: accy.transpose, accy.dot_general, accy.broadcast, accy.mul
func.func @mlp(%x: tensor<5x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<3x32xf32>) -> tensor<5x3xf32> {
  %y = "accy.dot_general"(%x, %w1) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<5x16xf32>, tensor<16x32xf32>) -> tensor<5x32xf32>
  %bb = "accy.broadcast"(%b1) <{dims = array<i64: 1>}> : (tensor<32xf32>) -> tensor<5x32xf32>
  %z = "accy.add"(%y, %bb) : (tensor<5x32xf32>, tensor<5x32xf32>) -> tensor<5x32xf32>
  %h = "accy.relu"(%z) : (tensor<5x32xf32>) -> tensor<5x32xf32>
  %w2t = "accy.transpose"(%w2) <{permutation = array<i64: 1, 0>}> : (tensor<3x32xf32>) -> tensor<32x3xf32>
  %o0 = "accy.dot_general"(%h, %w2t) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<5x32xf32>, tensor<32x3xf32>) -> tensor<5x3xf32>
  %c = "accy.constant"() <{value = dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>}> : () -> tensor<1x3xf32>
  %cb = "accy.broadcast"(%c) <{dims = array<i64: 0, 1>}> : (tensor<1x3xf32>) -> tensor<5x3xf32>
  %o = "accy.mul"(%o0, %cb) : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %o : tensor<5x3xf32>
}

// A recomputed value (exp of an input) is an output of no kernel; the scan
// result is both returned and read by its own epilogue: one output.
// CHECK-LABEL: outlining @shared: 2 kernels
// CHECK-NEXT:  kernel shared_k0_reduction: ins(%x) outs(%s)
// CHECK-NEXT:    ops: accy.exp, accy.reduce
// CHECK-NEXT:  kernel shared_k1_scan: ins(%x, %s) outs(%sc, %d)
// CHECK-NEXT:    ops: accy.exp, accy.scan, accy.broadcast, accy.div
func.func @shared(%x: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %e = "accy.exp"(%x) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 0>}> : (tensor<4x6xf32>) -> tensor<6xf32>
  %sc = "accy.scan"(%e) <{kind = "sum", axis = 0 : i64}> : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %sb = "accy.broadcast"(%s) <{dims = array<i64: 1>}> : (tensor<6xf32>) -> tensor<4x6xf32>
  %d = "accy.div"(%sc, %sb) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %d, %sc : tensor<4x6xf32>, tensor<4x6xf32>
}

// A returned broadcast that the row pipeline also reads through is stored by
// its copy kernel alone: the pipeline only computes it as index math.
// CHECK-LABEL: outlining @returned_row_broadcast: 2 kernels
// CHECK-NEXT:  kernel returned_row_broadcast_k0_row_pipeline: ins(%x) outs(%m, %d)
// CHECK-NEXT:    ops: accy.reduce, accy.broadcast, accy.sub
// CHECK-NEXT:  kernel returned_row_broadcast_k1_shape: ins(%m) outs(%b)
// CHECK-NEXT:    ops: accy.broadcast
func.func @returned_row_broadcast(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<3x5xf32>) -> tensor<3xf32>
  %b = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x5xf32>
  %d = "accy.sub"(%x, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %b, %d : tensor<3x5xf32>, tensor<3x5xf32>
}
