// RUN: accy-opt %s --split-input-file --verify-bounds | filecheck %s --check-prefix=OK
// RUN: sed -e 's/%limit = arith.constant 8/%limit = arith.constant 10/' %s | not accy-opt --split-input-file --verify-bounds 2>&1 | filecheck %s --check-prefix=BAD

// What the verifier proves: a clamp (select of a compare) keeps a gathered
// index in its buffer; an unsigned compare guards a signed index from both
// sides; a loop stepping by 4 to a multiple of 4 ends 4 before it; the
// ends of a remainder. Stopping at 10 instead of 8 is refused: i0 reaches
// 8, and 8 + 3 = 11 is past the 10 elements.

"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<10xi32>, memref<10xf32>, memref<10xf32>) -> (), kernel}> ({
  ^bb0(%idx: memref<10xi32>, %x: memref<10xf32>, %out: memref<10xf32>):
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c9 = arith.constant 9 : index
    %c10 = arith.constant 10 : index
    %i = "gpu.global_id"() <{dimension = #gpu<dim x>}> : () -> index
    %raw = memref.load %idx[%i] : memref<10xi32>
    %j = arith.index_cast %raw : i32 to index
    %low = arith.cmpi slt, %j, %c0 : index
    %j0 = arith.select %low, %c0, %j : index
    %high = arith.cmpi sgt, %j0, %c9 : index
    %j1 = arith.select %high, %c9, %j0 : index
    %v = memref.load %x[%j1] : memref<10xf32>
    %in = arith.cmpi ult, %j, %c10 : index
    scf.if %in {
      %w = memref.load %x[%j] : memref<10xf32>
      memref.store %w, %out[%i] : memref<10xf32>
    }
    %r = arith.remsi %j1, %c4 : index
    %u = memref.load %x[%r] : memref<10xf32>
    memref.store %v, %out[%i] : memref<10xf32>
    "gpu.return"() : () -> ()
  }) {sym_name = "gather", accy.global_size = array<i64: 10>} : () -> ()
}) : () -> ()

// -----

"gpu.module"() <{sym_name = "kernels"}> ({
  "gpu.func"() <{function_type = (memref<10xf32>, memref<10xf32>) -> (), kernel}> ({
  ^bb0(%x: memref<10xf32>, %out: memref<10xf32>):
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %limit = arith.constant 8 : index
    scf.for %i = %c0 to %limit step %c4 {
      %v = vector.load %x[%i] : memref<10xf32>, vector<4xf32>
      vector.store %v, %out[%i] : memref<10xf32>, vector<4xf32>
    }
    "gpu.return"() : () -> ()
  }) {sym_name = "copy_vectors", accy.global_size = array<i64: 1>} : () -> ()
}) : () -> ()

// OK: sym_name = "gather"
// OK: sym_name = "copy_vectors"
// BAD: error: kernel @copy_vectors: 'vector.load' loads from buffer #0 (memref<10xf32>) 4 elements at index `i0`, which ranges over [0, 8]; a 4-wide access needs its first index in [0, 6] (global size 1, local size 1)
