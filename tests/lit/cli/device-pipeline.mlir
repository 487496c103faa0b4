// accy-device-pipeline is what accy.compile runs on a kernel device:
// loop-invariant-code-motion, widen-accumulation, then kernelize with its
// options strict and verify-bounds (on by default). accy-opt expands it, so
// each of its passes is printed, timed and checked as a pass of its own.
// RUN: accy-opt %s -p accy-device-pipeline | filecheck %s
// RUN: accy-opt %s -p accy-device-pipeline --print-ir-after-all -o %t 2>&1 | filecheck %s --check-prefix=PASSES
// RUN: accy-opt %s -p accy-device-pipeline -o %t.named
// RUN: accy-opt %s -p 'loop-invariant-code-motion,widen-accumulation,kernelize{verify-bounds=true}' -o %t.spelled
// RUN: diff %t.named %t.spelled
// RUN: accy-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: not accy-opt %s -p 'accy-device-pipeline{bogus=1}' 2>&1 | filecheck %s --check-prefix=BAD

// The loop's exp(w) reads no carried value: it leaves the loop and runs once.
// The float16 sum accumulates in float32.
func.func @main(%h0: tensor<4x8xf32>, %w: tensor<8x8xf32>, %x: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4xf16>) {
  %h = "accy.iterate"(%h0) <{count = 3 : i64}> ({
  ^bb0(%hi: tensor<4x8xf32>):
    %e = "accy.exp"(%w) : (tensor<8x8xf32>) -> tensor<8x8xf32>
    %m = "accy.dot_general"(%hi, %e) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %t = "accy.tanh"(%m) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "accy.yield"(%t) : (tensor<4x8xf32>) -> ()
  }) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x8xf16>) -> tensor<4xf16>
  func.return %h, %s : tensor<4x8xf32>, tensor<4xf16>
}

// CHECK-LABEL: func.func @main(
// CHECK:         "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// CHECK:         scf.for
// CHECK-NEXT:      "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k1_iterate_body_k0_dot_general
// CHECK-NEXT:      scf.yield
// CHECK:         "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k2_reduction
// CHECK:       arith.extf {{.*}} : f16 to f32

// PASSES:      // -----// IR after loop-invariant-code-motion //----- //
// PASSES:      // -----// IR after widen-accumulation //----- //
// PASSES:      // -----// IR after kernelize{verify_bounds=true} //----- //

// LIST:        Pipelines:
// LIST-NEXT:     accy-device-pipeline {{ +}}What `accy.compile` runs on a kernel device{{.+}}

// BAD: accy-opt: error: invalid options for pipeline 'accy-device-pipeline': there is no option 'bogus' (options: strict, verify-bounds)
