"""The dialect registry: a `Context` with every dialect accy reads or writes.

It lives with the dialects so that every layer (the parser, the passes, the
tools) can read IR without loading the runtime or the passes.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.gpu import GPU
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.vector import Vector

from accy.dialects.accy import Accy
from accy.dialects.host import AccyHost
from accy.dialects.kernel import AccyKernel

#: Tensor programs (builtin, func, accy), kernel IR (arith, math, memref, scf,
#: vector, gpu, accy_kernel) and the host schedule (accy_host).
DIALECTS = (Builtin, Func, Arith, Math, MemRef, Scf, Vector, GPU, Accy, AccyHost, AccyKernel)


def make_context() -> Context:
    """A fresh context with every dialect accy reads or writes loaded."""
    ctx = Context()
    for dialect in DIALECTS:
        ctx.load_dialect(dialect)
    return ctx
