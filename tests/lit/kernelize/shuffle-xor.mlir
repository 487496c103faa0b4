// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s -t opencl | filecheck %s --check-prefix=OCL

// accy_kernel.shuffle_xor, a warp's butterfly exchange, round-trips, and
// off NVIDIA's cards (no mma = "sm80") the OpenCL backend prints it through
// one local word per work-item of the kernel's stated block size (32 x 2),
// between two barriers.

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<64xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<64xf32>):
      %c32 = arith.constant 32 : index
      %tx = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %ty = "gpu.thread_id"() <{dimension = #gpu<dim y>}> : () -> index
      %l = arith.muli %ty, %c32 : index
      %i = arith.addi %l, %tx : index
      %x = memref.load %a[%i] : memref<64xf32>
      %y = accy_kernel.shuffle_xor %x {mask = 3 : i64} : f32
      memref.store %y, %a[%i] : memref<64xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "k", accy.kind = "custom", gpu.known_block_size = array<i32: 32, 2, 1>} : () -> ()
  }) : () -> ()
}

// CHECK: %{{.*}} = accy_kernel.shuffle_xor %{{.*}} {mask = 3 : i64} : f32

// OCL:      __local uint [[W:l[0-9]+]][64];
// OCL:      const long [[F:f[0-9]+]] = get_local_id(0) + 32 * (get_local_id(1) + 2 * get_local_id(2));
// OCL-NEXT: [[W]][[[F]]] = as_uint({{.*}});
// OCL-NEXT: barrier(CLK_LOCAL_MEM_FENCE);
// OCL-NEXT: const uint [[V:w[0-9]+]] = [[W]][[[F]] ^ 3];
// OCL-NEXT: barrier(CLK_LOCAL_MEM_FENCE);
// OCL-NEXT: float {{.*}} = as_float([[V]]);
