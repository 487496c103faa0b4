// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s -p 'set-target{mma=sm80}' -t opencl | filecheck %s --check-prefix=SM80

// accy_kernel.ldmatrix over an f32 tile (TF32's A fragment: a row of 4
// f32, 16 bytes, a work-item) round-trips, and the OpenCL backend prints
// it as the b16 instruction with each 32-bit register read as a float.

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%o: memref<4xf32>):
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %lid = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
      %l = memref.alloca() {alignment = 16 : i64} : memref<128xf32, #gpu.address_space<workgroup>>
      %i = arith.muli %lid, %c4 : index
      %r:4 = accy_kernel.ldmatrix %l[%i] : memref<128xf32, #gpu.address_space<workgroup>> -> f32, f32, f32, f32
      memref.store %r#3, %o[%c0] : memref<4xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "k", accy.kind = "custom"} : () -> ()
  }) : () -> ()
}

// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = accy_kernel.ldmatrix %{{.*}}[%{{.*}}] : memref<128xf32, #gpu.address_space<workgroup>> -> f32, f32, f32, f32

// SM80:      uint [[W0:w[0-9]+]], [[W1:w[0-9]+]], [[W2:w[0-9]+]], [[W3:w[0-9]+]];
// SM80-NEXT: asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
// SM80:      float {{v[0-9]+}} = as_float([[W3]]);
