"""The OpenCL C backend: kernel IR printed as OpenCL C source (no runtime here).

The names below are imported on first use (module `__getattr__`): the
format (format.py) is read without loading the emitter and xDSL.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accy.backends.opencl.emitter import (
        OpenCLEmitError,
        build_options,
        emit_opencl,
        kernel_funcs,
        written_arguments,
    )

__all__ = ["OpenCLEmitError", "build_options", "emit_opencl", "kernel_funcs", "written_arguments"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'accy.backends.opencl' has no attribute '{name}'")
    value = getattr(import_module("accy.backends.opencl.emitter"), name)
    globals()[name] = value
    return value
