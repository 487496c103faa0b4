// RUN: accy-opt %s -p 'print-analysis{analysis=schedule}' | filecheck %s

// matmul + bias + relu: ONE dot_general kernel with its epilogue.
// CHECK-LABEL: schedule @matmul_bias_relu: 1 work items
// CHECK-NEXT:  item 0 dot_general: accy.dot_general, accy.broadcast, accy.add, accy.relu (anchor accy.dot_general -> %y)
func.func @matmul_bias_relu(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %y = "accy.dot_general"(%x, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %bb = "accy.broadcast"(%b) <{dims = array<i64: 1>}> : (tensor<32xf32>) -> tensor<8x32xf32>
  %z = "accy.add"(%y, %bb) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = "accy.relu"(%z) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %r : tensor<8x32xf32>
}

// A transformer MLP block: layer norm, two matmuls with bias, gelu, and a
// residual add. The first bias+gelu and the second bias+residual are
// epilogues; the layer norm is one row pipeline; the weight transpose is a
// view.
// CHECK-LABEL: schedule @mlp_block: 3 work items
// CHECK-NEXT:  item 0 row_pipeline: accy.layer_norm (anchor accy.layer_norm -> %ln)
// CHECK-NEXT:  item 1 dot_general: accy.dot_general, accy.broadcast, accy.add, accy.gelu (anchor accy.dot_general -> %h)
// CHECK-NEXT:  item 2 dot_general: accy.transpose, accy.dot_general, accy.broadcast, accy.add, accy.add (anchor accy.dot_general -> %o)
func.func @mlp_block(%x: tensor<3x17x8xf32>, %g: tensor<8xf32>, %be: tensor<8xf32>, %w1: tensor<8x32xf32>, %b1: tensor<32xf32>, %w2t: tensor<8x32xf32>, %b2: tensor<8xf32>) -> tensor<3x17x8xf32> {
  %ln = "accy.layer_norm"(%x, %g, %be) <{epsilon = 1.0e-05 : f32}> : (tensor<3x17x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x17x8xf32>
  %h = "accy.dot_general"(%ln, %w1) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 0>}> : (tensor<3x17x8xf32>, tensor<8x32xf32>) -> tensor<3x17x32xf32>
  %b1b = "accy.broadcast"(%b1) <{dims = array<i64: 2>}> : (tensor<32xf32>) -> tensor<3x17x32xf32>
  %hb = "accy.add"(%h, %b1b) : (tensor<3x17x32xf32>, tensor<3x17x32xf32>) -> tensor<3x17x32xf32>
  %a = "accy.gelu"(%hb) : (tensor<3x17x32xf32>) -> tensor<3x17x32xf32>
  %w2 = "accy.transpose"(%w2t) <{permutation = array<i64: 1, 0>}> : (tensor<8x32xf32>) -> tensor<32x8xf32>
  %o = "accy.dot_general"(%a, %w2) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 0>}> : (tensor<3x17x32xf32>, tensor<32x8xf32>) -> tensor<3x17x8xf32>
  %b2b = "accy.broadcast"(%b2) <{dims = array<i64: 2>}> : (tensor<8xf32>) -> tensor<3x17x8xf32>
  %ob = "accy.add"(%o, %b2b) : (tensor<3x17x8xf32>, tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  %res = "accy.add"(%ob, %x) : (tensor<3x17x8xf32>, tensor<3x17x8xf32>) -> tensor<3x17x8xf32>
  func.return %res : tensor<3x17x8xf32>
}

// A chain of ten elementwise ops is ONE kernel, with a view of an input
// and an intermediate value that is also returned.
// CHECK-LABEL: schedule @chain10: 1 work items
// CHECK-NEXT:  item 0 elementwise: accy.exp, accy.add, accy.mul, accy.tanh, accy.sub, accy.neg, accy.abs, accy.transpose, accy.max, accy.sqrt, accy.sigmoid
func.func @chain10(%x: tensor<17x3xf32>, %y: tensor<17x3xf32>, %z: tensor<3x17xf32>) -> (tensor<17x3xf32>, tensor<17x3xf32>) {
  %0 = "accy.exp"(%x) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  %1 = "accy.add"(%0, %y) : (tensor<17x3xf32>, tensor<17x3xf32>) -> tensor<17x3xf32>
  %2 = "accy.mul"(%1, %1) : (tensor<17x3xf32>, tensor<17x3xf32>) -> tensor<17x3xf32>
  %3 = "accy.tanh"(%2) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  %4 = "accy.sub"(%3, %x) : (tensor<17x3xf32>, tensor<17x3xf32>) -> tensor<17x3xf32>
  %5 = "accy.neg"(%4) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  %6 = "accy.abs"(%5) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  %zt = "accy.transpose"(%z) <{permutation = array<i64: 1, 0>}> : (tensor<3x17xf32>) -> tensor<17x3xf32>
  %7 = "accy.max"(%6, %zt) : (tensor<17x3xf32>, tensor<17x3xf32>) -> tensor<17x3xf32>
  %8 = "accy.sqrt"(%7) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  %9 = "accy.sigmoid"(%8) : (tensor<17x3xf32>) -> tensor<17x3xf32>
  func.return %9, %3 : tensor<17x3xf32>, tensor<17x3xf32>
}

// Scans take an elementwise prologue (read once) and epilogue.
// CHECK-LABEL: schedule @scan_prologue: 1 work items
// CHECK-NEXT:  item 0 scan: accy.exp, accy.mul, accy.scan, accy.log (anchor accy.scan -> %s)
func.func @scan_prologue(%x: tensor<16x33xf32>, %w: tensor<16x33xf32>) -> tensor<16x33xf32> {
  %e = "accy.exp"(%x) : (tensor<16x33xf32>) -> tensor<16x33xf32>
  %m = "accy.mul"(%e, %w) : (tensor<16x33xf32>, tensor<16x33xf32>) -> tensor<16x33xf32>
  %s = "accy.scan"(%m) <{kind = "sum", axis = 1 : i64, exclusive = true}> : (tensor<16x33xf32>) -> tensor<16x33xf32>
  %l = "accy.log"(%s) : (tensor<16x33xf32>) -> tensor<16x33xf32>
  func.return %l : tensor<16x33xf32>
}

// Shared values: x*x (elementwise on an input) is recomputed in both
// reductions; the matmul result is stored once and read by both.
// CHECK-LABEL: schedule @shared_cheap: 2 work items
// CHECK-NEXT:  item 0 reduction: accy.mul, accy.reduce (anchor accy.reduce -> %a)
// CHECK-NEXT:  item 1 reduction: accy.mul, accy.transpose, accy.reduce (anchor accy.reduce -> %b)
func.func @shared_cheap(%x: tensor<8x4xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %t = "accy.mul"(%x, %x) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %a = "accy.reduce"(%t) <{kind = "sum", axes = array<i64: 1>}> : (tensor<8x4xf32>) -> tensor<8xf32>
  %tt = "accy.transpose"(%t) <{permutation = array<i64: 1, 0>}> : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %b = "accy.reduce"(%tt) <{kind = "max", axes = array<i64: 0>}> : (tensor<4x8xf32>) -> tensor<8xf32>
  func.return %a, %b : tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: schedule @shared_stored: 3 work items
// CHECK-NEXT:  item 0 dot_general: accy.dot_general (anchor accy.dot_general -> %h)
// CHECK-NEXT:  item 1 reduction: accy.reduce (anchor accy.reduce -> %a)
// CHECK-NEXT:  item 2 scan: accy.scan (anchor accy.scan -> %b)
func.func @shared_stored(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> (tensor<8xf32>, tensor<8x4xf32>) {
  %h = "accy.dot_general"(%x, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %a = "accy.reduce"(%h) <{kind = "sum", axes = array<i64: 1>}> : (tensor<8x4xf32>) -> tensor<8xf32>
  %b = "accy.scan"(%h) <{kind = "max", axis = 0 : i64}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %a, %b : tensor<8xf32>, tensor<8x4xf32>
}

// Shape ops that feed kernels are views (index math), never kernels; a
// returned view is copied; concat is a shape kernel; dead ops make none.
// CHECK-LABEL: schedule @views: 3 work items
// CHECK-NEXT:  item 0 shape: accy.transpose
// CHECK-NEXT:  item 1 elementwise: accy.transpose, accy.slice, accy.reshape, accy.add
// CHECK-NEXT:  item 2 shape: accy.concat (anchor accy.concat -> %c)
func.func @views(%x: tensor<6x8xf32>, %y: tensor<4x6xf32>, %u: tensor<2x6xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>, tensor<6x6xf32>) {
  %dead = "accy.exp"(%x) : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %t = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %s = "accy.slice"(%t) <{start = array<i64: 2, 0>, limit = array<i64: 6, 6>, stride = array<i64: 1, 1>}> : (tensor<8x6xf32>) -> tensor<4x6xf32>
  %yr = "accy.reshape"(%y) : (tensor<4x6xf32>) -> tensor<4x6xf32>
  %a = "accy.add"(%s, %yr) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  %c = "accy.concat"(%a, %u) <{axis = 0 : i64}> : (tensor<4x6xf32>, tensor<2x6xf32>) -> tensor<6x6xf32>
  func.return %a, %t, %c : tensor<4x6xf32>, tensor<8x6xf32>, tensor<6x6xf32>
}

// A returned view of computed values is copied by the kernel computing it.
// CHECK-LABEL: schedule @returned_view: 1 work items
// CHECK-NEXT:  item 0 elementwise: accy.exp, accy.transpose
func.func @returned_view(%x: tensor<6x8xf32>) -> tensor<8x6xf32> {
  %e = "accy.exp"(%x) : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %t = "accy.transpose"(%e) <{permutation = array<i64: 1, 0>}> : (tensor<6x8xf32>) -> tensor<8x6xf32>
  func.return %t : tensor<8x6xf32>
}

// iterate and kernel_call are one item each; their bodies are not fused.
// CHECK-LABEL: schedule @iterate: 3 work items
// CHECK-NEXT:  item 0 elementwise: accy.exp
// CHECK-NEXT:  item 1 iterate: accy.iterate (anchor accy.iterate -> %r)
// CHECK-NEXT:  item 2 kernel_call: accy.kernel_call (anchor accy.kernel_call -> %kc)
func.func @iterate(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %r = "accy.iterate"(%e) <{count = 3 : i64}> ({
  ^bb0(%c: tensor<4xf32>):
    %n = "accy.add"(%c, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%n) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  %kc = "accy.kernel_call"(%r) <{callee = @kernels::@double}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %kc : tensor<4xf32>
}

// q scaled before q·kᵀ is a prologue of the flash kernel; the residual add an epilogue.
// CHECK-LABEL: schedule @qscaled: 1 work items
// CHECK-NEXT:  item 0 flash_attention: accy.mul, accy.dot_general, accy.softmax, accy.dot_general, accy.add (anchor accy.dot_general -> %o)
func.func @qscaled(%q: tensor<2x64x16xf32>, %k: tensor<2x64x16xf32>, %v: tensor<2x64x16xf32>) -> tensor<2x64x16xf32> {
  %c = "accy.constant"() <{value = dense<0.25> : tensor<2x64x16xf32>}> : () -> tensor<2x64x16xf32>
  %qs = "accy.mul"(%q, %c) : (tensor<2x64x16xf32>, tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %s = "accy.dot_general"(%qs, %k) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 2>}> : (tensor<2x64x16xf32>, tensor<2x64x16xf32>) -> tensor<2x64x64xf32>
  %p = "accy.softmax"(%s) <{axis = 2 : i64}> : (tensor<2x64x64xf32>) -> tensor<2x64x64xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<2x64x64xf32>, tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  %r = "accy.add"(%o, %q) : (tensor<2x64x16xf32>, tensor<2x64x16xf32>) -> tensor<2x64x16xf32>
  func.return %r : tensor<2x64x16xf32>
}

// A tanh-form gelu written with primitives is an epilogue of the matmul.
// CHECK-LABEL: schedule @gelu_tanh: 1 work items
// CHECK-NEXT:  item 0 dot_general: accy.dot_general, accy.mul, accy.mul, accy.mul, accy.add, accy.tanh, accy.add, accy.mul, accy.mul (anchor accy.dot_general -> %y)
func.func @gelu_tanh(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = "accy.dot_general"(%x, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %half = "accy.constant"() <{value = dense<0.5> : tensor<8x32xf32>}> : () -> tensor<8x32xf32>
  %one = "accy.constant"() <{value = dense<1.0> : tensor<8x32xf32>}> : () -> tensor<8x32xf32>
  %c = "accy.constant"() <{value = dense<0.044715> : tensor<8x32xf32>}> : () -> tensor<8x32xf32>
  %y2 = "accy.mul"(%y, %y) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %y3 = "accy.mul"(%y2, %y) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %t = "accy.mul"(%y3, %c) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %u = "accy.add"(%y, %t) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %th = "accy.tanh"(%u) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %a = "accy.add"(%one, %th) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %b = "accy.mul"(%a, %half) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %g = "accy.mul"(%b, %y) : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %g : tensor<8x32xf32>
}

// The custom kernel that accy.kernel_call names: the input's buffer, then the output's.
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>, %out: memref<4xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "double"} : () -> ()
}) : () -> ()
