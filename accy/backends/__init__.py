"""Backends: print kernel IR as an artifact a device builds (OpenCL C).

Backends read the IR the passes produced and never import the runtime.
"""
