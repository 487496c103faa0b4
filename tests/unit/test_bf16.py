"""bf16 as an element type: literals round-trip bit for bit (inf, NaN,
subnormals, -0), a cast to bf16 rounds to nearest even exactly as
ml_dtypes does, and the reference computes each bf16 op in f32 and rounds
its result once."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import accy
from accy.dialects.context import make_context
from accy.dialects.dense import bf16_bits, bf16_value, splat_value
from accy.dialects.parse import parse_text
from accy.reference.constants import dense_to_numpy, numpy_to_dense

BF16 = np.dtype(ml_dtypes.bfloat16)
#: +inf, -inf, a quiet NaN, a negative NaN, the smallest subnormal (both
#: signs), the largest subnormal, the smallest normal, the largest finite, -0, 1.
SPECIAL = [0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0x8000, 0x3F80]


def _literal_bits(text: str) -> np.ndarray:
    module, _ = parse_text(make_context(), text)
    const = next(op for op in module.walk() if op.name == "accy.constant")
    return dense_to_numpy(const.value).view(np.uint16)


def test_hex_literals_are_bits_and_round_trip() -> None:
    hexes = ", ".join(f"0x{b:04X}" for b in SPECIAL)
    t = f"tensor<{len(SPECIAL)}xbf16>"
    text = f'func.func @main() -> {t} {{\n  %c = "accy.constant"() <{{value = dense<[{hexes}]> : {t}}}> : () -> {t}\n  func.return %c : {t}\n}}'
    bits = _literal_bits(text)
    assert bits.tolist() == SPECIAL
    # Printed (xDSL prints the finite ones in decimal) and read back: the same bits.
    printed = str(parse_text(make_context(), text)[0])
    assert _literal_bits(printed).tolist() == SPECIAL


def test_decimal_literals_round_to_nearest_even() -> None:
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even 1.
    # 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to the even 1 + 2^-6.
    t = "tensor<3xbf16>"
    text = f'func.func @main() -> {t} {{\n  %c = "accy.constant"() <{{value = dense<[1.00390625, 1.01171875, -2.5]> : {t}}}> : () -> {t}\n  func.return %c : {t}\n}}'
    assert _literal_bits(text).tolist() == [0x3F80, 0x3F82, 0xC020]


def test_out_of_range_literal_is_an_error() -> None:
    t = "tensor<1xbf16>"
    text = f'func.func @main() -> {t} {{\n  %c = "accy.constant"() <{{value = dense<[1.0e39]> : {t}}}> : () -> {t}\n  func.return %c : {t}\n}}'
    with pytest.raises(Exception, match="out of the range of bf16"):
        parse_text(make_context(), text)


def test_bits_helpers_and_splats() -> None:
    for b in SPECIAL:
        v = bf16_value(b)
        if v != v:
            assert bf16_bits(v) & 0x7FC0 == 0x7FC0  # a NaN stays a quiet NaN
            continue
        assert np.array([v], np.float32).astype(BF16).view(np.uint16)[0] == b
        assert bf16_bits(v) == b
    attr = numpy_to_dense(np.full((3, 4), 1.5, BF16))
    assert splat_value(attr) == 1.5
    assert dense_to_numpy(attr).dtype == BF16


def _ties() -> np.ndarray:
    """f32 values exactly halfway between two bf16 (both parities), just
    above and below halfway, and the specials."""
    rng = np.random.default_rng(0)
    upper = rng.integers(0, 0x7F7F, 200, dtype=np.uint32)
    low = np.array([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF], np.uint32)
    bits = (upper[:, None] << 16 | low[None, :]).reshape(-1)
    bits = np.concatenate([bits, bits | 0x80000000, [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x7F7FFFFF]])
    return bits.astype(np.uint32).view(np.float32)


def _compile(src: str):
    return accy.compile(src, device="reference")


def test_cast_f32_to_bf16_is_round_to_nearest_even() -> None:
    x = _ties()
    n = x.size
    src = f"""func.func @main(%x: tensor<{n}xf32>) -> (tensor<{n}xbf16>, tensor<{n}xf32>) {{
  %b = "accy.cast"(%x) : (tensor<{n}xf32>) -> tensor<{n}xbf16>
  %f = "accy.cast"(%b) : (tensor<{n}xbf16>) -> tensor<{n}xf32>
  func.return %b, %f : tensor<{n}xbf16>, tensor<{n}xf32>
}}"""
    b, f = _compile(src)(x)
    want = x.astype(BF16)
    finite = ~np.isnan(x)
    np.testing.assert_array_equal(b.view(np.uint16)[finite], want.view(np.uint16)[finite])
    assert np.isnan(b[~finite].astype(np.float32)).all()
    # A tie with an even upper half stays, with an odd one rounds up.
    tie = x.view(np.uint32) & 0xFFFF == 0x8000
    up = (x.view(np.uint32) >> 16) & 1 == 1
    got = b.view(np.uint16).astype(np.uint32)
    assert ((got == (x.view(np.uint32) >> 16) + 1) == up)[tie & finite].all()
    np.testing.assert_array_equal(f, want.astype(np.float32))


@pytest.mark.parametrize("op", ["add", "mul", "div", "sub", "max"])
def test_reference_rounds_each_op_once(op: str) -> None:
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(257).astype(BF16) for _ in range(2))
    t = "tensor<257xbf16>"
    src = f'func.func @main(%a: {t}, %b: {t}) -> {t} {{\n  %r = "accy.{op}"(%a, %b) : ({t}, {t}) -> {t}\n  func.return %r : {t}\n}}'
    (got,) = _compile(src)(a, b)
    fn = {"add": np.add, "mul": np.multiply, "div": np.divide, "sub": np.subtract, "max": np.maximum}[op]
    want = fn(a.astype(np.float32), b.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_sum_accumulates_in_f32() -> None:
    x = np.full(4096, 1.0, BF16)  # in bf16, 256 + 1 == 256
    t = "tensor<4096xbf16>"
    src = f'func.func @main(%x: {t}) -> tensor<bf16> {{\n  %r = "accy.reduce"(%x) <{{kind = "sum", axes = array<i64: 0>}}> : ({t}) -> tensor<bf16>\n  func.return %r : tensor<bf16>\n}}'
    (got,) = _compile(src)(x)
    assert float(got) == 4096.0
