// RUN: accy-opt %s -p kernelize | filecheck %s
// RUN: accy-opt %s -p 'set-target{format=llvm-ir},kernelize' | filecheck %s --check-prefix=LLVM
// RUN: accy-opt %s -p kernelize -t opencl | filecheck %s --check-prefix=CL

// accy.kernel_call is a work item of its own: kernelize launches the custom
// kernel as it is, with the call's launch sizes, between the generated
// kernels. For the LLVM IR format, a kernel with work-group memory and a
// barrier is launched in its work-group-per-work-item form (one work-item per
// work-group: work_groups.py), and the original, launched by nothing, goes.
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = "accy.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %r = "accy.kernel_call"(%e) <{callee = @kernels::@reverse4, global_size = array<i64: 8>, local_size = array<i64: 4>}> : (tensor<8xf32>) -> tensor<8xf32>
  func.return %r : tensor<8xf32>
}
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<8xf32>, memref<8xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<8xf32>, %out: memref<8xf32>):
    %c3 = arith.constant 3 : index
    %tile = memref.alloca() : memref<4xf32, #gpu.address_space<workgroup>>
    %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
    %t = "gpu.thread_id"() <{dimension = #gpu<dim x>}> : () -> index
    %v = memref.load %in[%i] : memref<8xf32>
    memref.store %v, %tile[%t] : memref<4xf32, #gpu.address_space<workgroup>>
    "gpu.barrier"() : () -> ()
    %j = arith.subi %c3, %t : index
    %w = memref.load %tile[%j] : memref<4xf32, #gpu.address_space<workgroup>>
    memref.store %w, %out[%i] : memref<8xf32>
    "gpu.return"() : () -> ()
  }) {sym_name = "reverse4"} : () -> ()
}) : () -> ()

// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@main_k0_elementwise
// CHECK: "gpu.launch_func"({{.*}}) <{kernel = @kernels::@reverse4
// CHECK: sym_name = "reverse4"

// LLVM: %[[GROUPS:.*]] = arith.constant 2 : index
// LLVM-COUNT-5: arith.constant 1 : index
// LLVM-NEXT: "gpu.launch_func"(%[[GROUPS]], {{.*}}) <{kernel = @kernels::@reverse4_groups_2x1x1_4x1x1
// LLVM-NOT: "gpu.barrier"
// LLVM: memref.alloca() : memref<4xf32>
// LLVM: "gpu.block_id"
// LLVM: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// LLVM: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<4xf32>
// LLVM: scf.for %[[T2:.*]] = %{{.*}} to %{{.*}} step
// LLVM: memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// LLVM: sym_name = "reverse4_groups_2x1x1_4x1x1"
// LLVM-NOT: sym_name = "reverse4"}

// CL: __kernel void reverse4(
// CL: barrier(CLK_LOCAL_MEM_FENCE)
// CL: __kernel void main_k0_elementwise
