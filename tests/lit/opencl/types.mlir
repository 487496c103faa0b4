// RUN: accy-opt %s -t opencl | filecheck %s
// f64 and i8 buffers, masks, casts, lanes, private arrays, swapped iter_args.

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<8xf64>, memref<8xi8>, memref<4xi32>) -> (), kernel}> ({
    ^bb0(%a: memref<8xf64>, %mask: memref<8xi8>, %out: memref<4xi32>):
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %x = vector.load %a[%c0] : memref<8xf64>, vector<4xf64>
      %y = vector.load %a[%c4] : memref<8xf64>, vector<4xf64>
      %x2 = vector.extract %x[2] : f64 from vector<4xf64>
      %y1 = vector.extract %y[1] : f64 from vector<4xf64>
      %lt = arith.cmpf olt, %x2, %y1 : f64
      %s = arith.select %lt, %x2, %y1 : f64
      %m = arith.extui %lt : i1 to i8
      memref.store %m, %mask[%c1] : memref<8xi8>
      %i = arith.fptosi %s : f64 to i32
      %tile = memref.alloca() : memref<2x3xi32>
      memref.store %i, %tile[%c1, %c1] : memref<2x3xi32>
      %init = arith.constant 1 : i32
      %f0, %f1 = scf.for %k = %c0 to %c4 step %c1 iter_args(%p = %init, %q = %init) -> (i32, i32) {
        %n = arith.addi %p, %q : i32
        scf.yield %q, %n : i32, i32
      }
      %t = memref.load %tile[%c1, %c1] : memref<2x3xi32>
      %r = arith.divsi %f1, %t : i32
      memref.store %r, %out[%c0] : memref<4xi32>
      "gpu.return"() : () -> ()
    }) {sym_name = "main_k0_mixed", accy.kind = "elementwise"} : () -> ()
  }) : () -> ()
}

// CHECK:      #pragma OPENCL EXTENSION cl_khr_fp64 : enable
// CHECK:      __kernel void main_k0_mixed(
// CHECK-NEXT:     __global const double* restrict b0,
// CHECK-NEXT:     __global char* restrict b1,
// CHECK-NEXT:     __global int* restrict b2) {
// CHECK-NEXT:   double4 v0 = vload4(0, b0 + 0);
// CHECK-NEXT:   double4 v1 = vload4(0, b0 + 4);
// CHECK-NEXT:   double v2 = v0.s2;
// CHECK-NEXT:   double v3 = v1.s1;
// CHECK-NEXT:   bool v4 = v2 < v3;
// CHECK-NEXT:   double v5 = v4 ? v2 : v3;
// CHECK-NEXT:   char v6 = (char)(v4);
// CHECK-NEXT:   b1[1] = v6;
// CHECK-NEXT:   int v7 = (int)(v5);
// CHECK-NEXT:   int p0[6];
// CHECK-NEXT:   p0[1 * 3 + 1] = v7;
// CHECK-NEXT:   int a0 = 1;
// CHECK-NEXT:   int a1 = 1;
// CHECK-NEXT:   for (long i0 = 0; i0 < 4; i0 += 1) {
// CHECK-NEXT:     int v8 = a0 + a1;
// CHECK-NEXT:     int t0 = a1;
// CHECK-NEXT:     int t1 = v8;
// CHECK-NEXT:     a0 = t0;
// CHECK-NEXT:     a1 = t1;
// CHECK-NEXT:   }
// CHECK-NEXT:   int v9 = p0[1 * 3 + 1];
// A loaded divisor: divided by 1 where it is 0 or the division is INT_MIN / -1, and x / 0 = 0 (kernel-ir.md).
// CHECK-NEXT:   int v10 = ((v9 == ((int)0)) | ((a1 == (int)(-2147483647 - 1)) & (v9 == ((int)-1)))) ? ((int)1) : v9;
// CHECK-NEXT:   int v11 = (v9 == ((int)0)) ? ((int)0) : a1 / v10;
// CHECK-NEXT:   b2[0] = v11;
// CHECK-NEXT: }
