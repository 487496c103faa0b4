// RUN: accy-opt %s -p widen-accumulation | filecheck %s

// A float16 dot, sum and scan run in float32 between casts (their kernels
// then accumulate in f32, as the reference does); a max reduction, a max
// scan and float32 ops are left as they are.
func.func @main(%a: tensor<9x65xf16>, %b: tensor<65x3xf16>, %c: tensor<7x300xf32>) -> (tensor<9x3xf16>, tensor<9xf16>, tensor<9x65xf16>, tensor<9xf16>, tensor<9x65xf16>, tensor<7xf32>) {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<9x65xf16>, tensor<65x3xf16>) -> tensor<9x3xf16>
  %s = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 1>}> : (tensor<9x65xf16>) -> tensor<9xf16>
  %p = "accy.scan"(%a) <{kind = "sum", axis = 1 : i64}> : (tensor<9x65xf16>) -> tensor<9x65xf16>
  %m = "accy.reduce"(%a) <{kind = "max", axes = array<i64: 1>}> : (tensor<9x65xf16>) -> tensor<9xf16>
  %q = "accy.scan"(%a) <{kind = "max", axis = 1 : i64}> : (tensor<9x65xf16>) -> tensor<9x65xf16>
  %f = "accy.reduce"(%c) <{kind = "sum", axes = array<i64: 1>}> : (tensor<7x300xf32>) -> tensor<7xf32>
  func.return %d, %s, %p, %m, %q, %f : tensor<9x3xf16>, tensor<9xf16>, tensor<9x65xf16>, tensor<9xf16>, tensor<9x65xf16>, tensor<7xf32>
}

// CHECK-LABEL: func.func @main
// CHECK:       %[[A:.*]] = accy.cast %a : tensor<9x65xf16> -> tensor<9x65xf32>
// CHECK-NEXT:  %[[B:.*]] = accy.cast %b : tensor<65x3xf16> -> tensor<65x3xf32>
// CHECK-NEXT:  %[[D:.*]] = accy.dot_general %[[A]], %[[B]] {{.*}} -> tensor<9x3xf32>
// CHECK-NEXT:  %[[DH:.*]] = accy.cast %[[D]] : tensor<9x3xf32> -> tensor<9x3xf16>
// CHECK-NEXT:  %[[SA:.*]] = accy.cast %a : tensor<9x65xf16> -> tensor<9x65xf32>
// CHECK-NEXT:  %[[S:.*]] = accy.reduce %[[SA]] {kind = "sum"{{.*}} -> tensor<9xf32>
// CHECK-NEXT:  %[[SH:.*]] = accy.cast %[[S]] : tensor<9xf32> -> tensor<9xf16>
// CHECK-NEXT:  %[[PA:.*]] = accy.cast %a : tensor<9x65xf16> -> tensor<9x65xf32>
// CHECK-NEXT:  %[[P:.*]] = accy.scan %[[PA]] {kind = "sum"{{.*}} : tensor<9x65xf32>
// CHECK-NEXT:  %[[PH:.*]] = accy.cast %[[P]] : tensor<9x65xf32> -> tensor<9x65xf16>
// CHECK-NEXT:  %[[M:.*]] = accy.reduce %a {kind = "max"{{.*}} -> tensor<9xf16>
// CHECK-NEXT:  %[[Q:.*]] = accy.scan %a {kind = "max"{{.*}} : tensor<9x65xf16>
// CHECK-NEXT:  %[[F:.*]] = accy.reduce %c {{.*}} -> tensor<7xf32>
// CHECK-NEXT:  func.return %[[DH]], %[[SH]], %[[PH]], %[[M]], %[[Q]], %[[F]]
