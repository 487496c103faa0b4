"""Settings of the whole test suite.

Every kernel that `kernelize` makes while the tests run is proved in bounds
by the bounds verifier (accy/passes/kernel_ir/bounds.py): the
conformance suite and the random-program fuzzer prove each generated
kernel, not only run it. Subprocesses (accy-run, accy-opt) inherit it.
"""

import os

os.environ["ACCY_VERIFY_BOUNDS"] = "1"
