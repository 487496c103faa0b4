// RUN: accy-opt %s -p 'set-target{profile=gpu math=fast}' | filecheck %s --check-prefix=GPU
// RUN: accy-opt %s -p 'set-target{vector_width=8}' | filecheck %s --check-prefix=WIDTH
// RUN: not accy-opt %s -p 'set-target{math=slow}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: accy-opt %s | accy-opt | filecheck %s --check-prefix=ROUND
// RUN: accy-opt %s -p 'set-target{fp16=false}' | accy-opt | filecheck %s --check-prefix=NOHALF
// RUN: accy-opt %s -p 'set-target{reduce_threads=64 dot_tile=8}' | accy-opt | filecheck %s --check-prefix=SIZES
// RUN: not accy-opt %s -p 'set-target{row_threads=0}' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not accy-opt %s -p 'set-target{compute_units=2}' 2>&1 | filecheck %s --check-prefix=GONE

// The attribute holds the fields the module sets, and nothing else: the
// others are filled in by whoever reads it (the profile's defaults for a pass,
// the device for the runtime). `profile` starts over; other fields add up.

builtin.module attributes {accy.target = #accy.target<profile = "cpu", vector_width = 4>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// GPU: accy.target = #accy.target<profile = "gpu", math = "fast">}
// WIDTH: accy.target = #accy.target<profile = "cpu", vector_width = 8>}
// BAD: set-target: target math must be one of exact, fast; got 'slow'
// ROUND: accy.target = #accy.target<profile = "cpu", vector_width = 4>}
// NOHALF: accy.target = #accy.target<profile = "cpu", vector_width = 4, fp16 = false>}
// SIZES: accy.target = #accy.target<profile = "cpu", vector_width = 4, reduce_threads = 64, dot_tile = 8>}
// ZERO: set-target: target row_threads must be a positive integer; got 0
// GONE: invalid options for pass 'set-target'{{.*}}compute_units
