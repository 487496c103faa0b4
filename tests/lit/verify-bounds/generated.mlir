// RUN: accy-opt %s -p kernelize --verify-bounds | filecheck %s
// RUN: accy-opt %s -p 'set-target{profile=gpu},kernelize' --verify-bounds | filecheck %s
// RUN: accy-opt %s -p 'set-target{format=llvm-ir},kernelize' --verify-bounds | filecheck %s

// Every kernel kernelize makes, proved in bounds under its launch (a
// padded launch, a split reduction, a row pipeline): the IR is printed.
func.func @main(%x: tensor<37x45xf32>) -> (tensor<37x45xf32>, tensor<37xf32>) {
  %s = "accy.softmax"(%x) <{axis = -1 : i64}> : (tensor<37x45xf32>) -> tensor<37x45xf32>
  %e = "accy.exp"(%x) : (tensor<37x45xf32>) -> tensor<37x45xf32>
  %r = "accy.reduce"(%e) <{kind = "sum", axes = array<i64: 1>}> : (tensor<37x45xf32>) -> tensor<37xf32>
  func.return %s, %r : tensor<37x45xf32>, tensor<37xf32>
}

// CHECK: "gpu.launch_func"
// CHECK: "gpu.func"
