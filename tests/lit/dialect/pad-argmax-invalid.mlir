// Every verifier error of accy.pad and of accy.reduce's argmax/argmin, one
// chunk each, checked with MLIR's annotations by --verify-diagnostics.
// RUN: accy-opt %s --split-input-file --verify-diagnostics

func.func @pad_mode(%x: tensor<3xf32>, %v: tensor<f32>) -> tensor<5xf32> {
  // expected-error @+1 {{'accy.pad' op mode "mirror" is not one of constant, edge, reflect, wrap}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1>, high = array<i64: 1>, mode = "mirror"}> : (tensor<3xf32>, tensor<f32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @pad_value_rank(%x: tensor<3xf32>, %v: tensor<1xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'accy.pad' op value must be a rank-0 tensor of f32, got tensor<1xf32>}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1>, high = array<i64: 1>, mode = "constant"}> : (tensor<3xf32>, tensor<1xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @pad_value_type(%x: tensor<3xf32>, %v: tensor<i32>) -> tensor<5xf32> {
  // expected-error @+1 {{'accy.pad' op value must be a rank-0 tensor of f32, got tensor<i32>}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1>, high = array<i64: 1>, mode = "constant"}> : (tensor<3xf32>, tensor<i32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @pad_entries(%x: tensor<3x2xf32>, %v: tensor<f32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{'accy.pad' op low and high need 2 entries (the operand rank), got 1 and 2}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1>, high = array<i64: 1, 0>, mode = "constant"}> : (tensor<3x2xf32>, tensor<f32>) -> tensor<5x2xf32>
  func.return %0 : tensor<5x2xf32>
}

// -----

func.func @pad_crops_too_much(%x: tensor<3xf32>, %v: tensor<f32>) -> tensor<1xf32> {
  // expected-error @+1 {{'accy.pad' op crops 4 elements of dim 0, which has 3}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: -4>, high = array<i64: 2>, mode = "constant"}> : (tensor<3xf32>, tensor<f32>) -> tensor<1xf32>
  func.return %0 : tensor<1xf32>
}

// -----

func.func @pad_edge_of_nothing(%x: tensor<0x2xf32>, %v: tensor<f32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'accy.pad' op mode edge pads dim 0, which keeps no element to repeat}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1, 0>, high = array<i64: 1, 0>, mode = "edge"}> : (tensor<0x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// -----

func.func @pad_result(%x: tensor<3xf32>, %v: tensor<f32>) -> tensor<6xf32> {
  // expected-error @+1 {{'accy.pad' op result type should be tensor<5xf32>, got tensor<6xf32>}}
  %0 = "accy.pad"(%x, %v) <{low = array<i64: 1>, high = array<i64: 1>, mode = "reflect"}> : (tensor<3xf32>, tensor<f32>) -> tensor<6xf32>
  func.return %0 : tensor<6xf32>
}

// -----

func.func @argmax_float_result(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'accy.reduce' op argmax result element type must be i32 or i64, got f32}}
  %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @argmin_i16_result(%x: tensor<3x4xf32>) -> tensor<3xi16> {
  // expected-error @+1 {{'accy.reduce' op argmin result element type must be i32 or i64, got i16}}
  %0 = "accy.reduce"(%x) <{kind = "argmin", axes = array<i64: 1>}> : (tensor<3x4xf32>) -> tensor<3xi16>
  func.return %0 : tensor<3xi16>
}

// -----

func.func @argmax_of_nothing(%x: tensor<3x0xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{'accy.reduce' op argmax of no element: the reduced dims [1] have 0 elements}}
  %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x0xf32>) -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}

// -----

func.func @argmax_bool(%x: tensor<3x4xi1>) -> tensor<3xi64> {
  // expected-error @+1 {{'accy.reduce' op argmax does not take element type i1}}
  %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x4xi1>) -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}

// -----

func.func @argmax_shape(%x: tensor<3x4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'accy.reduce' op result type should be tensor<3xi64>, got tensor<4xi64>}}
  %0 = "accy.reduce"(%x) <{kind = "argmax", axes = array<i64: 1>}> : (tensor<3x4xf32>) -> tensor<4xi64>
  func.return %0 : tensor<4xi64>
}

// -----

func.func @argmax_kind(%x: tensor<3x4xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{'accy.reduce' op kind "arg_max" is not one of sum, prod, max, min, mean, argmax, argmin}}
  %0 = "accy.reduce"(%x) <{kind = "arg_max", axes = array<i64: 1>}> : (tensor<3x4xf32>) -> tensor<3xi64>
  func.return %0 : tensor<3xi64>
}
