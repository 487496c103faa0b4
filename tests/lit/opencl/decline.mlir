// RUN: not accy-opt %s -t opencl 2>&1 | filecheck %s
// Ops outside the kernel IR conventions are declined by name.

builtin.module attributes {gpu.container_module} {
  "gpu.module"() <{sym_name = "kernels"}> ({
    "gpu.func"() <{function_type = (memref<4xf32>) -> (), kernel}> ({
    ^bb0(%a: memref<4xf32>):
      %m = memref.alloc() : memref<4xf32>
      "gpu.return"() : () -> ()
    }) {sym_name = "main_k0_bad"} : () -> ()
  }) : () -> ()
}

// CHECK: error: opencl: kernel @main_k0_bad: cannot emit 'memref.alloc': not part of the kernel IR conventions
