// RUN: accy-opt %s -p 'print-analysis{analysis=schedule}' | filecheck %s

// softmax, log_softmax and layer_norm are each ONE row_pipeline kernel,
// whether written as the named op or with primitives, with their prologue
// and epilogue.

// CHECK-LABEL: schedule @softmax_named: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.softmax (anchor accy.softmax -> %y)
func.func @softmax_named(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %y = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<64x128xf32>) -> tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}

// CHECK-LABEL: schedule @softmax_prims: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.reduce, accy.broadcast, accy.sub, accy.exp, accy.reduce, accy.broadcast, accy.div (anchor accy.reduce -> %m)
func.func @softmax_prims(%x: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<64x128xf32>) -> tensor<64xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<64xf32>) -> tensor<64x128xf32>
  %d = "accy.sub"(%x, %mb) : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %e = "accy.exp"(%d) : (tensor<64x128xf32>) -> tensor<64x128xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<64x128xf32>) -> tensor<64xf32>
  %sb = "accy.broadcast"(%s) <{dims = array<i64: 0>}> : (tensor<64xf32>) -> tensor<64x128xf32>
  %y = "accy.div"(%e, %sb) : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  func.return %y : tensor<64x128xf32>
}

// Keep-dims style (reshape to [R, 1] then broadcast), a rank-3 input, an
// elementwise prologue and epilogue: still one kernel.
// CHECK-LABEL: schedule @softmax_keepdims: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.mul, accy.reduce, accy.reshape, accy.broadcast, accy.sub, accy.exp, accy.reduce, accy.reshape, accy.broadcast, accy.div, accy.add (anchor accy.reduce -> %m)
func.func @softmax_keepdims(%x: tensor<2x3x17xf32>, %r: tensor<2x3x17xf32>) -> tensor<2x3x17xf32> {
  %x2 = "accy.mul"(%x, %x) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  %m = "accy.reduce"(%x2) <{kind = "max", axes = array<i64: -1>}> : (tensor<2x3x17xf32>) -> tensor<2x3xf32>
  %m1 = "accy.reshape"(%m) : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  %mb = "accy.broadcast"(%m1) <{dims = array<i64: 0, 1, 2>}> : (tensor<2x3x1xf32>) -> tensor<2x3x17xf32>
  %d = "accy.sub"(%x2, %mb) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  %e = "accy.exp"(%d) : (tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 2>}> : (tensor<2x3x17xf32>) -> tensor<2x3xf32>
  %s1 = "accy.reshape"(%s) : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  %sb = "accy.broadcast"(%s1) <{dims = array<i64: 0, 1, 2>}> : (tensor<2x3x1xf32>) -> tensor<2x3x17xf32>
  %y = "accy.div"(%e, %sb) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  %z = "accy.add"(%y, %r) : (tensor<2x3x17xf32>, tensor<2x3x17xf32>) -> tensor<2x3x17xf32>
  func.return %z : tensor<2x3x17xf32>
}

// CHECK-LABEL: schedule @log_softmax_named: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.log_softmax, accy.neg (anchor accy.log_softmax -> %y)
func.func @log_softmax_named(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %y = "accy.log_softmax"(%x) <{axis = 1 : i64}> : (tensor<5x3xf32>) -> tensor<5x3xf32>
  %n = "accy.neg"(%y) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %n : tensor<5x3xf32>
}

// CHECK-LABEL: schedule @log_softmax_prims: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.reduce, accy.broadcast, accy.sub, accy.exp, accy.reduce, accy.log, accy.broadcast, accy.sub (anchor accy.reduce -> %m)
func.func @log_softmax_prims(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  %m = "accy.reduce"(%x) <{kind = "max", axes = array<i64: 1>}> : (tensor<5x3xf32>) -> tensor<5xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 0>}> : (tensor<5xf32>) -> tensor<5x3xf32>
  %d = "accy.sub"(%x, %mb) : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %e = "accy.exp"(%d) : (tensor<5x3xf32>) -> tensor<5x3xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<5x3xf32>) -> tensor<5xf32>
  %l = "accy.log"(%s) : (tensor<5xf32>) -> tensor<5xf32>
  %lb = "accy.broadcast"(%l) <{dims = array<i64: 0>}> : (tensor<5xf32>) -> tensor<5x3xf32>
  %y = "accy.sub"(%d, %lb) : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %y : tensor<5x3xf32>
}

