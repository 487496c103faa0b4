"""Kernelization: the kernelize pass and one lowering module per kind of work
item (elementwise, shape, reduction, scan, dot, row_pipeline,
flash_attention), sharing `common`."""
