// Every op of the accy tensor dialect, written in the generic form: it must
// parse, print in the custom form, and re-parse to the same program; the
// generic form must round-trip too.
// RUN: accy-opt %s | accy-opt | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<3x17xf32>, %y: tensor<3x17xf32>, %i: tensor<3x17xi32>, %m: tensor<3x17xi1>) -> (tensor<3x17xf32>, tensor<3x17xi32>, tensor<3x17xi1>) {
  // CHECK-NEXT: %c = accy.constant dense<1.500000e+00> : tensor<3x17xf32>
  // GENERIC: %c = "accy.constant"() <{value = dense<1.500000e+00> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  %c = "accy.constant"() <{value = dense<1.5> : tensor<3x17xf32>}> : () -> tensor<3x17xf32>
  // CHECK-NEXT: %0 = accy.neg %x : tensor<3x17xf32>
  // GENERIC: %0 = "accy.neg"(%x) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %0 = "accy.neg"(%x) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %1 = accy.abs %0 : tensor<3x17xf32>
  %1 = "accy.abs"(%0) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %2 = accy.exp %1 : tensor<3x17xf32>
  %2 = "accy.exp"(%1) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %3 = accy.log %2 : tensor<3x17xf32>
  %3 = "accy.log"(%2) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %4 = accy.sqrt %3 : tensor<3x17xf32>
  %4 = "accy.sqrt"(%3) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %5 = accy.rsqrt %4 : tensor<3x17xf32>
  %5 = "accy.rsqrt"(%4) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %6 = accy.tanh %5 : tensor<3x17xf32>
  %6 = "accy.tanh"(%5) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %7 = accy.sigmoid %6 : tensor<3x17xf32>
  %7 = "accy.sigmoid"(%6) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %8 = accy.relu %7 : tensor<3x17xf32>
  %8 = "accy.relu"(%7) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %9 = accy.gelu %8 : tensor<3x17xf32>
  %9 = "accy.gelu"(%8) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %10 = accy.sin %9 : tensor<3x17xf32>
  %10 = "accy.sin"(%9) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %11 = accy.cos %10 : tensor<3x17xf32>
  %11 = "accy.cos"(%10) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %12 = accy.erf %11 : tensor<3x17xf32>
  %12 = "accy.erf"(%11) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %13 = accy.reciprocal %12 : tensor<3x17xf32>
  %13 = "accy.reciprocal"(%12) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %14 = accy.floor %13 : tensor<3x17xf32>
  %14 = "accy.floor"(%13) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %15 = accy.ceil %14 : tensor<3x17xf32>
  %15 = "accy.ceil"(%14) : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %16 = accy.add %15, %y : tensor<3x17xf32>
  // GENERIC: %16 = "accy.add"(%15, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  %16 = "accy.add"(%15, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %17 = accy.sub %16, %c : tensor<3x17xf32>
  %17 = "accy.sub"(%16, %c) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %18 = accy.mul %17, %y : tensor<3x17xf32>
  %18 = "accy.mul"(%17, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %19 = accy.div %18, %y : tensor<3x17xf32>
  %19 = "accy.div"(%18, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %20 = accy.max %19, %y : tensor<3x17xf32>
  %20 = "accy.max"(%19, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %21 = accy.min %20, %y : tensor<3x17xf32>
  %21 = "accy.min"(%20, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %22 = accy.pow %21, %y : tensor<3x17xf32>
  %22 = "accy.pow"(%21, %y) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %23 = accy.and %m, %m : tensor<3x17xi1>
  %23 = "accy.and"(%m, %m) : (tensor<3x17xi1>, tensor<3x17xi1>) -> tensor<3x17xi1>
  // CHECK-NEXT: %24 = accy.or %23, %m : tensor<3x17xi1>
  %24 = "accy.or"(%23, %m) : (tensor<3x17xi1>, tensor<3x17xi1>) -> tensor<3x17xi1>
  // CHECK-NEXT: %25 = accy.xor %i, %i : tensor<3x17xi32>
  %25 = "accy.xor"(%i, %i) : (tensor<3x17xi32>, tensor<3x17xi32>) -> tensor<3x17xi32>
  // CHECK-NEXT: %26 = accy.not %24 : tensor<3x17xi1>
  %26 = "accy.not"(%24) : (tensor<3x17xi1>) -> tensor<3x17xi1>
  // CHECK-NEXT: %27 = accy.cmp "lt", %22, %y : tensor<3x17xf32> -> tensor<3x17xi1>
  // GENERIC: %27 = "accy.cmp"(%22, %y) <{predicate = "lt"}> : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xi1>
  %27 = "accy.cmp"(%22, %y) <{predicate = "lt"}> : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xi1>
  // CHECK-NEXT: %28 = accy.select %27, %22, %y : tensor<3x17xi1>, tensor<3x17xf32>
  %28 = "accy.select"(%27, %22, %y) : (tensor<3x17xi1>, tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %29 = accy.cast %28 : tensor<3x17xf32> -> tensor<3x17xi32>
  %29 = "accy.cast"(%28) : (tensor<3x17xf32>) -> tensor<3x17xi32>
  // CHECK-NEXT: %30 = accy.neg %29 : tensor<3x17xi32>
  %30 = "accy.neg"(%29) : (tensor<3x17xi32>) -> tensor<3x17xi32>
  // CHECK-NEXT: func.return %28, %30, %26 : tensor<3x17xf32>, tensor<3x17xi32>, tensor<3x17xi1>
  func.return %28, %30, %26 : tensor<3x17xf32>, tensor<3x17xi32>, tensor<3x17xi1>
}

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<4xf32>) -> (tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x4xf32>, tensor<2x2x2xf32>, tensor<2x3x8xf32>) {
  // CHECK-NEXT: %0 = accy.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // GENERIC: %0 = "accy.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %0 = "accy.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %1 = accy.transpose %x {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // GENERIC: %1 = "accy.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = "accy.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %2 = accy.broadcast %y {dims = array<i64: 1>} : tensor<4xf32> -> tensor<5x4xf32>
  %2 = "accy.broadcast"(%y) <{dims = array<i64: 1>}> : (tensor<4xf32>) -> tensor<5x4xf32>
  // CHECK-NEXT: %3 = accy.slice %x {start = array<i64: 0, 1, 0>, limit = array<i64: 2, 3, 4>, stride = array<i64: 1, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x2x2xf32>
  %3 = "accy.slice"(%x) <{start = array<i64: 0, 1, 0>, limit = array<i64: 2, 3, 4>, stride = array<i64: 1, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK-NEXT: %4 = accy.concat %x, %x {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  // GENERIC: %4 = "accy.concat"(%x, %x) <{axis = 2 : i64}> : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  %4 = "accy.concat"(%x, %x) <{axis = 2 : i64}> : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x8xf32>
  func.return %0, %1, %2, %3, %4 : tensor<6x4xf32>, tensor<4x2x3xf32>, tensor<5x4xf32>, tensor<2x2x2xf32>, tensor<2x3x8xf32>
}

// CHECK-LABEL: func.func @contractions
func.func @contractions(%a: tensor<2x3x5xf32>, %b: tensor<2x5x7xf32>) -> (tensor<2x3x7xf32>, tensor<2x5xf32>, tensor<2x3x5xf32>) {
  // CHECK-NEXT: %0 = accy.dot_general %a, %b {lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>} : tensor<2x3x5xf32>, tensor<2x5x7xf32> -> tensor<2x3x7xf32>
  // GENERIC: %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<2x3x5xf32>, tensor<2x5x7xf32>) -> tensor<2x3x7xf32>
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 1>}> : (tensor<2x3x5xf32>, tensor<2x5x7xf32>) -> tensor<2x3x7xf32>
  // CHECK-NEXT: %1 = accy.reduce %a {kind = "mean", axes = array<i64: 1>} : tensor<2x3x5xf32> -> tensor<2x5xf32>
  // GENERIC: %1 = "accy.reduce"(%a) <{kind = "mean", axes = array<i64: 1>}> : (tensor<2x3x5xf32>) -> tensor<2x5xf32>
  %1 = "accy.reduce"(%a) <{kind = "mean", axes = array<i64: 1>}> : (tensor<2x3x5xf32>) -> tensor<2x5xf32>
  // CHECK-NEXT: %2 = accy.scan %a {kind = "sum", axis = 2 : i64, exclusive = true, reverse = true} : tensor<2x3x5xf32>
  // GENERIC: %2 = "accy.scan"(%a) <{kind = "sum", axis = 2 : i64, exclusive = true, reverse = true}> : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %2 = "accy.scan"(%a) <{kind = "sum", axis = 2 : i64, exclusive = true, reverse = true}> : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %0, %1, %2 : tensor<2x3x7xf32>, tensor<2x5xf32>, tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @named
func.func @named(%x: tensor<3x17xf32>, %g: tensor<17xf32>, %q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x4xf32>) -> (tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<2x5x4xf32>) {
  // CHECK-NEXT: %0 = accy.softmax %x {axis = 1 : i64} : tensor<3x17xf32>
  // GENERIC: %0 = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  %0 = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %1 = accy.log_softmax %0 {axis = -1 : i64} : tensor<3x17xf32>
  %1 = "accy.log_softmax"(%0) <{axis = -1 : i64}> : (tensor<3x17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %2 = accy.layer_norm %1, %g, %g {epsilon = 1.000000e-05 : f32} : tensor<3x17xf32>, tensor<17xf32>, tensor<17xf32> -> tensor<3x17xf32>
  // GENERIC: %2 = "accy.layer_norm"(%1, %g, %g) <{epsilon = 1.000000e-05 : f32}> : (tensor<3x17xf32>, tensor<17xf32>, tensor<17xf32>) -> tensor<3x17xf32>
  %2 = "accy.layer_norm"(%1, %g, %g) <{epsilon = 1.0e-05 : f32}> : (tensor<3x17xf32>, tensor<17xf32>, tensor<17xf32>) -> tensor<3x17xf32>
  // CHECK-NEXT: %3 = accy.attention %q, %k, %v {scale = 1.250000e-01 : f32, causal = true} : tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x4xf32> -> tensor<2x5x4xf32>
  // GENERIC: %3 = "accy.attention"(%q, %k, %v) <{scale = 1.250000e-01 : f32, causal = true}> : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  %3 = "accy.attention"(%q, %k, %v) <{scale = 0.125 : f32, causal = true}> : (tensor<2x5x8xf32>, tensor<2x7x8xf32>, tensor<2x7x4xf32>) -> tensor<2x5x4xf32>
  func.return %0, %1, %2, %3 : tensor<3x17xf32>, tensor<3x17xf32>, tensor<3x17xf32>, tensor<2x5x4xf32>
}

// CHECK-LABEL: func.func @regions
func.func @regions(%x: tensor<4xf32>, %n: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf32>) {
  // CHECK-NEXT: %0, %1 = "accy.iterate"(%x, %n) <{count = 3 : i64}> ({
  // CHECK-NEXT: ^bb0(%a: tensor<4xf32>, %b: tensor<4xi32>):
  // CHECK-NEXT:   %2 = accy.exp %a : tensor<4xf32>
  // CHECK-NEXT:   accy.yield %2, %b : tensor<4xf32>, tensor<4xi32>
  // CHECK-NEXT: }) : (tensor<4xf32>, tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>)
  // GENERIC: "accy.yield"(%2, %b) : (tensor<4xf32>, tensor<4xi32>) -> ()
  %0, %1 = "accy.iterate"(%x, %n) <{count = 3 : i64}> ({
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xi32>):
    %2 = "accy.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%2, %b) : (tensor<4xf32>, tensor<4xi32>) -> ()
  }) : (tensor<4xf32>, tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>)
  // CHECK-NEXT: %3 = accy.kernel_call @kernels::@my_kernel(%0) {global_size = array<i64: 4>, local_size = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  // GENERIC: %3 = "accy.kernel_call"(%0) <{callee = @kernels::@my_kernel, global_size = array<i64: 4>, local_size = array<i64: 1>}> : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "accy.kernel_call"(%0) <{callee = @kernels::@my_kernel, global_size = array<i64: 4>, local_size = array<i64: 1>}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %3 : tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
}

// The custom kernel that accy.kernel_call names: the input's buffer, then the output's.
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>, memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>, %out: memref<4xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "my_kernel"} : () -> ()
}) : () -> ()
