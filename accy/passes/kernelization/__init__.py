"""Kernelization: the kernelize pass and one lowering module per kind of work
item (elementwise, shape, reduction, scan, dot), sharing `common`."""
