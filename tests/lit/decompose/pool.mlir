// accy.pool becomes one accy.pad (mode constant) of its operand, a strided
// slice per tap of the window and the taps combined elementwise: max pads
// with -inf (an integer type's lowest), so the padding never wins; sum and
// average pad with zeros; average divides by each window's count of input
// elements (a literal over the spatial dims) or, with count_include_pad,
// by the window's size.
// RUN: accy-opt %s -p decompose | filecheck %s
// RUN: accy-opt %s -p decompose | accy-opt | filecheck %s

// CHECK-LABEL: func.func @pool_max
// CHECK-NEXT:    %[[F:.*]] = accy.constant dense<0xff800000> : tensor<f32>
// CHECK-NEXT:    %[[P:.*]] = accy.pad %x, %[[F]] {low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 1>, mode = "constant"} : tensor<1x2x5xf32>, tensor<f32> -> tensor<1x2x7xf32>
// CHECK-NEXT:    %[[T0:.*]] = accy.slice %[[P]] {start = array<i64: 0, 0, 0>, limit = array<i64: 1, 2, 5>, stride = array<i64: 1, 1, 2>} : tensor<1x2x7xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:    %[[T1:.*]] = accy.slice %[[P]] {start = array<i64: 0, 0, 1>, limit = array<i64: 1, 2, 6>, stride = array<i64: 1, 1, 2>} : tensor<1x2x7xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:    %[[T2:.*]] = accy.slice %[[P]] {start = array<i64: 0, 0, 2>, limit = array<i64: 1, 2, 7>, stride = array<i64: 1, 1, 2>} : tensor<1x2x7xf32> -> tensor<1x2x3xf32>
// CHECK-NEXT:    %[[M0:.*]] = accy.max %[[T0]], %[[T1]] : tensor<1x2x3xf32>
// CHECK-NEXT:    %[[M1:.*]] = accy.max %[[M0]], %[[T2]] : tensor<1x2x3xf32>
// CHECK-NEXT:    func.return %[[M1]] : tensor<1x2x3xf32>
func.func @pool_max(%x: tensor<1x2x5xf32>) -> tensor<1x2x3xf32> {
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64: 3>, strides = array<i64: 2>, dilations = array<i64: 1>, pads_low = array<i64: 1>, pads_high = array<i64: 1>}> : (tensor<1x2x5xf32>) -> tensor<1x2x3xf32>
  func.return %0 : tensor<1x2x3xf32>
}

// CHECK-LABEL: func.func @pool_max_i32
// CHECK-NEXT:    %[[F:.*]] = accy.constant dense<-2147483648> : tensor<i32>
// CHECK-NEXT:    accy.pad %x, %[[F]] {low = array<i64: 0, 0, 0>, high = array<i64: 0, 0, 1>, mode = "constant"} : tensor<1x1x4xi32>, tensor<i32> -> tensor<1x1x5xi32>
// CHECK-COUNT-2: accy.slice
// CHECK-NEXT:    accy.max {{.*}} : tensor<1x1x4xi32>
// CHECK-NEXT:    func.return
func.func @pool_max_i32(%x: tensor<1x1x4xi32>) -> tensor<1x1x4xi32> {
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64: 2>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 1>}> : (tensor<1x1x4xi32>) -> tensor<1x1x4xi32>
  func.return %0 : tensor<1x1x4xi32>
}

