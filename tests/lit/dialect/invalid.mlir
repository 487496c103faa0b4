// Every verifier error of the accy dialect: one chunk each, each expected on
// the op's line with MLIR's annotations (`expected-error @+1 {{...}}`), which
// --verify-diagnostics checks as mlir-opt does: a missing or unexpected error fails.
// RUN: accy-opt %s --split-input-file --verify-diagnostics

// ---- shared operand checks

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'accy.exp' op operand must be a statically shaped tensor, got tensor<?xf32>}}
  %0 = "accy.exp"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %0 : tensor<?xf32>
}

// -----

func.func @index(%x: tensor<4xindex>) -> tensor<4xindex> {
  // expected-error @+1 {{'accy.neg' op operand has unsupported element type index}}
  %0 = "accy.neg"(%x) : (tensor<4xindex>) -> tensor<4xindex>
  func.return %0 : tensor<4xindex>
}

// -----

// ---- accy.constant

func.func @constant() -> tensor<4xf32> {
  // expected-error @+1 {{'accy.constant' op value type tensor<3xf32> does not match result type tensor<4xf32>}}
  %0 = "accy.constant"() <{value = dense<1.0> : tensor<3xf32>}> : () -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- unary and binary elementwise ops

func.func @unary_float_only(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'accy.exp' op needs a float element type, got i32}}
  %0 = "accy.exp"(%x) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @unary_no_i1(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'accy.neg' op does not take i1 operands}}
  %0 = "accy.neg"(%x) : (tensor<4xi1>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @unary_result(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'accy.exp' op result 'result' has type tensor<4xf64>, but operand 'x' has type tensor<4xf32>: 'x' and 'result' of 'accy.exp' must have one type}}
  %0 = "accy.exp"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// -----

func.func @binary_broadcasting(%x: tensor<4xf32>, %y: tensor<1xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.add' op operand 'rhs' has type tensor<1xf32>, but operand 'lhs' has type tensor<4xf32>: 'lhs', 'rhs' and 'result' of 'accy.add' must have one type}}
  %0 = "accy.add"(%x, %y) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @binary_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'accy.add' op does not take element type i1}}
  %0 = "accy.add"(%x, %x) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @bitwise_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.and' op does not take element type f32}}
  %0 = "accy.and"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @not_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.not' op needs an i1 operand, got f32}}
  %0 = "accy.not"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- accy.cmp, accy.select, accy.cast

