"""The OpenCL C backend: kernel IR printed as OpenCL C source (no runtime here)."""

from accy.backends.opencl.emitter import OpenCLEmitError, build_options, emit_opencl, kernel_funcs, written_arguments

__all__ = ["OpenCLEmitError", "build_options", "emit_opencl", "kernel_funcs", "written_arguments"]
