// inline: each func.call becomes a copy of the callee's body, callees first
// (so a call inside a callee is inlined too), with the callee's arguments
// read as the call's operands, also inside nested regions. The callees stay.
// RUN: accy-opt %s -p inline | filecheck %s
// RUN: accy-opt %s -p inline,inline | filecheck %s

func.func @scale(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %m = "accy.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = "accy.iterate"(%m) <{count = 2 : i64}> ({
  ^bb0(%v: tensor<4xf32>):
    %d = "accy.add"(%v, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "accy.yield"(%d) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}

// CHECK-LABEL: func.func @twice(%x: tensor<4xf32>)
// CHECK-NEXT:    %[[M:.*]] = accy.mul %x, %x
// CHECK-NEXT:    %[[R:.*]] = "accy.iterate"(%[[M]])
// CHECK-NEXT:    ^bb0(%[[V:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %{{.*}} = accy.add %[[V]], %x
// CHECK:         func.return %[[R]]
func.func @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = func.call @scale(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}

// CHECK-LABEL: func.func @main(%x: tensor<4xf32>)
// CHECK-NEXT:    %[[M1:.*]] = accy.mul %x, %x
// CHECK-NEXT:    %[[R1:.*]] = "accy.iterate"(%[[M1]])
// CHECK:         %[[N:.*]] = accy.neg %[[R1]]
// CHECK-NEXT:    %[[M2:.*]] = accy.mul %[[N]], %[[R1]]
// CHECK-NEXT:    %[[R2:.*]] = "accy.iterate"(%[[M2]])
// CHECK-NEXT:    ^bb0(%[[V2:.*]]: tensor<4xf32>):
// CHECK-NEXT:      %{{.*}} = accy.add %[[V2]], %[[R1]]
// CHECK:         func.return %[[R2]], %[[R1]]
// CHECK-NOT:     func.call
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %n = "accy.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %b = func.call @scale(%n, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %b, %a : tensor<4xf32>, tensor<4xf32>
}
