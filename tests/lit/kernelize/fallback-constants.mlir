// RUN: accy-opt %s -p kernelize 2>&1 | filecheck %s

// A host fallback reading constants: a splat (its buffer holds ONE element,
// read with strides 0) and a dense literal through a view. Each is cloned
// into the fallback's region; only whole buffers are its inputs. (The
// target computes no float16, so the float16 work item falls back.)
builtin.module attributes {accy.target = #accy.target<fp16 = false>} {
  func.func @main(%x: tensor<3x5xf16>) -> tensor<3x5xf16> {
    %c = "accy.constant"() <{value = dense<0.5> : tensor<3x5xf16>}> : () -> tensor<3x5xf16>
    %r = "accy.constant"() <{value = dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf16>}> : () -> tensor<5xf16>
    %b = "accy.broadcast"(%r) <{dims = array<i64: 1>}> : (tensor<5xf16>) -> tensor<3x5xf16>
    %s = "accy.add"(%c, %b) : (tensor<3x5xf16>, tensor<3x5xf16>) -> tensor<3x5xf16>
    %t = "accy.mul"(%s, %x) : (tensor<3x5xf16>, tensor<3x5xf16>) -> tensor<3x5xf16>
    func.return %t : tensor<3x5xf16>
  }
}

// CHECK: remark: kernel main_k0_elementwise (elementwise) runs on the host reference path: float16 needs
// CHECK-NOT: accy_host.constant
// CHECK: accy_host.fallback "main_k0_elementwise" ins(%{{.*}} : memref<15xf16>) outs(%{{.*}} : memref<15xf16>)
// CHECK-NEXT: ^{{.*}}(%[[X:.*]]: tensor<3x5xf16>):
// CHECK-DAG: %[[R:.*]] = accy.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00]> : tensor<5xf16>
// CHECK-DAG: %[[C:.*]] = accy.constant dense<5.000000e-01> : tensor<3x5xf16>
// CHECK: %[[B:.*]] = accy.broadcast %[[R]]
// CHECK: %[[S:.*]] = accy.add %[[C]], %[[B]]
// CHECK: accy.mul %[[S]], %[[X]]
// CHECK: accy_host.yield
