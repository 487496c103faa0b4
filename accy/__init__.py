"""accy: a pass-managed tensor compiler toolkit on xDSL.

The Python API:

    import accy
    module = accy.parse_module("prog.mlir")          # or .mlir text
    exe = accy.compile(module, device="reference")   # or "opencl", "opencl:1"
    exe = accy.compile(module, device="llvm", tune=True)  # tuned first (docs/tuning.md)
    accy.tune(module, device="llvm").module           # the tuned module: #accy.target fields set
    (y,) = exe(x)                                     # numpy in, numpy out
    a = accy.device_put(x, exe.device)                # an accy.Array: stays on the device
    (h,) = exe(a, to_host=False)                      # device arrays in and out, no copy
    accy.reference.run(module, "main", x)             # the numpy oracle
    accy.PassManager([...]).run(module)               # pipelines with cached analyses
    accy.register_pass(MyPass)                        # a pass of one's own, for pipeline text

Importing `accy` loads none of this: each name is imported on first use
(module `__getattr__`), so `import accy.dialects` or `accy-opt` never pays for
the runtime (pyopencl), the reference interpreter or numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accy import numpy, reference
    from accy.cli.version import __version__ as __version__
    from accy.dialects.parse import SourceDiagnostic, parse_module
    from accy.jit import jit
    from accy.passes.pass_manager import PassManager
    from accy.passes.registry import register_pass
    from accy.runtime.array import Array, device_put
    from accy.runtime.devices import get_device
    from accy.runtime.executable import Executable
    from accy.runtime.host_memory import DeviceMemoryError
    from accy.tuning.api import compile, tune

#: public name -> the module that defines it.
_LAZY: dict[str, str] = {
    "Array": "accy.runtime.array",
    "DeviceMemoryError": "accy.runtime.host_memory",
    "Executable": "accy.runtime.executable",
    "PassManager": "accy.passes.pass_manager",
    "SourceDiagnostic": "accy.dialects.parse",
    # pyproject.toml's version, from the package metadata (accy/cli/version.py).
    "__version__": "accy.cli.version",
    # accy.runtime.executable's compile, tuned first when asked (accy/tuning/api.py).
    "compile": "accy.tuning.api",
    "device_put": "accy.runtime.array",
    "get_device": "accy.runtime.devices",
    # numpy-style tracing, compiled per signature (accy/jit.py; accy.numpy is a module, below).
    "jit": "accy.jit",
    "parse_module": "accy.dialects.parse",
    "register_pass": "accy.passes.registry",
    # The autotuner: a TuneResult whose module has the tuned #accy.target fields (docs/tuning.md).
    "tune": "accy.tuning.api",
}

__all__ = [
    "Array",
    "DeviceMemoryError",
    "Executable",
    "PassManager",
    "SourceDiagnostic",
    "compile",
    "device_put",
    "get_device",
    "jit",
    "numpy",
    "parse_module",
    "reference",
    "register_pass",
    "tune",
]


def __getattr__(name: str) -> Any:
    if name in ("numpy", "reference"):  # modules of their own
        return import_module(f"accy.{name}")
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        # Later lookups find it in the module's namespace, without this hook.
        globals()[name] = value
        return value
    raise AttributeError(f"module 'accy' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
