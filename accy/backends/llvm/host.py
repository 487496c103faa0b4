"""The machine the LLVM backend compiles for: the host, as llvmlite.binding
sees it. Apart from the emitter (and free of xDSL), so that the LLVM device
can name its target and run cached programs without loading the emitter.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

#: The artifact format (`accy.target`'s `format`) this backend prints.
FORMAT = "llvm-ir"


@dataclass(frozen=True)
class CodegenTarget:
    """What the emitted module is compiled for."""

    triple: str
    data_layout: str
    cpu: str = ""
    features: str = ""


@functools.cache
def host_target() -> CodegenTarget:
    """The machine this process runs on, as llvmlite.binding sees it."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    triple = llvm.get_process_triple()
    machine = llvm.Target.from_triple(triple).create_target_machine()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # not every host reports its features
        features = ""
    return CodegenTarget(triple, str(machine.target_data), llvm.get_host_cpu_name(), features)