func.func @cmp_predicate(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{'accy.cmp' op predicate "less" is not one of eq, ne, lt, le, gt, ge}}
  %0 = "accy.cmp"(%x, %x) <{predicate = "less"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_operands(%x: tensor<4xf32>, %y: tensor<4xf64>) -> tensor<4xi1> {
  // expected-error @+1 {{'accy.cmp' op operand 'rhs' has type tensor<4xf64>, but operand 'lhs' has type tensor<4xf32>: 'lhs' and 'rhs' of 'accy.cmp' must have one type}}
  %0 = "accy.cmp"(%x, %y) <{predicate = "lt"}> : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @cmp_result(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.cmp' op result type should be tensor<4xi1>, got tensor<4xf32>}}
  %0 = "accy.cmp"(%x, %x) <{predicate = "lt"}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @select_cond(%c: tensor<4xi32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.select' op condition must be i1, got i32}}
  %0 = "accy.select"(%c, %x, %x) : (tensor<4xi32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @select_branches(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.select' op operand 'rhs' has type tensor<4xi32>, but operand 'lhs' has type tensor<4xf32>: 'lhs', 'rhs' and 'result' of 'accy.select' must have one type}}
  %0 = "accy.select"(%c, %x, %y) : (tensor<4xi1>, tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @select_shape(%c: tensor<2xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.select' op condition shape [2] differs from value shape [4]}}
  %0 = "accy.select"(%c, %x, %x) : (tensor<2xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @cast_shape(%x: tensor<4xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'accy.cast' op changes the shape from [4] to [2]}}
  %0 = "accy.cast"(%x) : (tensor<4xf32>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}

// -----

func.func @cast_result(%x: tensor<4xf32>) -> tensor<4xindex> {
  // expected-error @+1 {{'accy.cast' op result has unsupported element type index}}
  %0 = "accy.cast"(%x) : (tensor<4xf32>) -> tensor<4xindex>
  func.return %0 : tensor<4xindex>
}

// -----

// ---- shape ops

func.func @shape_elem(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'accy.reshape' op changes the element type from f32 to f64}}
  %0 = "accy.reshape"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// -----

func.func @reshape_count(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{'accy.reshape' op cannot reshape 4 elements into [5] (5 elements)}}
  %0 = "accy.reshape"(%x) : (tensor<4xf32>) -> tensor<5xf32>
  func.return %0 : tensor<5xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'accy.transpose' op permutation [1, 1] is not a permutation of 0..1}}
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 1>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_result(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.transpose' op result shape should be [3, 2], got [2, 3]}}
  %0 = "accy.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_count(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.broadcast' op dims has 2 entries, operand rank is 1}}
  %0 = "accy.broadcast"(%x) <{dims = array<i64: 0, 1>}> : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_range(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.broadcast' op dims [2] must be distinct result dims below 2}}
  %0 = "accy.broadcast"(%x) <{dims = array<i64: 2>}> : (tensor<3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_order(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.broadcast' op dims [1, 0] must be increasing}}
  %0 = "accy.broadcast"(%x) <{dims = array<i64: 1, 0>}> : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @broadcast_size(%x: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'accy.broadcast' op operand dim 0 of size 2 cannot broadcast to result dim 1 of size 3}}
  %0 = "accy.broadcast"(%x) <{dims = array<i64: 1>}> : (tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_entries(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.slice' op start, limit and stride must each have 1 entries}}
  %0 = "accy.slice"(%x) <{start = array<i64: 0>, limit = array<i64: 2, 2>, stride = array<i64: 1>}> : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @slice_stride(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.slice' op stride 0 of dim 0 must be positive}}
  %0 = "accy.slice"(%x) <{start = array<i64: 0>, limit = array<i64: 2>, stride = array<i64: 0>}> : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @slice_bounds(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.slice' op dim 0: need 0 <= start (3) <= limit (5) <= size (4)}}
  %0 = "accy.slice"(%x) <{start = array<i64: 3>, limit = array<i64: 5>, stride = array<i64: 1>}> : (tensor<4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @slice_result(%x: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'accy.slice' op result shape should be [2], got [3]}}
  %0 = "accy.slice"(%x) <{start = array<i64: 0>, limit = array<i64: 4>, stride = array<i64: 2>}> : (tensor<4xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

// ---- accy.concat

func.func @concat_empty() -> tensor<0xf32> {
  // expected-error @+1 {{'accy.concat' op needs at least one operand}}
  %0 = "accy.concat"() <{axis = 0 : i64}> : () -> tensor<0xf32>
  func.return %0 : tensor<0xf32>
}

// -----

func.func @concat_axis(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'accy.concat' op axis 1 is out of range for rank 1}}
  %0 = "accy.concat"(%x, %x) <{axis = 1 : i64}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @concat_elem(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<8xf32> {
  // expected-error @+1 {{'accy.concat' op operand #1 has element type i32, expected f32}}
  %0 = "accy.concat"(%x, %y) <{axis = 0 : i64}> : (tensor<4xf32>, tensor<4xi32>) -> tensor<8xf32>
  func.return %0 : tensor<8xf32>
}

// -----

func.func @concat_shape(%x: tensor<2x4xf32>, %y: tensor<2x3xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'accy.concat' op operand #1 shape [2, 3] does not match [2, 4] off axis 0}}
  %0 = "accy.concat"(%x, %y) <{axis = 0 : i64}> : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}

// -----

func.func @concat_result(%x: tensor<4xf32>) -> tensor<9xf32> {
  // expected-error @+1 {{'accy.concat' op result type should be tensor<8xf32>, got tensor<9xf32>}}
  %0 = "accy.concat"(%x, %x) <{axis = 0 : i64}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<9xf32>
  func.return %0 : tensor<9xf32>
}

// -----

// ---- accy.dot_general

func.func @dot_elem(%a: tensor<2x3xf32>, %b: tensor<3x4xi32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.dot_general' op operands must share a numeric element type, got f32 and i32}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<2x3xf32>, tensor<3x4xi32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @dot_batch_len(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.dot_general' op lhs_batch and rhs_batch must have the same length}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 1>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @dot_contract_len(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.dot_general' op lhs_contract and rhs_contract must have the same length}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @dot_range(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.dot_general' op lhs dimension out of range in [2] for rank 2}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_contract = array<i64: 0>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @dot_repeat(%a: tensor<3x3xf32>, %b: tensor<3x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'accy.dot_general' op lhs batch and contracting dimensions [0, 0] repeat a dimension}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 0>, rhs_contract = array<i64: 1>}> : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// -----

func.func @dot_batch_size(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.dot_general' op batch dims differ: lhs dim 0 is 2, rhs dim 0 is 5}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64: 0>, rhs_batch = array<i64: 0>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 1>}> : (tensor<2x3xf32>, tensor<5x3xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @dot_contract_size(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'accy.dot_general' op contracting dims differ: lhs dim 1 is 3, rhs dim 0 is 4}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  func.return %0 : tensor<2x5xf32>
}

// -----

func.func @dot_result(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'accy.dot_general' op result type should be tensor<2x4xf32>, got tensor<4x2xf32>}}
  %0 = "accy.dot_general"(%a, %b) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

// ---- accy.reduce, accy.scan

func.func @reduce_kind(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'accy.reduce' op kind "avg" is not one of sum, prod, max, min, mean}}
  %0 = "accy.reduce"(%x) <{kind = "avg", axes = array<i64: 0>}> : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @reduce_mean_int(%x: tensor<4xi32>) -> tensor<i32> {
  // expected-error @+1 {{'accy.reduce' op mean does not take element type i32}}
  %0 = "accy.reduce"(%x) <{kind = "mean", axes = array<i64: 0>}> : (tensor<4xi32>) -> tensor<i32>
  func.return %0 : tensor<i32>
}

// -----

func.func @reduce_axis(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @+1 {{'accy.reduce' op axes 1 is out of range for rank 1}}
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 1>}> : (tensor<4xf32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @reduce_repeat(%x: tensor<2x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.reduce' op axes [0, -2] repeat a dimension}}
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 0, -2>}> : (tensor<2x4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @reduce_result(%x: tensor<2x4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'accy.reduce' op result type should be tensor<4xf32>, got tensor<2xf32>}}
  %0 = "accy.reduce"(%x) <{kind = "sum", axes = array<i64: 0>}> : (tensor<2x4xf32>) -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}

// -----

func.func @scan_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.scan' op kind "mean" is not one of sum, prod, max, min}}
  %0 = "accy.scan"(%x) <{kind = "mean", axis = 0 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @scan_bool(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'accy.scan' op does not take element type i1}}
  %0 = "accy.scan"(%x) <{kind = "sum", axis = 0 : i64}> : (tensor<4xi1>) -> tensor<4xi1>
  func.return %0 : tensor<4xi1>
}

// -----

func.func @scan_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.scan' op axis -2 is out of range for rank 1}}
  %0 = "accy.scan"(%x) <{kind = "sum", axis = -2 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// ---- accy.softmax, accy.log_softmax, accy.layer_norm

func.func @softmax_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'accy.softmax' op needs a float element type, got i32}}
  %0 = "accy.softmax"(%x) <{axis = 0 : i64}> : (tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @softmax_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{'accy.log_softmax' op needs an operand of rank >= 1}}
  %0 = "accy.log_softmax"(%x) <{axis = 0 : i64}> : (tensor<f32>) -> tensor<f32>
  func.return %0 : tensor<f32>
}

// -----

func.func @softmax_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.softmax' op axis 1 is out of range for rank 1}}
  %0 = "accy.softmax"(%x) <{axis = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @layer_norm_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'accy.layer_norm' op needs a float operand of rank >= 1, got tensor<4xi32>}}
  %0 = "accy.layer_norm"(%x, %x, %x) <{epsilon = 1.0e-05 : f32}> : (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @layer_norm_gamma(%x: tensor<2x4xf32>, %g: tensor<2xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.layer_norm' op gamma must be tensor<4xf32> (the last dim of x), got tensor<2xf32>}}
  %0 = "accy.layer_norm"(%x, %g, %b) <{epsilon = 1.0e-05 : f32}> : (tensor<2x4xf32>, tensor<2xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_result(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'accy.layer_norm' op result type should be tensor<2x4xf32>, got tensor<4x2xf32>}}
  %0 = "accy.layer_norm"(%x, %g, %g) <{epsilon = 1.0e-05 : f32}> : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}

// -----

func.func @layer_norm_negative_epsilon(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.layer_norm' op epsilon must be a finite number >= 0, got -1e-05}}
  %0 = "accy.layer_norm"(%x, %g, %g) <{epsilon = -1.0e-05 : f32}> : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @layer_norm_nan_epsilon(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.layer_norm' op epsilon must be a finite number >= 0, got nan}}
  %0 = "accy.layer_norm"(%x, %g, %g) <{epsilon = 0x7FC00000 : f32}> : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

// ---- accy.attention

func.func @attention_elem(%q: tensor<2x4xf32>, %k: tensor<3x4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'accy.attention' op q, k and v must share a float element type}}
  %0 = "accy.attention"(%q, %k, %k) <{scale = 0.5 : f32}> : (tensor<2x4xf32>, tensor<3x4xf16>, tensor<3x4xf16>) -> tensor<2x4xf32>
  func.return %0 : tensor<2x4xf32>
}

// -----

func.func @attention_rank(%q: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.attention' op q, k and v must have one rank >= 2, got 1, 1, 1}}
  %0 = "accy.attention"(%q, %q, %q) <{scale = 0.5 : f32}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @attention_batch(%q: tensor<2x3x4xf32>, %k: tensor<5x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'accy.attention' op batch dims of q [2], k [5], v [5] differ}}
  %0 = "accy.attention"(%q, %k, %k) <{scale = 0.5 : f32}> : (tensor<2x3x4xf32>, tensor<5x3x4xf32>, tensor<5x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %0 : tensor<2x3x4xf32>
}

// -----

func.func @attention_head(%q: tensor<3x4xf32>, %k: tensor<5x8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'accy.attention' op q and k head dims differ: 4 and 8}}
  %0 = "accy.attention"(%q, %k, %k) <{scale = 0.5 : f32}> : (tensor<3x4xf32>, tensor<5x8xf32>, tensor<5x8xf32>) -> tensor<3x8xf32>
  func.return %0 : tensor<3x8xf32>
}

// -----

func.func @attention_seq(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<6x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'accy.attention' op k and v sequence lengths differ: 5 and 6}}
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.5 : f32}> : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<6x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

func.func @attention_result(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'accy.attention' op result type should be tensor<3x2xf32>, got tensor<3x4xf32>}}
  %0 = "accy.attention"(%q, %k, %v) <{scale = 0.5 : f32}> : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// ---- accy.iterate, accy.yield

func.func @iterate_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.iterate' op count must be >= 0, got -1}}
  %0 = "accy.iterate"(%x) <{count = -1 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    "accy.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @iterate_args(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.iterate' op block argument types must match the init types (tensor<4xf32>)}}
  %0 = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf64>):
    "accy.yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @iterate_results(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'accy.iterate' op result types must match the init types (tensor<4xf32>)}}
  %0 = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    "accy.yield"(%a) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// -----

func.func @iterate_terminator(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{'accy.exp' op Operation accy.exp terminates block in single-block region but is not a terminator}}
    %1 = "accy.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @iterate_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.iterate' op body must end in accy.yield}}
  %0 = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @iterate_yield(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.iterate' op yielded types (tensor<4xi32>) must match (tensor<4xf32>)}}
  %0 = "accy.iterate"(%x) <{count = 2 : i64}> ({
  ^bb0(%a: tensor<4xf32>):
    "accy.yield"(%y) : (tensor<4xi32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.yield' op expects parent op 'accy.iterate'}}
  "accy.yield"(%x) : (tensor<4xf32>) -> ()
}

// -----

// ---- accy.kernel_call

func.func @kernel_no_result(%x: tensor<4xf32>) {
  // expected-error @+1 {{'accy.kernel_call' op must produce at least one result}}
  "accy.kernel_call"(%x) <{callee = @k}> : (tensor<4xf32>) -> ()
  func.return
}

// -----

func.func @kernel_sizes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.kernel_call' op global_size must have 1 to 3 positive entries}}
  %0 = "accy.kernel_call"(%x) <{callee = @k, global_size = array<i64: 4, 0>}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @kernel_input(%x: tensor<?xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.kernel_call' op input #0 must be a statically shaped tensor, got tensor<?xf32>}}
  %0 = "accy.kernel_call"(%x) <{callee = @k}> : (tensor<?xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @kernel_missing(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.kernel_call' op callee @kernels::@absent is not defined in the module (it must name a gpu.func in a gpu.module, e.g. @kernels::@k)}}
  %0 = "accy.kernel_call"(%x) <{callee = @kernels::@absent}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @kernel_not_gpu_func(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.kernel_call' op callee @kernel_not_gpu_func is a 'func.func', not a gpu.func}}
  %0 = "accy.kernel_call"(%x) <{callee = @kernel_not_gpu_func}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @kernel_arity(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'accy.kernel_call' op callee @kernels::@k takes 1 buffer(s); the call passes 1 input(s) and 1 output(s)}}
  %0 = "accy.kernel_call"(%x) <{callee = @kernels::@k}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<4xf32>):
    "gpu.return"() : () -> ()
  }) {sym_name = "k"} : () -> ()
}) : () -> ()
