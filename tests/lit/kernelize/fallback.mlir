// RUN: accy-opt %s -p kernelize 2>&1 | filecheck %s
// RUN: rm -rf %t && mkdir -p %t
// RUN: not accy-opt %s -p kernelize{strict=true} --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=STRICT
// RUN: not accy-opt %s -p set-target{math=fast},kernelize --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=STRICT

// The target computes no float16 (fp16 = false): the float16 work item
// runs on the host reference path, between the kernels before and after it.
builtin.module attributes {accy.target = #accy.target<fp16 = false>} {
  func.func @main(%x: tensor<5x7xf32>) -> (tensor<5x1xf32>, tensor<5x1xf32>) {
    %r = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<5x7xf32>) -> tensor<5xf32>
    %rv = "accy.reshape"(%r) : (tensor<5xf32>) -> tensor<5x1xf32>
    %h = "accy.cast"(%rv) : (tensor<5x1xf32>) -> tensor<5x1xf16>
    %t = "accy.tanh"(%h) : (tensor<5x1xf16>) -> tensor<5x1xf16>
    %f = "accy.cast"(%t) : (tensor<5x1xf16>) -> tensor<5x1xf32>
    %s = "accy.scan"(%f) <{kind = "sum", axis = 0 : i64, exclusive = false, reverse = false}> : (tensor<5x1xf32>) -> tensor<5x1xf32>
    func.return %f, %s : tensor<5x1xf32>, tensor<5x1xf32>
  }
}

// CHECK: remark: kernel main_k1_elementwise (elementwise) runs on the host reference path: float16 needs the OpenCL extension cl_khr_fp16
// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_reduction
// CHECK: accy_host.fallback "main_k1_elementwise" ins(%{{.*}} : memref<5xf32>) outs(%{{.*}} : memref<5xf32>)
// CHECK: accy.reshape
// CHECK: accy.tanh
// CHECK: accy_host.yield
// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k2_scan

// STRICT: kernel main_k1_elementwise (elementwise) cannot be lowered
