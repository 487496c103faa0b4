// RUN: accy-opt %s -p kernelize 2>&1 | filecheck %s

// A host fallback reading constants: a splat (its buffer holds ONE element,
// read with strides 0) and a dense literal through a view. Each is cloned
// into the fallback's region; only whole buffers are its inputs.
func.func @main(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %c = "accy.constant"() <{value = dense<0.5> : tensor<3x5xf32>}> : () -> tensor<3x5xf32>
  %r = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>}> : () -> tensor<5xf32>
  %b = "accy.broadcast"(%r) <{dims = array<i64: 1>}> : (tensor<5xf32>) -> tensor<3x5xf32>
  %h = "accy.iterate"(%c) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<3x5xf32>):
    %s = "accy.add"(%a, %b) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    %t = "accy.mul"(%s, %x) : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
    "accy.yield"(%t) : (tensor<3x5xf32>) -> ()
  }) : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %h : tensor<3x5xf32>
}

// CHECK: remark: kernel main_k0_iterate (iterate) runs on the host reference path
// CHECK-NOT: accy_host.constant
// CHECK: accy_host.fallback "main_k0_iterate" ins(%{{.*}} : memref<15xf32>) outs(%{{.*}} : memref<15xf32>)
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<3x5xf32>):
// CHECK-DAG: %[[R:.*]] = accy.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<5xf32>
// CHECK-DAG: %[[C:.*]] = accy.constant dense<5.000000e-01> : tensor<3x5xf32>
// CHECK: %[[B:.*]] = accy.broadcast %[[R]]
// CHECK: "accy.iterate"(%[[C]])
// CHECK: accy.add %{{.*}}, %[[B]]
// CHECK: accy.mul %{{.*}}, %[[X]]
// CHECK: accy_host.yield
