// decompose{ops=...} rewrites only the listed ops; canonicalize afterwards
// keeps the decomposed form (nothing in it is an identity).
// RUN: accy-opt %s -p 'decompose{ops=layer_norm}' | filecheck %s --check-prefix=LN
// RUN: accy-opt %s -p 'decompose{ops=softmax,log_softmax},canonicalize' | filecheck %s --check-prefix=SM
// RUN: not accy-opt %s -p 'decompose{ops=gemm}' 2>&1 | filecheck %s --check-prefix=BAD

// LN-LABEL: func.func @both
// LN:         accy.softmax
// LN-NOT:     accy.layer_norm
// LN:         func.return
// SM-LABEL: func.func @both
// SM-NOT:     accy.softmax
// SM:         accy.layer_norm
// SM:         func.return
// BAD: unknown op(s) gemm (known: softmax, log_softmax, layer_norm, attention, conv, pool)
func.func @both(%x: tensor<3x17xf32>, %g: tensor<17xf32>) -> tensor<3x17xf32> {
  %0 = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %1 = "accy.layer_norm"(%0, %g, %g) <{epsilon = 1.0e-05 : f32}> : (tensor<3x17xf32>, tensor<17xf32>, tensor<17xf32>) -> tensor<3x17xf32>
  func.return %1 : tensor<3x17xf32>
}
