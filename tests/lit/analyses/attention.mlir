// RUN: accy-opt %s -p 'print-analysis{analysis=schedule},print-analysis{analysis=bufferization}' | filecheck %s

// Attention over B=1, H=8, S=1024, D=64 is ONE flash_attention kernel, named
// or written with primitives, causal or not, and its plan never holds an
// S×S buffer: the peak is q, k, v and the output (8388608 bytes, 1048576 a
// head, below S·S·4 = 4194304), plus the mask and splat constants it reads.

// CHECK-LABEL: schedule @named: 1 work items
// CHECK-NEXT:  item 0 flash_attention: accy.attention (anchor accy.attention -> %o)
// CHECK-LABEL: schedule @named_causal: 1 work items
// CHECK-NEXT:  item 0 flash_attention: accy.attention (anchor accy.attention -> %o)
// CHECK-LABEL: schedule @prims: 1 work items
// CHECK-NEXT:  item 0 flash_attention: accy.dot_general, accy.broadcast, accy.mul, accy.neg, accy.reduce, accy.broadcast, accy.sub, accy.exp, accy.reduce, accy.broadcast, accy.div, accy.dot_general (anchor accy.dot_general -> %o)
// CHECK-LABEL: schedule @prims_causal: 1 work items
// CHECK-NEXT:  item 0 flash_attention: accy.transpose, accy.dot_general, accy.broadcast, accy.mul, accy.broadcast, accy.select, accy.reduce, accy.broadcast, accy.sub, accy.exp, accy.reduce, accy.broadcast, accy.div, accy.dot_general (anchor accy.dot_general -> %o)

// CHECK-LABEL: bufferization @named: 4 buffers, peak 8388608 bytes
// CHECK-LABEL: bufferization @named_causal: 4 buffers, peak 8388608 bytes
// CHECK-LABEL: bufferization @prims: 5 buffers, peak 8388612 bytes
// The i1 mask (S·S bytes) is an argument; -inf is a splat: one element.
// CHECK-LABEL: bufferization @prims_causal: 7 buffers, peak 9437192 bytes
// CHECK-NOT:   4194304 bytes

func.func @named(%q: tensor<1x8x1024x64xf32>, %k: tensor<1x8x1024x64xf32>, %v: tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.125 : f32, causal = false}> : (tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32>
  func.return %o : tensor<1x8x1024x64xf32>
}

func.func @named_causal(%q: tensor<1x8x1024x64xf32>, %k: tensor<1x8x1024x64xf32>, %v: tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32> {
  %o = "accy.attention"(%q, %k, %v) <{scale = 0.125 : f32, causal = true}> : (tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32>
  func.return %o : tensor<1x8x1024x64xf32>
}

func.func @prims(%q: tensor<1x8x1024x64xf32>, %k: tensor<1x8x1024x64xf32>, %v: tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32> {
  %s = "accy.dot_general"(%q, %k) <{lhs_batch = array<i64: 0, 1>, rhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_contract = array<i64: 3>}> : (tensor<1x8x1024x64xf32>, tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x1024xf32>
  %c = "accy.constant"() <{value = dense<0.125> : tensor<f32>}> : () -> tensor<f32>
  %cb = "accy.broadcast"(%c) <{dims = array<i64>}> : (tensor<f32>) -> tensor<1x8x1024x1024xf32>
  %ss = "accy.mul"(%s, %cb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %sm = "accy.neg"(%ss) : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %m = "accy.reduce"(%sm) <{kind = "max", axes = array<i64: 3>}> : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024xf32>
  %mbb = "accy.broadcast"(%m) <{dims = array<i64: 0, 1, 2>}> : (tensor<1x8x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %d = "accy.sub"(%sm, %mbb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %e = "accy.exp"(%d) : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %su = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 3>}> : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024xf32>
  %sb = "accy.broadcast"(%su) <{dims = array<i64: 0, 1, 2>}> : (tensor<1x8x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %p = "accy.div"(%e, %sb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64: 0, 1>, rhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_contract = array<i64: 2>}> : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32>
  func.return %o : tensor<1x8x1024x64xf32>
}

func.func @prims_causal(%q: tensor<1x8x1024x64xf32>, %k: tensor<1x8x1024x64xf32>, %v: tensor<1x8x1024x64xf32>, %mask: tensor<1024x1024xi1>) -> tensor<1x8x1024x64xf32> {
  %kt = "accy.transpose"(%k) <{permutation = array<i64: 0, 1, 3, 2>}> : (tensor<1x8x1024x64xf32>) -> tensor<1x8x64x1024xf32>
  %s = "accy.dot_general"(%q, %kt) <{lhs_batch = array<i64: 0, 1>, rhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_contract = array<i64: 2>}> : (tensor<1x8x1024x64xf32>, tensor<1x8x64x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %c = "accy.constant"() <{value = dense<0.125> : tensor<f32>}> : () -> tensor<f32>
  %cb = "accy.broadcast"(%c) <{dims = array<i64>}> : (tensor<f32>) -> tensor<1x8x1024x1024xf32>
  %ss = "accy.mul"(%s, %cb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %ninf = "accy.constant"() <{value = dense<0xFF800000> : tensor<1x8x1024x1024xf32>}> : () -> tensor<1x8x1024x1024xf32>
  %mb = "accy.broadcast"(%mask) <{dims = array<i64: 2, 3>}> : (tensor<1024x1024xi1>) -> tensor<1x8x1024x1024xi1>
  %sm = "accy.select"(%mb, %ss, %ninf) : (tensor<1x8x1024x1024xi1>, tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %m = "accy.reduce"(%sm) <{kind = "max", axes = array<i64: 3>}> : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024xf32>
  %mbb = "accy.broadcast"(%m) <{dims = array<i64: 0, 1, 2>}> : (tensor<1x8x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %d = "accy.sub"(%sm, %mbb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %e = "accy.exp"(%d) : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %su = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 3>}> : (tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024xf32>
  %sb = "accy.broadcast"(%su) <{dims = array<i64: 0, 1, 2>}> : (tensor<1x8x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %p = "accy.div"(%e, %sb) : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x1024xf32>) -> tensor<1x8x1024x1024xf32>
  %o = "accy.dot_general"(%p, %v) <{lhs_batch = array<i64: 0, 1>, rhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_contract = array<i64: 2>}> : (tensor<1x8x1024x1024xf32>, tensor<1x8x1024x64xf32>) -> tensor<1x8x1024x64xf32>
  func.return %o : tensor<1x8x1024x64xf32>
}
