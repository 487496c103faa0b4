// RUN: accy-opt %s | filecheck %s
// RUN: accy-opt %s --print-op-generic | accy-opt | filecheck %s
// RUN: accy-opt %s -t opencl | filecheck %s --check-prefix=OCL

// accy_kernel.vcmp / vselect / vcast: the vector forms of arith.cmpf/cmpi,
// arith.select and arith.fptosi/sitofp/extsi/trunci (xDSL 0.75 verifies
// those on scalars only), and how the OpenCL backend prints them: masks are
// int4 (-1/0), converted from and to the lanes' width.

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<8xf64>, memref<8xi8>, memref<8xi32>) -> (), kernel}> ({
    ^bb0(%a: memref<8xf64>, %m: memref<8xi8>, %out: memref<8xi32>):
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %x = vector.load %a[%c0] : memref<8xf64>, vector<4xf64>
      %y = vector.load %a[%c4] : memref<8xf64>, vector<4xf64>
      %lt = accy_kernel.vcmp "ult", %x, %y : vector<4xf64> -> vector<4xi1>
      %mb = vector.load %m[%c0] : memref<8xi8>, vector<4xi8>
      %z8 = arith.constant 0 : i8
      %zero = vector.broadcast %z8 : i8 to vector<4xi8>
      %mask = accy_kernel.vcmp "ne", %mb, %zero : vector<4xi8> -> vector<4xi1>
      %both = arith.andi %lt, %mask : vector<4xi1>
      %s = accy_kernel.vselect %both, %x, %y : vector<4xi1>, vector<4xf64>
      %i = accy_kernel.vcast "fptosi", %s : vector<4xf64> -> vector<4xi32>
      %b = accy_kernel.vselect %mask, %mb, %zero : vector<4xi1>, vector<4xi8>
      %w = accy_kernel.vcast "extsi", %b : vector<4xi8> -> vector<4xi32>
      %r = arith.addi %i, %w : vector<4xi32>
      vector.store %r, %out[%c0] : memref<8xi32>, vector<4xi32>
      "gpu.return"() : () -> ()
    }) {sym_name = "k", accy.kind = "elementwise"} : () -> ()
  }) : () -> ()
}

// CHECK:      %[[LT:.*]] = accy_kernel.vcmp "ult", %[[X:.*]], %[[Y:.*]] : vector<4xf64> -> vector<4xi1>
// CHECK:      %[[MASK:.*]] = accy_kernel.vcmp "ne", %[[MB:.*]], %[[ZERO:.*]] : vector<4xi8> -> vector<4xi1>
// CHECK:      %[[BOTH:.*]] = arith.andi %[[LT]], %[[MASK]] : vector<4xi1>
// CHECK-NEXT: %[[S:.*]] = accy_kernel.vselect %[[BOTH]], %[[X]], %[[Y]] : vector<4xi1>, vector<4xf64>
// CHECK-NEXT: %{{.*}} = accy_kernel.vcast "fptosi", %[[S]] : vector<4xf64> -> vector<4xi32>
// CHECK-NEXT: %[[B:.*]] = accy_kernel.vselect %[[MASK]], %[[MB]], %[[ZERO]] : vector<4xi1>, vector<4xi8>
// CHECK-NEXT: %{{.*}} = accy_kernel.vcast "extsi", %[[B]] : vector<4xi8> -> vector<4xi32>

// OCL:      #pragma OPENCL EXTENSION cl_khr_fp64 : enable
// OCL:      double4 [[X:v[0-9]+]] = vload4(0, b0 + 0);
// OCL-NEXT: double4 [[Y:v[0-9]+]] = vload4(0, b0 + 4);
// OCL-NEXT: int4 [[LT:v[0-9]+]] = convert_int4(!([[X]] >= [[Y]]));
// OCL-NEXT: char4 [[MB:v[0-9]+]] = vload4(0, b1 + 0);
// OCL-NEXT: char4 [[Z:v[0-9]+]] = (char4)(0);
// OCL-NEXT: int4 [[M:v[0-9]+]] = convert_int4([[MB]] != [[Z]]);
// OCL-NEXT: int4 [[BOTH:v[0-9]+]] = [[LT]] & [[M]];
// OCL-NEXT: double4 [[S:v[0-9]+]] = select([[Y]], [[X]], convert_long4([[BOTH]]));
// OCL-NEXT: int4 [[I:v[0-9]+]] = convert_int4([[S]]);
// OCL-NEXT: char4 [[B:v[0-9]+]] = select([[Z]], [[MB]], convert_char4([[M]]));
// OCL-NEXT: int4 [[W:v[0-9]+]] = convert_int4([[B]]);
// OCL-NEXT: int4 {{v[0-9]+}} = [[I]] + [[W]];
