"""accy: a pass-managed tensor compiler toolkit on xDSL.

The Python API:

    import accy
    module = accy.parse_module("prog.mlir")          # or .mlir text
    exe = accy.compile(module, device="reference")   # or "opencl", "opencl:1"
    (y,) = exe(x)                                     # numpy in, numpy out
    accy.reference.run(module, "main", x)             # the numpy oracle
    accy.PassManager([...]).run(module)               # pipelines with cached analyses
"""

from accy import reference
from accy.passes.pass_manager import PassManager
from accy.runtime.devices import get_device
from accy.runtime.executable import Executable, compile
from accy.runtime.source import SourceDiagnostic, parse_module

__all__ = [
    "Executable",
    "PassManager",
    "SourceDiagnostic",
    "compile",
    "get_device",
    "parse_module",
    "reference",
]
