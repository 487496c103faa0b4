// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s -t opencl | filecheck %s --check-prefix=OCL
// RUN: accy-opt %s -p 'set-target{mma=sm80}' -t opencl | filecheck %s --check-prefix=SM80

// accy_kernel.narrow_pair, two f32 values rounded to a bf16 pair (an mma
// fragment register), round-trips; the OpenCL backend prints it as two
// conversions, and under mma = "sm80" as one packed cvt whose first source
// is the pair's upper half (lane 1).

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<2xf32>, memref<2xbf16>) -> (), kernel}> ({
    ^bb0(%a: memref<2xf32>, %o: memref<2xbf16>):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %lo = memref.load %a[%c0] : memref<2xf32>
      %hi = memref.load %a[%c1] : memref<2xf32>
      %p = accy_kernel.narrow_pair %lo, %hi : vector<2xbf16>
      %x = vector.extract %p[1] : bf16 from vector<2xbf16>
      memref.store %x, %o[%c0] : memref<2xbf16>
      "gpu.return"() : () -> ()
    }) {sym_name = "k", accy.kind = "custom"} : () -> ()
  }) : () -> ()
}

// CHECK: %{{.*}} = accy_kernel.narrow_pair %{{.*}}, %{{.*}} : vector<2xbf16>

// OCL: ushort2 {{v[0-9]+}} = ((ushort2)(accy_bf16([[LO:v[0-9]+]]), accy_bf16([[HI:v[0-9]+]])));

// SM80:      uint [[W:w[0-9]+]];
// SM80-NEXT: asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"([[W]]) : "f"([[HI:v[0-9]+]]), "f"([[LO:v[0-9]+]]));
// SM80-NEXT: ushort2 {{v[0-9]+}} = as_ushort2([[W]]);
