"""The numpy reference interpreter of the accy tensor dialect (the oracle).

`run(module, fn, *arrays)` runs a function; `evaluate_op(op, args)` gives one
op's value; the dtype helpers map element types and dense attributes to numpy.
"""

from accy.reference.constants import dense_to_numpy, element_type_for_dtype, numpy_dtype, numpy_to_dense
from accy.reference.interpreter import check_arguments, evaluate_op, find_function, run

__all__ = [
    "check_arguments",
    "dense_to_numpy",
    "element_type_for_dtype",
    "evaluate_op",
    "find_function",
    "numpy_dtype",
    "numpy_to_dense",
    "run",
]
