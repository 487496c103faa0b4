// RUN: accy-opt %s --verify-bounds | filecheck %s --check-prefix=OK
// RUN: sed -e 's/cmpi slt, %i, %n/cmpi sle, %i, %n/' %s | not accy-opt --verify-bounds 2>&1 | filecheck %s --check-prefix=OFF-BY-ONE
// RUN: sed -e 's/global_size = array<i64: 16>, //' %s | not accy-opt --verify-bounds 2>&1 | filecheck %s --check-prefix=NO-LAUNCH
// RUN: sed -e 's/global_size = array<i64: 16>/global_size = array<i64: 17>/' %s | not accy-opt --verify-bounds 2>&1 | filecheck %s --check-prefix=NOT-A-MULTIPLE

// A custom kernel called by accy.kernel_call, proved under the call's
// launch (16 work-items for 12 elements, guarded); an off-by-one guard is
// refused with the op, the index and its range; a kernel with no launch
// size anywhere cannot be proved.
func.func @main(%x: tensor<12xf32>) -> tensor<12xf32> {
  %y = "accy.kernel_call"(%x) <{callee = @kernels::@twice, global_size = array<i64: 16>, local_size = array<i64: 8>}> : (tensor<12xf32>) -> tensor<12xf32>
  func.return %y : tensor<12xf32>
}
"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<12xf32>, memref<12xf32>) -> (), kernel}> ({
  ^bb0(%in: memref<12xf32>, %out: memref<12xf32>):
    %n = arith.constant 12 : index
    %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
    %ok = arith.cmpi slt, %i, %n : index
    scf.if %ok {
      %v = memref.load %in[%i] : memref<12xf32>
      %d = arith.addf %v, %v : f32
      memref.store %d, %out[%i] : memref<12xf32>
    }
    "gpu.return"() : () -> ()
  }) {sym_name = "twice"} : () -> ()
}) : () -> ()

// OK: accy.kernel_call @kernels::@twice
// OFF-BY-ONE: error: kernel @twice: 'memref.load' loads from buffer #0 (memref<12xf32>) at index `global_id(x)`, which ranges over [0, 12]; valid indices are [0, 11] (global size 16, local size 8)
// OFF-BY-ONE: error: kernel @twice: 'memref.store' stores to buffer #1 (memref<12xf32>) at index `global_id(x)`, which ranges over [0, 12]
// NO-LAUNCH: error: kernel @twice: 'accy.kernel_call' of @kernels::@twice states no launch size: give it global_size (and local_size), or put accy.global_size on the kernel; its accesses cannot be proved
// NOT-A-MULTIPLE: error: kernel @twice: 'accy.kernel_call' of @kernels::@twice: global size [17] is not a multiple of local size [8]; its accesses cannot be proved
