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
  (for fingerprints that compare two versions of one module in one process);
- `element_bytes_of` is how the parser (accy/dialects/parse.py) stores one
  written element: MLIR's hexadecimal float form (`0xFF800000`, what the
  printer writes for -inf and NaN) is the element's bits, as in MLIR, where
  xDSL 0.75 read it as the integer 4286578688.0.

A splat is stored as its one element (`splat_literal`), whatever its shape:
a `dense<1.0> : tensor<20000x20000xf32>` costs four bytes, not 1.6 GB. Every
reader in accy takes such a literal as the splat it is (`splat_value`,
`accy.reference.dense_to_numpy`, the lowerings' `literal_elements`).
"""

from __future__ import annotations

import math
import struct
import weakref
from typing import Any

from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    IntegerType,
    TensorType,
    VectorType,
)
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
    if isinstance(element_type, BFloat16Type):
        return "<H"  # bf16's bits (struct and numpy have no bfloat16): see `splat_value`
    fmt = getattr(element_type, "format", None)
    if not isinstance(fmt, str):
        raise ValueError(f"dense literal of element type {element_type} has no byte layout accy reads")
    return fmt


def splat_literal(type: TensorType | VectorType, element: bytes) -> DenseIntOrFPElementsAttr:
    """The splat of `type` whose every element is stored as `element` (one
    element's bytes), kept as one element (an empty literal for a shape of
    no elements)."""
    if 0 in type.get_shape():
        element = b""
    return DenseIntOrFPElementsAttr(type, BytesAttr(element))


def element_bytes_of(value: int | float | bool, element_type: Attribute, hexadecimal: bool) -> bytes:
    """The stored bytes of one literal element `value` written for
    `element_type`. For a float type, an integer written in hexadecimal is
    the element's bits (MLIR's `0x7FC00000` is a NaN, `0xFC00` f16's -inf),
    and must fit the type's width. Raises ValueError with the message for
    the user: a value out of the type's range, bits wider than the type, a
    float type accy stores no literal of."""
    if isinstance(element_type, IntegerType):
        return element_type.pack([element_type.get_normalized_value(int(value))])
    fmt = "<H" if isinstance(element_type, BFloat16Type) else getattr(element_type, "format", None)
    if not isinstance(fmt, str) or not isinstance(element_type, AnyFloat):
        raise ValueError(f"accy reads no dense literal of element type {element_type} (use f16, bf16, f32 or f64)")
    bits = element_type.bitwidth
    if hexadecimal and not isinstance(value, bool) and isinstance(value, int):
        if value < 0:
            raise ValueError(f"a hexadecimal float literal is the bits of the {element_type} value: it takes no sign")
        if value.bit_length() > bits:
            raise ValueError(f"hexadecimal float literal 0x{value:X} has more than the {bits} bits of {element_type}")
        return value.to_bytes(struct.calcsize(fmt), "little")
    if isinstance(element_type, BFloat16Type):
        # The nearest bf16 (ties to even) of the value read as a double, as
        # MLIR's APFloat rounds a decimal literal; beyond bf16's range, inf.
        encoded = bf16_bits(float(value))
        if math.isinf(bf16_value(encoded)) and not math.isinf(float(value)):
            raise ValueError(f"{value} is out of the range of {element_type} (write 0x7F80 for +inf)")
        return encoded.to_bytes(2, "little")
    try:
        return struct.pack(fmt, float(value))
    except OverflowError:
        hex_inf = (struct.pack(fmt, math.inf)[::-1]).hex().upper()
        raise ValueError(f"{value} is out of the range of {element_type} (write 0x{hex_inf} for +inf)") from None


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
    value = struct.unpack(storage_format(attr), first)[0]
    return bf16_value(value) if isinstance(attr.get_element_type(), BFloat16Type) else value


def bf16_bits(value: float) -> int:
    """The bits of the bf16 nearest `value` (ties to even; NaN stays a quiet
    NaN of the same sign)."""
    return int.from_bytes(BFloat16Type._encode(value), "little")  # pyright: ignore[reportPrivateUsage]


def bf16_value(bits: int) -> float:
    """The value of the bf16 whose bits are `bits`: bf16 is f32's upper half."""
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


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
        # By the type's shape: a splat may be stored as its one element
        # (xDSL then calls its shape incomplete).
        if isinstance(attribute, DenseIntOrFPElementsAttr) and isinstance(attribute.type, TensorType | VectorType):
            data = attribute.data.data
            if math.prod(attribute.type.get_shape()) > _XDSL_LIST_LIMIT:
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
