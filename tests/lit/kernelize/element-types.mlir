// A target without half (or double) precision: a work item computing in f16
// (f64) is not lowered. Under the exact tier it runs on the host reference
// path with a remark naming the reason; under fast, or with strict
// kernelization, that is an error. Work items without the type still lower.
// RUN: accy-opt %s -p 'set-target{fp16=false},kernelize' 2>&1 | filecheck %s --check-prefix=HALF
// RUN: accy-opt %s -p 'set-target{fp64=false},kernelize' 2>&1 | filecheck %s --check-prefix=DOUBLE
// RUN: accy-opt %s -p 'set-target{fp16=true fp64=true},kernelize' 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not accy-opt %s -p 'set-target{fp16=false math=fast},kernelize' --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=FAST
// RUN: not accy-opt %s -p 'set-target{fp16=false},kernelize{strict=true}' --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=STRICT

// HALF: remark: kernel main_k0_elementwise (elementwise) runs on the host reference path: float16 needs the OpenCL extension cl_khr_fp16, which the target lacks (fp16 = false)
// HALF-NOT: remark:
// HALF: accy_host.fallback "main_k0_elementwise" ins(%{{.*}} : memref<35xf16>)
// HALF: "gpu.func"() <{function_type = (memref<3xf64>, memref<3xf64>) -> (), kernel}>
// HALF: {sym_name = "main_k1_elementwise", accy.kind = "elementwise"}

// DOUBLE: remark: kernel main_k1_elementwise (elementwise) runs on the host reference path: float64 needs the OpenCL extension cl_khr_fp64, which the target lacks (fp64 = false)

// BOTH-NOT: remark:

// FAST: error: kernel main_k0_elementwise (elementwise) cannot be lowered (the fast math tier): float16 needs the OpenCL extension cl_khr_fp16, which the target lacks (fp16 = false)
// FAST-NOT: failed
// STRICT: error: kernel main_k0_elementwise (elementwise) cannot be lowered (strict kernelization): float16 needs

func.func @main(%h: tensor<5x7xf16>, %d: tensor<3xf64>) -> (tensor<5x7xf16>, tensor<3xf64>) {
  %e = "accy.exp"(%h) : (tensor<5x7xf16>) -> tensor<5x7xf16>
  %a = "accy.add"(%e, %h) : (tensor<5x7xf16>, tensor<5x7xf16>) -> tensor<5x7xf16>
  %s = "accy.sqrt"(%d) : (tensor<3xf64>) -> tensor<3xf64>
  func.return %a, %s : tensor<5x7xf16>, tensor<3xf64>
}
