"""Frontends: what turns a user's program into tensor-dialect IR.

The room for numpy-style tracing (`tracing.py`) and the ONNX importer
(`onnx.py`). A frontend builds a `builtin.module` of `func.func`s over the
`accy` dialect and returns it; it never compiles or runs it. So it imports
only `accy.dialects` (and its own modules, and the third-party package it
reads, such as `onnx`), never the passes, the runtime or the reference
interpreter: what traces, compiles and calls in one step (`accy.jit`, the
ONNX backend for ONNX's test runner) sits at the face, in `accy/` and
`accy/cli/` (tests/unit/test_layering.py checks both rules).
"""
