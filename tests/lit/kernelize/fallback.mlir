// RUN: accy-opt %s -p kernelize 2>&1 | filecheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: not accy-opt %s -p kernelize{strict=true} --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=STRICT
// RUN: not accy-opt %s -p set-target{math=fast},kernelize --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=STRICT

// accy.iterate has no lowering yet: it runs on the host reference path,
// between the kernels before and after it.
func.func @main(%x: tensor<4x9xf32>) -> tensor<4x9xf32> {
  %e = "accy.exp"(%x) : (tensor<4x9xf32>) -> tensor<4x9xf32>
  %h = "accy.iterate"(%e) <{count = 3 : i64}> ({
  ^bb0(%hi: tensor<4x9xf32>):
    %n = "accy.tanh"(%hi) : (tensor<4x9xf32>) -> tensor<4x9xf32>
    "accy.yield"(%n) : (tensor<4x9xf32>) -> ()
  }) : (tensor<4x9xf32>) -> tensor<4x9xf32>
  %r = "accy.mul"(%h, %x) : (tensor<4x9xf32>, tensor<4x9xf32>) -> tensor<4x9xf32>
  func.return %r : tensor<4x9xf32>
}

// CHECK: remark: kernel main_k1_iterate (iterate) runs on the host reference path
// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// CHECK: accy_host.fallback "main_k1_iterate" ins(%{{.*}} : memref<36xf32>) outs(%{{.*}} : memref<36xf32>)
// CHECK: accy.iterate
// CHECK: accy_host.yield
// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k2_elementwise

// STRICT: kernel main_k1_iterate (iterate) cannot be lowered