// Windows [pad, x0], [x1, x2], [x3, pad]: counts 1, 2, 1.
// CHECK-LABEL: func.func @pool_average
// CHECK-NEXT:    %[[Z:.*]] = accy.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[P:.*]] = accy.pad %x, %[[Z]] {low = array<i64: 0, 0, 1>, high = array<i64: 0, 0, 1>, mode = "constant"} : tensor<1x1x4xf32>, tensor<f32> -> tensor<1x1x6xf32>
// CHECK-NEXT:    %[[T0:.*]] = accy.slice %[[P]]
// CHECK-NEXT:    %[[T1:.*]] = accy.slice %[[P]]
// CHECK-NEXT:    %[[S:.*]] = accy.add %[[T0]], %[[T1]] : tensor<1x1x3xf32>
// CHECK-NEXT:    %[[N:.*]] = accy.constant dense<[1.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %[[NB:.*]] = accy.broadcast %[[N]] {dims = array<i64: 2>} : tensor<3xf32> -> tensor<1x1x3xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.div %[[S]], %[[NB]] : tensor<1x1x3xf32>
// CHECK-NEXT:    func.return %[[R]] : tensor<1x1x3xf32>
func.func @pool_average(%x: tensor<1x1x4xf32>) -> tensor<1x1x3xf32> {
  %0 = "accy.pool"(%x) <{kind = "average", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 1>, pads_low = array<i64: 1>, pads_high = array<i64: 1>}> : (tensor<1x1x4xf32>) -> tensor<1x1x3xf32>
  func.return %0 : tensor<1x1x3xf32>
}

// count_include_pad: the window's size, 2, everywhere.
// CHECK-LABEL: func.func @pool_average_pads
// CHECK:         %[[S:.*]] = accy.add
// CHECK-NEXT:    %[[N:.*]] = accy.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[NB:.*]] = accy.broadcast %[[N]] {dims = array<i64>} : tensor<f32> -> tensor<1x1x3xf32>
// CHECK-NEXT:    %[[R:.*]] = accy.div %[[S]], %[[NB]] : tensor<1x1x3xf32>
func.func @pool_average_pads(%x: tensor<1x1x4xf32>) -> tensor<1x1x3xf32> {
  %0 = "accy.pool"(%x) <{kind = "average", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 1>, pads_low = array<i64: 1>, pads_high = array<i64: 1>, count_include_pad = true}> : (tensor<1x1x4xf32>) -> tensor<1x1x3xf32>
  func.return %0 : tensor<1x1x3xf32>
}

// No pads: the taps slice the operand itself; sum adds them.
// CHECK-LABEL: func.func @pool_sum
// CHECK-NOT:     accy.pad
// CHECK-NEXT:    %[[T0:.*]] = accy.slice %x {start = array<i64: 0, 0, 0, 0>, limit = array<i64: 1, 1, 1, 2>, stride = array<i64: 1, 1, 1, 1>} : tensor<1x1x2x3xf16> -> tensor<1x1x1x2xf16>
// CHECK-NEXT:    %[[T1:.*]] = accy.slice %x {start = array<i64: 0, 0, 0, 1>, limit = array<i64: 1, 1, 1, 3>
// CHECK-NEXT:    %[[T2:.*]] = accy.slice %x {start = array<i64: 0, 0, 1, 0>, limit = array<i64: 1, 1, 2, 2>
// CHECK-NEXT:    %[[T3:.*]] = accy.slice %x {start = array<i64: 0, 0, 1, 1>, limit = array<i64: 1, 1, 2, 3>
// CHECK-NEXT:    %[[A0:.*]] = accy.add %[[T0]], %[[T1]] : tensor<1x1x1x2xf16>
// CHECK-NEXT:    %[[A1:.*]] = accy.add %[[A0]], %[[T2]] : tensor<1x1x1x2xf16>
// CHECK-NEXT:    %[[A2:.*]] = accy.add %[[A1]], %[[T3]] : tensor<1x1x1x2xf16>
// CHECK-NEXT:    func.return %[[A2]] : tensor<1x1x1x2xf16>
func.func @pool_sum(%x: tensor<1x1x2x3xf16>) -> tensor<1x1x1x2xf16> {
  %0 = "accy.pool"(%x) <{kind = "sum", window = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>}> : (tensor<1x1x2x3xf16>) -> tensor<1x1x1x2xf16>
  func.return %0 : tensor<1x1x1x2xf16>
}
