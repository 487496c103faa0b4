// Row softmax and log_softmax as named ops (rows of 17), and a column softmax.
func.func @main(%x: tensor<5x17xf32>) -> (tensor<5x17xf32>, tensor<5x17xf32>, tensor<5x17xf32>) {
  %0 = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<5x17xf32>) -> tensor<5x17xf32>
  %1 = "accy.log_softmax"(%x) <{axis = 1 : i64}> : (tensor<5x17xf32>) -> tensor<5x17xf32>
  %2 = "accy.softmax"(%x) <{axis = 0 : i64}> : (tensor<5x17xf32>) -> tensor<5x17xf32>
  func.return %0, %1, %2 : tensor<5x17xf32>, tensor<5x17xf32>, tensor<5x17xf32>
}
