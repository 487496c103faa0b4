// Every verifier error of accy.conv and accy.pool, one chunk each, checked
// with MLIR's annotations by --verify-diagnostics.
// RUN: accy-opt %s --split-input-file --verify-diagnostics

func.func @conv_int(%x: tensor<1x2x5xi32>, %w: tensor<3x2x2xi32>) -> tensor<1x3x4xi32> {
  // expected-error @+1 {{'accy.conv' op input and weight must share a float element type, got i32 and i32}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xi32>, tensor<3x2x2xi32>) -> tensor<1x3x4xi32>
  func.return %0 : tensor<1x3x4xi32>
}

// -----

func.func @conv_mixed(%x: tensor<1x2x5xf32>, %w: tensor<3x2x2xf16>) -> tensor<1x3x4xf32> {
  // expected-error @+1 {{'accy.conv' op input and weight must share a float element type, got f32 and f16}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x2xf16>) -> tensor<1x3x4xf32>
  func.return %0 : tensor<1x3x4xf32>
}

// -----

func.func @conv_rank(%x: tensor<2x5xf32>, %w: tensor<3x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.conv' op input [N, C, spatial...] and weight [M, C/groups, kernel...] need one rank >= 3, got [2, 5] and [3, 2]}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64>, dilations = array<i64>, pads_low = array<i64>, pads_high = array<i64>}> : (tensor<2x5xf32>, tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @conv_weight_rank(%x: tensor<1x2x5xf32>, %w: tensor<3x2x2x1xf32>) -> tensor<1x3x4xf32> {
  // expected-error @+1 {{'accy.conv' op input [N, C, spatial...] and weight [M, C/groups, kernel...] need one rank >= 3, got [1, 2, 5] and [3, 2, 2, 1]}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x2x1xf32>) -> tensor<1x3x4xf32>
  func.return %0 : tensor<1x3x4xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x4x5xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x3x4xf32> {
  // expected-error @+1 {{'accy.conv' op groups 2 must be >= 1 and divide the input channels (4) and the output channels (3)}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>, groups = 2 : i64}> : (tensor<1x4x5xf32>, tensor<3x2x2xf32>) -> tensor<1x3x4xf32>
  func.return %0 : tensor<1x3x4xf32>
}

// -----

func.func @conv_weight_channels(%x: tensor<1x4x5xf32>, %w: tensor<4x3x2xf32>) -> tensor<1x4x4xf32> {
  // expected-error @+1 {{'accy.conv' op weight dim 1 is 3, expected input channels / groups = 2}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>, groups = 2 : i64}> : (tensor<1x4x5xf32>, tensor<4x3x2xf32>) -> tensor<1x4x4xf32>
  func.return %0 : tensor<1x4x4xf32>
}

// -----

func.func @conv_entries(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x2x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'accy.conv' op strides has 1 entries, the operand has 2 spatial dims}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1, 1>, pads_low = array<i64: 0, 0>, pads_high = array<i64: 0, 0>}> : (tensor<1x2x5x5xf32>, tensor<3x2x2x2xf32>) -> tensor<1x3x4x4xf32>
  func.return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @conv_stride(%x: tensor<1x2x5xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x3x4xf32> {
  // expected-error @+1 {{'accy.conv' op strides [0] must be >= 1}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 0>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x2xf32>) -> tensor<1x3x4xf32>
  func.return %0 : tensor<1x3x4xf32>
}

// -----

func.func @conv_negative_pad(%x: tensor<1x2x5xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x3x3xf32> {
  // expected-error @+1 {{'accy.conv' op pads_low [-1] must be >= 0}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: -1>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x2xf32>) -> tensor<1x3x3xf32>
  func.return %0 : tensor<1x3x3xf32>
}

// -----

func.func @conv_window_too_large(%x: tensor<1x2x5xf32>, %w: tensor<3x2x3xf32>) -> tensor<1x3x1xf32> {
  // expected-error @+1 {{'accy.conv' op spatial dim 0: the window spans 7, more than the padded input's 5}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 3>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x3xf32>) -> tensor<1x3x1xf32>
  func.return %0 : tensor<1x3x1xf32>
}

// -----

func.func @conv_result(%x: tensor<1x2x5xf32>, %w: tensor<3x2x2xf32>) -> tensor<1x3x5xf32> {
  // expected-error @+1 {{'accy.conv' op result type should be tensor<1x3x4xf32>, got tensor<1x3x5xf32>}}
  %0 = "accy.conv"(%x, %w) <{strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>, tensor<3x2x2xf32>) -> tensor<1x3x5xf32>
  func.return %0 : tensor<1x3x5xf32>
}

// -----

func.func @pool_kind(%x: tensor<1x2x5xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{'accy.pool' op kind "min" is not one of max, average, sum}}
  %0 = "accy.pool"(%x) <{kind = "min", window = array<i64: 2>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>) -> tensor<1x2x4xf32>
  func.return %0 : tensor<1x2x4xf32>
}

// -----

func.func @pool_average_int(%x: tensor<1x2x5xi32>) -> tensor<1x2x4xi32> {
  // expected-error @+1 {{'accy.pool' op average does not take element type i32}}
  %0 = "accy.pool"(%x) <{kind = "average", window = array<i64: 2>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xi32>) -> tensor<1x2x4xi32>
  func.return %0 : tensor<1x2x4xi32>
}

// -----

func.func @pool_bool(%x: tensor<1x2x5xi1>) -> tensor<1x2x4xi1> {
  // expected-error @+1 {{'accy.pool' op max does not take element type i1}}
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64: 2>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xi1>) -> tensor<1x2x4xi1>
  func.return %0 : tensor<1x2x4xi1>
}

// -----

func.func @pool_rank(%x: tensor<2x5xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.pool' op operand [N, C, spatial...] needs rank >= 3, got [2, 5]}}
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64>, strides = array<i64>, dilations = array<i64>, pads_low = array<i64>, pads_high = array<i64>}> : (tensor<2x5xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @pool_window(%x: tensor<1x2x5xf32>) -> tensor<1x2x4xf32> {
  // expected-error @+1 {{'accy.pool' op window [0] must be >= 1}}
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64: 0>, strides = array<i64: 1>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 0>}> : (tensor<1x2x5xf32>) -> tensor<1x2x4xf32>
  func.return %0 : tensor<1x2x4xf32>
}

// -----

func.func @pool_result(%x: tensor<1x2x5xf32>) -> tensor<1x2x3xf32> {
  // expected-error @+1 {{'accy.pool' op result type should be tensor<1x2x3xf32>, got tensor<1x2x4xf32>}}
  %0 = "accy.pool"(%x) <{kind = "max", window = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 1>, pads_low = array<i64: 0>, pads_high = array<i64: 1>}> : (tensor<1x2x5xf32>) -> tensor<1x2x4xf32>
  func.return %0 : tensor<1x2x4xf32>
}
