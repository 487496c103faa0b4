// A diagnostic with no place in the input (kernelize's remark that a work
// item runs on the host reference path) is expected with @unknown; without
// the annotation it is unexpected.
// RUN: accy-opt %s -p 'set-target{fp16=false},kernelize' --verify-diagnostics -o %t
// RUN: sed -e 's/expected-remark/no-remark/' %s | not accy-opt - -p 'set-target{fp16=false},kernelize' --verify-diagnostics -o %t 2>&1 | filecheck %s

// expected-remark @unknown {{kernel main_k0_elementwise (elementwise) runs on the host reference path: float16 needs the OpenCL extension cl_khr_fp16}}
func.func @main(%h: tensor<5x7xf16>) -> tensor<5x7xf16> {
  %e = "accy.exp"(%h) : (tensor<5x7xf16>) -> tensor<5x7xf16>
  func.return %e : tensor<5x7xf16>
}

// CHECK: error: unexpected remark: kernel main_k0_elementwise (elementwise) runs on the host reference path
// CHECK-NOT: error
