// RUN: accy-opt %s -p accy-device-pipeline | filecheck %s
// RUN: accy-opt %s -p accy-device-pipeline -t opencl | filecheck %s --check-prefix=CL

// Under mma = "sm90" and math = "fast", an f32 dot takes the warpgroup tiles
// on TF32 wgmma m64n256k8, which reads B only k-contiguous: a first launch
// packs the n-contiguous rhs [k][n] into a scratch copy [n][k] (32
// consecutive k a warp's run), and the product stages both operands by
// async copies, 128-byte swizzled rows of 32 k, four wgmmas a step. PTX's
// tf32 wgmma takes no transpose immediates.

builtin.module attributes {accy.target = #accy.target<profile = "gpu", mma = "sm90", math = "fast", fp16 = false, static_local_bytes = 231424>} {
func.func @main(%a: tensor<200x96xf32>, %b: tensor<96x264xf32>) -> tensor<200x264xf32> {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<200x96xf32>, tensor<96x264xf32>) -> tensor<200x264xf32>
  func.return %d : tensor<200x264xf32>
}
}

// CHECK:      %[[P:.*]] = memref.alloc() : memref<25344xf32>
// CHECK:      "gpu.launch_func"({{.*}}, %1, %[[P]]) <{kernel = @kernels::@main_k0_dot_general_pack_b
// CHECK:      "gpu.launch_func"({{.*}}, %[[P]]) <{kernel = @kernels::@main_k0_dot_general,
// CHECK:      memref.dealloc %[[P]]
// CHECK:      memref.store {{.*}} : memref<25344xf32>
// CHECK:      memref.alloca() {alignment = 1024 : i64} : memref<16384xf32, #gpu.address_space<workgroup>>
// CHECK:      memref.alloca() {alignment = 1024 : i64} : memref<32768xf32, #gpu.address_space<workgroup>>
// CHECK:      accy_kernel.wgmma_sync "fence"
// CHECK-NEXT: accy_kernel.wgmma "m64n256k8" {{.*}}k_step = 0 : i64
// CHECK:      accy_kernel.wgmma "m64n256k8" {{.*}}k_step = 3 : i64
// CHECK-NEXT: accy_kernel.wgmma_sync "commit"

// CL:      void main_k0_dot_general_pack_b(
// CL:      reqd_work_group_size(32, 8, 1)
// CL:      // accy-sm90a: wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {%0,
// CL-SAME: %128, %129, p, 1, 1;
