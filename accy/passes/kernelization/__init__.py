"""Kernelization: the kernelize pass and one lowering module per kind of work
item (elementwise, shape, reduction, scan, dot, row_pipeline,
flash_attention; the kinds are declared in `passes/analyses/kinds.py`),
sharing `lowered`, `kernel_builder`, `scalar_semantics`, `evaluate`,
`launch`, `combining`, `row_values` and `register_tiles`; `iterate` and
`kernel_call` lower the host loop and hand-written kernels."""
