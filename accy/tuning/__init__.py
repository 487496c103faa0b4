"""Tuning: the search for a kernel's schedule on the machine at hand.

The room for the autotuner: a search space per kind of kernel (the
`#accy.target` fields its lowering reads: tile, vector and work-group
sizes), a store of what was found (a namespace of accy's disk cache), and
the search itself (set fields, compile, check against the reference
interpreter, time). It sits above the runtime, which it drives; the
runtime, the passes, the backends and the dialects never import it. What a
search finds is written into the module as plain `#accy.target` fields, so
a tuned module is ordinary `.mlir` that reproduces the tuned kernels on any
machine without this package (tests/unit/test_layering.py checks the
direction).

- `space.py`: the candidates per kind of kernel and per profile;
- `search.py`: `tune`, the search (set fields, compile, check, time);
- `store.py`: the tuning store, the `tuning` namespace of the disk cache;
- `api.py`: `accy.compile(..., tune=True)`, `accy.tune`, `ACCY_TUNE`;
- `tune_pass.py`: the `tune` pass of `accy-opt -p tune`.

docs/tuning.md is the user's guide.
"""
