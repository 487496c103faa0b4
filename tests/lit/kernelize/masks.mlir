// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p kernelize -t opencl | filecheck %s --check-prefix=OCL
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s --check-prefix=GPU

// A chain with a compare, a select, casts and an i1 mask output stays
// vectorised: lanes compare into vector<16xi1> masks (accy_kernel.vcmp),
// select under them (accy_kernel.vselect) and convert (accy_kernel.vcast);
// the i1 output is stored as 0/1 bytes. The [17, 9] tensors merge into one
// row of 153, so work-item i owns lanes 16*i.. with no div/rem index math.
func.func @main(%a: tensor<17x9xf32>, %b: tensor<17x9xf32>, %m: tensor<17x9xi1>) -> (tensor<17x9xi32>, tensor<17x9xi1>) {
  %c = "accy.cmp"(%a, %b) <{predicate = "lt"}> : (tensor<17x9xf32>, tensor<17x9xf32>) -> tensor<17x9xi1>
  %k = "accy.and"(%c, %m) : (tensor<17x9xi1>, tensor<17x9xi1>) -> tensor<17x9xi1>
  %s = "accy.select"(%k, %a, %b) : (tensor<17x9xi1>, tensor<17x9xf32>, tensor<17x9xf32>) -> tensor<17x9xf32>
  %i = "accy.cast"(%s) : (tensor<17x9xf32>) -> tensor<17x9xi32>
  func.return %i, %k : tensor<17x9xi32>, tensor<17x9xi1>
}

// CHECK:      "gpu.func"() <{function_type = (memref<153xf32>, memref<153xf32>, memref<153xi8>, memref<153xi8>, memref<153xi32>) -> (), kernel}>
// CHECK-NOT:  arith.divsi
// CHECK-NOT:  arith.remsi
// CHECK:      %[[GID:.*]] = "gpu.global_id"()
// CHECK:      %[[BASE:.*]] = arith.muli %[[GID]], %{{.*}} : index
// CHECK:      %[[A:.*]] = vector.load %{{.*}}[%[[BASE]]] : memref<153xf32>, vector<16xf32>
// CHECK-NEXT: %[[B:.*]] = vector.load %{{.*}}[%[[BASE]]] : memref<153xf32>, vector<16xf32>
// CHECK-NEXT: %[[C:.*]] = accy_kernel.vcmp "olt", %[[A]], %[[B]] : vector<16xf32> -> vector<16xi1>
// CHECK-NEXT: %[[MB:.*]] = vector.load %{{.*}}[%[[BASE]]] : memref<153xi8>, vector<16xi8>
// CHECK-NEXT: %[[M:.*]] = accy_kernel.vcmp "ne", %[[MB]], %{{.*}} : vector<16xi8> -> vector<16xi1>
// CHECK-NEXT: %[[K:.*]] = arith.andi %[[C]], %[[M]] : vector<16xi1>
// CHECK-NEXT: %[[KB:.*]] = accy_kernel.vselect %[[K]], %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xi8>
// CHECK-NEXT: vector.store %[[KB]], %{{.*}}[%[[BASE]]] : memref<153xi8>, vector<16xi8>
// CHECK-NEXT: %[[S:.*]] = accy_kernel.vselect %[[K]], %[[A]], %[[B]] : vector<16xi1>, vector<16xf32>
// The saturating float -> int cast: out-of-range and NaN lanes are replaced.
// CHECK:      accy_kernel.vcast "fptosi", %{{.*}} : vector<16xf32> -> vector<16xi32>
// CHECK:      vector.store %{{.*}}, %{{.*}}[%[[BASE]]] : memref<153xi32>, vector<16xi32>
// The scalar tail of the last work-item uses the arith forms.
// CHECK:      scf.for
// CHECK:      arith.cmpf olt
// CHECK:      arith.select
// CHECK:      arith.fptosi

// OpenCL vector comparisons give int16 -1/0 masks; select(else, then, mask).
// OCL:      float16 [[A:v[0-9]+]] = vload16(0, b0 + [[BASE:v[0-9]+]]);
// OCL-NEXT: float16 [[B:v[0-9]+]] = vload16(0, b1 + [[BASE]]);
// OCL-NEXT: int16 [[C:v[0-9]+]] = [[A]] < [[B]];
// OCL-NEXT: char16 [[MB:v[0-9]+]] = vload16(0, b2 + [[BASE]]);
// OCL-NEXT: int16 [[M:v[0-9]+]] = convert_int16([[MB]] != {{v[0-9]+}});
// OCL-NEXT: int16 [[K:v[0-9]+]] = [[C]] & [[M]];
// OCL-NEXT: char16 [[KB:v[0-9]+]] = select({{v[0-9]+}}, {{v[0-9]+}}, convert_char16([[K]]));
// OCL-NEXT: vstore16([[KB]], 0, b3 + [[BASE]]);
// OCL-NEXT: float16 {{v[0-9]+}} = select([[B]], [[A]], [[K]]);
// OCL:      convert_int16(
// OCL:      vstore16({{v[0-9]+}}, 0, b4 + [[BASE]]);

// GPU:      vector.load {{.*}} : memref<153xf32>, vector<4xf32>
// GPU:      accy_kernel.vcmp "olt", {{.*}} : vector<4xf32> -> vector<4xi1>
// GPU:      accy_kernel.vselect {{.*}} : vector<4xi1>, vector<4xf32>
