# ruff: noqa: F821  (lit injects `config`)
# lit configuration for accy: `.mlir` files run through accy-opt / accy-run
# and FileCheck (the Python `filecheck` package).
import os

import lit.formats

config.name = "accy"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "inputs"]
config.environment["PATH"] = os.environ["PATH"]
for var in ("PYTHONPATH", "ACCY_CACHE_DIR", "HOME", "XDG_CACHE_HOME"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
