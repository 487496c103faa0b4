// 16-bit float rows on the GPU profile (fp16 = false, as NVIDIA's OpenCL)
// read half_lanes = 8 elements (16 bytes) a step as one aligned access:
// the row sum's vector shares, and the layer norm's held shares (x, gamma
// and beta read, the output written, a ushort8 at a time). Rows of 1000 are
// no whole vectors for any work-item: element by element, as before.
// RUN: accy-opt %s -p 'set-target{profile=gpu fp16=false vector_width=4},compute-half-in-f32,kernelize' -t opencl | filecheck %s

// CHECK-LABEL: void main_k0_reduction(
// CHECK: ushort8 [[X:v[0-9]+]] = *(__global const ushort8*)(b0 + v{{[0-9]+}});
// CHECK-NEXT: float8 v{{[0-9]+}} = accy_from_half8([[X]]);

// CHECK-LABEL: void main_k1_row_pipeline(
// CHECK: ushort8 [[Y:v[0-9]+]] = *(__global const ushort8*)(b0 + v{{[0-9]+}});
// CHECK-NEXT: ushort v{{[0-9]+}} = [[Y]].s0;
// CHECK: *(__global const ushort8*)(b1 + v{{[0-9]+}});
// CHECK: *(__global const ushort8*)(b2 + v{{[0-9]+}});
// CHECK: *(__global ushort8*)(b3 + v{{[0-9]+}}) = v{{[0-9]+}};

// CHECK-LABEL: void main_k2_reduction(
// CHECK-NOT: ushort{{[0-9]}}
// CHECK-LABEL: void main_k3_row_pipeline(
// CHECK-NOT: ushort{{[0-9]}}

func.func @main(%a: tensor<4x2048xf16>, %g: tensor<2048xf16>, %b: tensor<2048xf16>, %c: tensor<4x1000xf16>,
                %gc: tensor<1000xf16>, %bc: tensor<1000xf16>)
    -> (tensor<4xf16>, tensor<4x2048xf16>, tensor<4xf16>, tensor<4x1000xf16>) {
  %s = "accy.reduce"(%a) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x2048xf16>) -> tensor<4xf16>
  %ln = "accy.layer_norm"(%a, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<4x2048xf16>, tensor<2048xf16>, tensor<2048xf16>) -> tensor<4x2048xf16>
  %sc = "accy.reduce"(%c) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4x1000xf16>) -> tensor<4xf16>
  %lnc = "accy.layer_norm"(%c, %gc, %bc) <{epsilon = 1.0e-05 : f32}> : (tensor<4x1000xf16>, tensor<1000xf16>, tensor<1000xf16>) -> tensor<4x1000xf16>
  func.return %s, %ln, %sc, %lnc : tensor<4xf16>, tensor<4x2048xf16>, tensor<4xf16>, tensor<4x1000xf16>
}
