// RUN: accy-opt %s -p 'set-target{profile=gpu math=fast}' | filecheck %s --check-prefix=GPU
// RUN: accy-opt %s -p 'set-target{vector_width=8}' | filecheck %s --check-prefix=WIDTH
// RUN: not accy-opt %s -p 'set-target{math=slow}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: accy-opt %s | accy-opt | filecheck %s --check-prefix=ROUND
// RUN: accy-opt %s -p 'set-target{fp16=false}' | accy-opt | filecheck %s --check-prefix=NOHALF

builtin.module attributes {accy.target = #accy.target<profile = "cpu", vector_width = 4>} {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}

// GPU: accy.target = #accy.target<profile = "gpu", format = "opencl-c", math = "fast", max_work_group_size = 1024, local_mem_bytes = 49152, vector_width = 4, compute_units = 132, cheap_barriers = true, fp16 = true, fp64 = true>
// WIDTH: accy.target = #accy.target<profile = "cpu", format = "opencl-c", math = "exact", max_work_group_size = 4096, local_mem_bytes = 65536, vector_width = 8, compute_units = 2, cheap_barriers = false, fp16 = true, fp64 = true>
// BAD: set-target: target math must be one of exact, fast; got 'slow'
// ROUND: accy.target = #accy.target<profile = "cpu", format = "opencl-c", math = "exact", max_work_group_size = 4096, local_mem_bytes = 65536, vector_width = 4, compute_units = 2, cheap_barriers = false, fp16 = true, fp64 = true>
// NOHALF: accy.target = #accy.target<profile = "cpu", format = "opencl-c", math = "exact", max_work_group_size = 4096, local_mem_bytes = 65536, vector_width = 4, compute_units = 2, cheap_barriers = false, fp16 = false, fp64 = true>
