// A recurrent cell run 5 times with accy.iterate: h = tanh(h·W + x) and a
// step counter c = c + 1 carried as i32.
func.func @main(%h0: tensor<3x17xf32>, %w: tensor<17x17xf32>, %x: tensor<3x17xf32>, %c0: tensor<1xi32>) -> (tensor<3x17xf32>, tensor<1xi32>) {
  %h, %c = "accy.iterate"(%h0, %c0) <{count = 5 : i64}> ({
  ^bb0(%hi: tensor<3x17xf32>, %ci: tensor<1xi32>):
    %0 = "accy.dot_general"(%hi, %w) <{lhs_batch = array<i64>, rhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}> : (tensor<3x17xf32>, tensor<17x17xf32>) -> tensor<3x17xf32>
    %1 = "accy.add"(%0, %x) : (tensor<3x17xf32>, tensor<3x17xf32>) -> tensor<3x17xf32>
    %2 = "accy.tanh"(%1) : (tensor<3x17xf32>) -> tensor<3x17xf32>
    %one = "accy.constant"() <{value = dense<1> : tensor<1xi32>}> : () -> tensor<1xi32>
    %3 = "accy.add"(%ci, %one) : (tensor<1xi32>, tensor<1xi32>) -> tensor<1xi32>
    "accy.yield"(%2, %3) : (tensor<3x17xf32>, tensor<1xi32>) -> ()
  }) : (tensor<3x17xf32>, tensor<1xi32>) -> (tensor<3x17xf32>, tensor<1xi32>)
  func.return %h, %c : tensor<3x17xf32>, tensor<1xi32>
}
