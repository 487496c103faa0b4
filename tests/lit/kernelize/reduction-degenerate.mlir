// RUN: accy-opt %s -p set-target{profile=gpu},kernelize | filecheck %s
// RUN: accy-opt %s -p set-target{profile=gpu},kernelize -t opencl | filecheck %s --check-prefix=CL

// A 1x1 reduction on the GPU profile. Every coordinate is the constant 0, so
// the reduced element's coordinates (made from the loop's induction variable)
// and the output's (made from the work-group id) are the same tuple: the
// output store must index by a value that dominates it (the work-group id),
// never by the induction variable of the loop before it.
func.func @main(%x: tensor<1x1xf32>, %y: tensor<1x1xf32>) -> (tensor<1xf32>, tensor<1x1xf32>) {
  %e = "accy.exp"(%x) : (tensor<1x1xf32>) -> tensor<1x1xf32>
  %m = "accy.mul"(%e, %y) : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  %s = "accy.reduce"(%m) <{kind = "sum", axes = array<i64: 1>}> : (tensor<1x1xf32>) -> tensor<1xf32>
  func.return %s, %m : tensor<1xf32>, tensor<1x1xf32>
}

// CHECK:       "gpu.func"() <{function_type = (memref<1xf32>, memref<1xf32>) -> (), kernel}> ({
// CHECK-NEXT:  ^bb0(%[[IN:.*]]: memref<1xf32>, %[[OUT:.*]]: memref<1xf32>):
// CHECK:         %[[GROUP:.*]] = "gpu.block_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK:         %[[TID:.*]] = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
// CHECK:         %[[SHARE:.*]] = scf.for %[[IV:.*]] = %[[TID]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:           memref.load %[[IN]]
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    memref.store %[[SHARE]], %[[SCRATCH:.*]][%[[TID]]] : memref<1xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT:    "gpu.barrier"()
// CHECK:         scf.if
// CHECK-NEXT:      %[[TOTAL:.*]] = memref.load %[[SCRATCH]]
// CHECK-NEXT:      memref.store %[[TOTAL]], %[[OUT]][%[[GROUP]]] : memref<1xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    "gpu.return"() : () -> ()
// CHECK-NEXT:  }) {sym_name = "main_k1_reduction", accy.kind = "reduction", gpu.known_block_size = array<i32: 1, 1, 1>} : () -> ()

// CL-LABEL:  __kernel __attribute__((reqd_work_group_size(1, 1, 1))) void main_k1_reduction(
// CL:          long [[GROUP:v[0-9]+]] = get_group_id(0);
// CL:          for (long [[IV:i[0-9]+]] =
// CL:          }
// CL-NOT:      [[IV]]
// CL:          b1[[[GROUP]]] =
// CL-NEXT:   }
// CL-NEXT: }
