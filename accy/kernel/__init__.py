"""Custom kernels: kernel IR written by hand in Python (docs/custom-kernels.md).

    from accy.kernel import Kernel, MemScope, MemLayout, DeviceId
    k = Kernel(DeviceId.AUTO)
    ...
    (y,) = k.compile().forward([x], [(n,)])

`Kernel` builds the kernel (builder.py); `compile()` verifies it, every load
and store proved in bounds, and builds it for its device (compiled.py);
`CompiledKernel.forward` runs it.
"""

from accy.kernel.builder import Buffer, DeviceId, Kernel, KernelError, MemLayout, MemScope, Value
from accy.kernel.compiled import CompiledKernel

__all__ = ["Buffer", "CompiledKernel", "DeviceId", "Kernel", "KernelError", "MemLayout", "MemScope", "Value"]
