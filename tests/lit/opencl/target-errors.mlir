// RUN: not accy-opt %s 2>&1 | filecheck %s

builtin.module attributes {accy.target = #accy.target<profile = "tpu">} {
}

// CHECK: target profile must be one of cpu, gpu; got 'tpu'