// CHECK-LABEL: schedule @layer_norm_named: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.layer_norm (anchor accy.layer_norm -> %y)
func.func @layer_norm_named(%x: tensor<4x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x8x32xf32> {
  %y = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<4x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<4x8x32xf32>
  func.return %y : tensor<4x8x32xf32>
}

// CHECK-LABEL: schedule @layer_norm_prims: 1 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.reduce, accy.broadcast, accy.sub, accy.mul, accy.reduce, accy.broadcast, accy.add, accy.rsqrt, accy.reshape, accy.broadcast, accy.mul, accy.broadcast, accy.broadcast, accy.mul, accy.add (anchor accy.reduce -> %mean)
func.func @layer_norm_prims(%x: tensor<4x8x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x8x32xf32> {
  %mean = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 2>}> : (tensor<4x8x32xf32>) -> tensor<4x8xf32>
  %mb = "accy.broadcast"(%mean) <{dims = array<i64: 0, 1>}> : (tensor<4x8xf32>) -> tensor<4x8x32xf32>
  %xc = "accy.sub"(%x, %mb) : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %sq = "accy.mul"(%xc, %xc) : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %var = "accy.reduce"(%sq) <{kind = "mean", axes = array<i64: 2>}> : (tensor<4x8x32xf32>) -> tensor<4x8xf32>
  %eps = "accy.constant"() <{value = dense<1.0e-05> : tensor<f32>}> : () -> tensor<f32>
  %epsb = "accy.broadcast"(%eps) <{dims = array<i64>}> : (tensor<f32>) -> tensor<4x8xf32>
  %ve = "accy.add"(%var, %epsb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = "accy.rsqrt"(%ve) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r1 = "accy.reshape"(%r) : (tensor<4x8xf32>) -> tensor<4x8x1xf32>
  %rb = "accy.broadcast"(%r1) <{dims = array<i64: 0, 1, 2>}> : (tensor<4x8x1xf32>) -> tensor<4x8x32xf32>
  %n = "accy.mul"(%xc, %rb) : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %gb = "accy.broadcast"(%g) <{dims = array<i64: 2>}> : (tensor<32xf32>) -> tensor<4x8x32xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 2>}> : (tensor<32xf32>) -> tensor<4x8x32xf32>
  %ng = "accy.mul"(%n, %gb) : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %y = "accy.add"(%ng, %bb) : (tensor<4x8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  func.return %y : tensor<4x8x32xf32>
}

// A row sum that is not broadcast back is a plain reduction, with its
// prologue and epilogue fused.
// CHECK-LABEL: schedule @row_sum: 1 work items
// CHECK-NEXT:  item 0 reduction: accy.exp, accy.reduce, accy.log (anchor accy.reduce -> %s)
func.func @row_sum(%x: tensor<7x9xf32>) -> tensor<7xf32> {
  %e = "accy.exp"(%x) : (tensor<7x9xf32>) -> tensor<7x9xf32>
  %s = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<7x9xf32>) -> tensor<7xf32>
  %l = "accy.log"(%s) : (tensor<7xf32>) -> tensor<7xf32>
  func.return %l : tensor<7xf32>
}

// A reduction over the outer axis broadcast back is not a row pipeline:
// the reduction and the elementwise work are two kernels.
// CHECK-LABEL: schedule @col_center: 2 work items
// CHECK-NEXT:  item 0 reduction: accy.reduce (anchor accy.reduce -> %m)
// CHECK-NEXT:  item 1 elementwise: accy.broadcast, accy.sub
func.func @col_center(%x: tensor<7x9xf32>) -> tensor<7x9xf32> {
  %m = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 0>}> : (tensor<7x9xf32>) -> tensor<9xf32>
  %mb = "accy.broadcast"(%m) <{dims = array<i64: 1>}> : (tensor<9xf32>) -> tensor<7x9xf32>
  %y = "accy.sub"(%x, %mb) : (tensor<7x9xf32>, tensor<7x9xf32>) -> tensor<7x9xf32>
  func.return %y : tensor<7x9xf32>
}
