"""Reading and printing dense literals by their bytes.

xDSL 0.75 stores a `DenseIntOrFPElementsAttr` as the little-endian packed
bytes of every element (a splat is stored expanded). Its `get_values()`,
`is_splat()` and printer unpack those bytes into one Python object per
element: for a `dense<2.0> : tensor<16384x4096xf32>` that is 64M floats and
gigabytes of memory. accy never goes through them on a literal it did not
build itself at a known small size; it reads the bytes instead:

- `storage_format` is how one element is stored (a `struct` format, which
  numpy reads as a dtype: passes view a literal's bytes as an array without
  a copy);
- `splat_value` is the one value of a literal whose elements are all equal
  (bitwise), or None, comparing the bytes in bounded chunks;
- `DensePrinter` is xDSL's `Printer` with dense literals printed from their
  bytes: the same text as xDSL's for the literals xDSL prints in reasonable
  time, and, with `digest=True`, a large literal as a hash of its bytes
  (for fingerprints that compare two versions of one module in one process).
"""

from __future__ import annotations

import struct
import weakref
from typing import Any

from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Attribute
from xdsl.printer import Printer

# Bytes compared at once when looking for a splat: bounds the temporary
# copies to a few MB whatever the literal's size.
_SPLAT_CHUNK = 1 << 22

# xDSL prints a non-splat literal of at most this many elements as a nested
# list (and a longer one as hex); DensePrinter leaves those to xDSL.
_XDSL_LIST_LIMIT = 100


def storage_format(attr: DenseIntOrFPElementsAttr) -> str:
    """The `struct` format of one stored element of `attr` (little-endian,
    e.g. "<f"; i1 is a signed byte, `true` stored as -1). numpy reads the
    bytes with `np.dtype(storage_format(attr))`."""
    element_type: Any = attr.get_element_type()
    fmt = getattr(element_type, "format", None)
    if not isinstance(fmt, str):
        raise ValueError(f"dense literal of element type {element_type} has no byte layout accy reads")
    return fmt


def splat_value(attr: DenseIntOrFPElementsAttr) -> int | float | None:
    """The single value of a literal whose stored elements are all equal bit
    for bit, as xDSL unpacks one element (an int for integer types, i1's
    `true` being -1; a float for float types), or None if they differ or
    there are none. Reads the bytes once per attribute object (the answer
    is remembered while the attribute lives); builds no per-element object."""
    known = _splats.get(id(attr))
    if known is not None and known[0]() is attr:
        return known[1]
    value = _scan_splat(attr)
    key = id(attr)
    _splats[key] = (weakref.ref(attr, lambda _, key=key: _splats.pop(key, None)), value)
    return value


# id(attribute) -> (weak reference to it, its splat value): attributes are
# immutable, so the answer holds for as long as the attribute lives.
_splats: dict[int, tuple[weakref.ref[DenseIntOrFPElementsAttr], int | float | None]] = {}


def _scan_splat(attr: DenseIntOrFPElementsAttr) -> int | float | None:
    data = attr.data.data
    size = struct.calcsize(storage_format(attr))
    if not data:
        return None
    # Bitwise equality (a NaN splat is a splat; -0.0 and 0.0 differ, as their
    # bytes do), a bounded chunk at a time against the first element repeated.
    first = data[:size]
    pattern = first * max(1, _SPLAT_CHUNK // size)
    for start in range(0, len(data), len(pattern)):
        chunk = data[start : start + len(pattern)]
        if chunk != pattern[: len(chunk)]:
            return None
    return struct.unpack(storage_format(attr), first)[0]


class DensePrinter(Printer):
    """xDSL's printer, except that a dense literal longer than xDSL prints as
    a list is printed from its bytes: `dense<v> : T` for a splat (v printed
    by xDSL from the one element), `dense<"0x...">` hex otherwise, as xDSL
    does. With `digest=True` such a literal prints as
    `dense<"#digest:NBYTES:HASH">`: text that is equal iff the bytes are
    (up to a 64-bit hash collision), valid within one process only (Python's
    `hash` of the bytes, computed once per bytes object and then cached)."""

    def __init__(self, *args: Any, digest: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.digest = digest

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, DenseIntOrFPElementsAttr) and attribute.shape_is_complete:
            data = attribute.data.data
            itemsize = struct.calcsize(storage_format(attribute))
            if len(data) // itemsize > _XDSL_LIST_LIMIT:
                self._print_large_dense(attribute, data)
                return
        super().print_attribute(attribute)

    def _print_large_dense(self, attribute: DenseIntOrFPElementsAttr, data: bytes) -> None:
        self.print_string("dense<")
        splat = splat_value(attribute)
        if splat is not None:
            attribute._print_one_elem(splat, self)  # xDSL's own element syntax
        elif self.digest:
            self.print_string(f'"#digest:{len(data)}:{hash(data) & (2**64 - 1):016x}"')
        else:
            self.print_string(f'"0x{data.hex().upper()}"')
        self.print_string("> : ")
        self.print_attribute(attribute.get_type())
