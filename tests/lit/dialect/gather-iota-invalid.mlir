// Every verifier error of accy.gather and accy.iota, one chunk each, checked
// with MLIR's annotations by --verify-diagnostics.
// RUN: accy-opt %s --split-input-file --verify-diagnostics

func.func @gather_float_indices(%x: tensor<5x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.gather' op indices must have element type i32 or i64, got f32}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_i16_indices(%x: tensor<5x3xf32>, %i: tensor<2xi16>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.gather' op indices must have element type i32 or i64, got i16}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2xi16>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_axis(%x: tensor<5x3xf32>, %i: tensor<2xi32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.gather' op axis 2 is out of range for rank 2}}
  %0 = "accy.gather"(%x, %i) <{axis = 2 : i64}> : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_scalar(%x: tensor<f32>, %i: tensor<2xi32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.gather' op operand must have rank >= 1, got tensor<f32>}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<f32>, tensor<2xi32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @gather_empty_axis(%x: tensor<0x3xf32>, %i: tensor<2xi32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.gather' op gathers 2 index(es) from axis 0 of size 0}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<0x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_shape(%x: tensor<5x3xf32>, %i: tensor<2xi32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'accy.gather' op result type should be tensor<2x3xf32>, got tensor<3x2xf32>}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @gather_elem(%x: tensor<5x3xf32>, %i: tensor<2xi32>) -> tensor<2x3xf16> {
  // expected-error @+1 {{'accy.gather' op result type should be tensor<2x3xf32>, got tensor<2x3xf16>}}
  %0 = "accy.gather"(%x, %i) <{axis = 0 : i64}> : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<2x3xf16>
  func.return %0 : tensor<2x3xf16>
}

// -----

func.func @iota_scalar() -> tensor<i32> {
  // expected-error @+1 {{'accy.iota' op result must have rank >= 1, got tensor<i32>}}
  %0 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<i32>
  func.return %0 : tensor<i32>
}

// -----

func.func @iota_dimension() -> tensor<3x4xi32> {
  // expected-error @+1 {{'accy.iota' op dimension 2 is out of range for rank 2}}
  %0 = "accy.iota"() <{dimension = 2 : i64}> : () -> tensor<3x4xi32>
  func.return %0 : tensor<3x4xi32>
}

// -----

func.func @iota_bool() -> tensor<4xi1> {
  // expected-error @+1 {{'accy.iota' op result element type must be an integer wider than i1 or a float, got i1}}
  %0 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @iota_dynamic() -> tensor<?xi32> {
  // expected-error @+1 {{'accy.iota' op result must be a statically shaped tensor, got tensor<?xi32>}}
  %0 = "accy.iota"() <{dimension = 0 : i64}> : () -> tensor<?xi32>
  func.return %0 : tensor<?xi32>
}
