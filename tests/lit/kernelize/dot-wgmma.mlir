// RUN: accy-opt %s -p accy-device-pipeline | filecheck %s
// RUN: accy-opt %s -p accy-device-pipeline -t opencl | filecheck %s --check-prefix=CL

// Under mma = "sm90" an f16 dot whose operands async copies stage takes the
// warpgroup tiles: 128 x 256 blocks of 8 warps, four wgmma m64n256k16 a
// 64-k step on 128-byte-swizzled tiles (1024-byte aligned), fenced,
// committed and waited on; the OpenCL C backend prints the instructions as
// marked PTX comments, which the runtime uncomments for sm_90a.

builtin.module attributes {accy.target = #accy.target<profile = "gpu", mma = "sm90", fp16 = false, static_local_bytes = 231424>} {
func.func @main(%a: tensor<200x96xf16>, %b: tensor<96x264xf16>) -> tensor<200x264xf16> {
  %d = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<200x96xf16>, tensor<96x264xf16>) -> tensor<200x264xf16>
  func.return %d : tensor<200x264xf16>
}
}

// CHECK:     memref.alloca() {alignment = 1024 : i64} : memref<32768xf16, #gpu.address_space<workgroup>>
// CHECK:     memref.alloca() {alignment = 1024 : i64} : memref<65536xf16, #gpu.address_space<workgroup>>
// CHECK:     accy_kernel.async_wait {pending = 1 : i64}
// CHECK-NEXT: accy_kernel.wgmma_sync "proxy"
// CHECK-NEXT: gpu.barrier
// CHECK:     accy_kernel.wgmma_sync "fence"
// CHECK-NEXT: accy_kernel.wgmma "m64n256k16" {{.*}}k_step = 0 : i64
// CHECK:     accy_kernel.wgmma "m64n256k16" {{.*}}k_step = 3 : i64
// CHECK-NEXT: accy_kernel.wgmma_sync "commit"
// CHECK-NEXT: accy_kernel.wgmma_sync "wait" {pending = 1 : i64}
// CHECK:     accy_kernel.wgmma_sync "wait" {pending = 0 : i64}

// CL:      static inline ulong accy_wgmma_desc(uint address, uint lead, uint stride)
// CL:      reqd_work_group_size(32, 8, 1)
// CL:      asm volatile("// accy-sm90a: fence.proxy.async.shared::cta;" ::: "memory");
// CL:      asm volatile("// accy-sm90a: wgmma.fence.sync.aligned;" ::: "memory");
// CL:      // accy-sm90a: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0,
// CL-SAME: %128, %129, p, 1, 1, 0, 1;
// CL:      asm volatile("// accy-sm90a: wgmma.commit_group.sync.aligned;" ::: "memory");
// CL:      asm volatile("// accy-sm90a: wgmma.wait_group.sync.aligned 1;" ::: "memory");
