"""The dialect registry: a `Context` that knows every dialect accy reads or
writes, each loaded into it when first needed.

It lives with the dialects so that every layer (the parser, the passes, the
tools) can read IR without loading the runtime or the passes. Only builtin
is loaded at once; the others are registered by name (xDSL's
`Context.register_dialect`) and loaded when the parser first meets one of
their ops, attributes or types, their Python module imported then: parsing
a tensor program imports none of the kernel dialects math, scf and
accy_kernel (the dialects' own imports bring the others). A compile imports
them all anyway (its passes build kernel IR); what makes importing them
cheaper is lazy_formats.py.

A dialect may define attributes named in another's namespace (accy_host
defines `#accy.target` and `#gpu.address_space`): `COMPANIONS` loads such a
dialect with the one whose name they carry, or the parser would find the
namespace loaded and the attribute missing (tests/unit/test_dialect_context.py
checks the table against the dialects themselves).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from xdsl.context import Context
from xdsl.ir import Dialect

# Before any dialect is imported: their ops read their formats lazily.
import accy.dialects.lazy_formats  # noqa: F401

#: Tensor programs (builtin, func, accy), kernel IR (arith, math, memref, scf,
#: vector, gpu, accy_kernel) and the host schedule (accy_host): each
#: dialect's name, and the module and name of its `Dialect`.
DIALECTS: dict[str, tuple[str, str]] = {
    "builtin": ("xdsl.dialects.builtin", "Builtin"),
    "func": ("xdsl.dialects.func", "Func"),
    "arith": ("xdsl.dialects.arith", "Arith"),
    "math": ("xdsl.dialects.math", "Math"),
    "memref": ("xdsl.dialects.memref", "MemRef"),
    "scf": ("xdsl.dialects.scf", "Scf"),
    "vector": ("xdsl.dialects.vector", "Vector"),
    "gpu": ("xdsl.dialects.gpu", "GPU"),
    "accy": ("accy.dialects.accy", "Accy"),
    "accy_host": ("accy.dialects.host", "AccyHost"),
    "accy_kernel": ("accy.dialects.kernel", "AccyKernel"),
}

#: The dialects loaded along with a dialect, because they define constructs
#: in its namespace (see the module docstring).
COMPANIONS: dict[str, tuple[str, ...]] = {
    "accy": ("accy_host",),
    "gpu": ("accy_host",),
}


def dialect_named(name: str) -> Dialect:
    """The `Dialect` of `DIALECTS` named `name`, its module imported."""
    module, attr = DIALECTS[name]
    return getattr(import_module(module), attr)


def make_context() -> Context:
    """A fresh context that knows every dialect of `DIALECTS`: builtin
    loaded, the others loaded as they are first used."""
    ctx = Context()
    ctx.load_dialect(dialect_named("builtin"))
    for name in DIALECTS:
        if name != "builtin":
            ctx.register_dialect(name, _loader(ctx, name))
    return ctx


def _loader(ctx: Context, name: str) -> Callable[[], Dialect]:
    def load() -> Dialect:
        for companion in COMPANIONS.get(name, ()):
            ctx.get_optional_dialect(companion)  # loads it, once
        return dialect_named(name)

    return load
