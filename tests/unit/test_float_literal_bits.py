"""MLIR's hexadecimal float form in dense literals is the element's bits
(issue 19): `accy-opt` prints -inf as `dense<0xFF800000>`, and the parser
read that back as the integer 4286578688.0, so a printed module computed
something else than its input. Every literal the constant folder makes
(log(0), 0/0, -0.0, denormals, f16's max) must survive print -> parse."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import accy
from accy.cli.opt import main as accy_opt
from accy.reference import dense_to_numpy


def _constant(literal: str, t: str) -> str:
    return (
        f"func.func @main() -> {t} {{\n"
        f'  %c = "accy.constant"() <{{value = {literal} : {t}}}> : () -> {t}\n'
        f"  func.return %c : {t}\n}}"
    )


def _value(literal: str, t: str) -> np.ndarray:
    module = accy.parse_module(_constant(literal, t))
    (op,) = [op for op in module.walk() if op.name == "accy.constant"]
    return dense_to_numpy(op.value)


@pytest.mark.parametrize(
    ("literal", "t", "bits"),
    [
        ("dense<0xFF800000>", "tensor<4xf32>", [0xFF800000] * 4),
        ("dense<0x7FC00000>", "tensor<3xf32>", [0x7FC00000] * 3),
        ("dense<0xffc00000>", "tensor<f32>", [0xFFC00000]),
        ("dense<[0xFF800000, 1.0, -0.0, 0x00000001]>", "tensor<4xf32>", [0xFF800000, 0x3F800000, 0x80000000, 1]),
        ("dense<0xFC00>", "tensor<2xf16>", [0xFC00] * 2),
        ("dense<[0x7E00, 0x7BFF, 0x0001]>", "tensor<3xf16>", [0x7E00, 0x7BFF, 0x0001]),
        ("dense<0xFFF0000000000000>", "tensor<2xf64>", [0xFFF0000000000000] * 2),
        ("dense<[[0x7FF8000000000000], [0x0000000000000001]]>", "tensor<2x1xf64>", [0x7FF8000000000000, 1]),
    ],
)
def test_hexadecimal_float_is_the_bits(literal: str, t: str, bits: list[int]) -> None:
    value = _value(literal, t)
    as_int = {2: np.uint16, 4: np.uint32, 8: np.uint64}[value.dtype.itemsize]
    assert value.reshape(-1).view(as_int).tolist() == bits


def test_hexadecimal_integer_stays_an_integer() -> None:
    assert _value("dense<[0x10, 0xFF]>", "tensor<2xi32>").tolist() == [16, 255]


@pytest.mark.parametrize(
    ("literal", "t", "message"),
    [
        ("dense<0x7FC00000>", "tensor<4xf16>", "more than the 16 bits of f16"),
        ("dense<[1.0, 0x1FFFFFFFF]>", "tensor<2xf32>", "more than the 32 bits of f32"),
        ("dense<-0x1>", "tensor<2xf32>", "takes no sign"),
        ("dense<1.0e6>", "tensor<2xf16>", "out of the range of f16 (write 0x7C00 for +inf)"),
        ("dense<-inf>", "tensor<2xf32>", "'inf' is not a float literal"),
        ("dense<nan>", "tensor<2xf32>", "0x7FC00000 NaN"),
        ("dense<[1.0, inf]>", "tensor<2xf32>", "'inf' is not a float literal"),
    ],
)
def test_bad_float_literal_is_a_located_error(literal: str, t: str, message: str) -> None:
    with pytest.raises(accy.SourceDiagnostic) as e:
        accy.parse_module(_constant(literal, t))
    first = str(e.value).splitlines()[0]
    assert first.startswith("<input>:2:") and message in first, first


FOLDED = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf16>, tensor<3xf16>, tensor<2xf64>, tensor<4xf32>) {
  %z = "accy.constant"() <{value = dense<0.0> : tensor<4xf32>}> : () -> tensor<4xf32>
  %l = "accy.log"(%z) : (tensor<4xf32>) -> tensor<4xf32>
  %n = "accy.div"(%z, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %i = "accy.neg"(%l) : (tensor<4xf32>) -> tensor<4xf32>
  %m = "accy.constant"() <{value = dense<[1.0, -1.0, 1.0e-40, 3.0e38]> : tensor<4xf32>}> : () -> tensor<4xf32>
  %t = "accy.mul"(%m, %m) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %nz = "accy.neg"(%z) : (tensor<4xf32>) -> tensor<4xf32>
  %h = "accy.constant"() <{value = dense<[65504.0, 6.0e-8, -0.0]> : tensor<3xf16>}> : () -> tensor<3xf16>
  %hh = "accy.add"(%h, %h) : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xf16>
  %hn = "accy.neg"(%h) : (tensor<3xf16>) -> tensor<3xf16>
  %f = "accy.constant"() <{value = dense<[0.0, 5.0e-324]> : tensor<2xf64>}> : () -> tensor<2xf64>
  %fl = "accy.log"(%f) : (tensor<2xf64>) -> tensor<2xf64>
  %y = "accy.add"(%x, %l) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %y2 = "accy.mul"(%y, %n) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %l, %n, %i, %t, %hh, %hn, %fl, %nz : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf16>, tensor<3xf16>, tensor<2xf64>, tensor<4xf32>
}
"""


def _bits(a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a).reshape(-1).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]).tolist()


def _opt(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> str:
    assert accy_opt([str(path), *argv]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def test_folded_non_finite_literals_survive_print_and_parse(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """parse -> canonicalize -> print -> parse -> print: the same text, and the
    printed module computes what the original does, bit for bit (the NaN
    payloads and signs included), on the reference and on the devices."""
    source = tmp_path / "folded.mlir"
    source.write_text(FOLDED)
    printed = tmp_path / "printed.mlir"
    printed.write_text(_opt(capsys, source, "-p", "canonicalize"))
    text = printed.read_text()
    assert "0xff800000" in text.lower() and "accy.log" not in text  # folded, in the hex form
    assert _opt(capsys, printed) == text
    x = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    want = accy.compile(FOLDED, device="reference")(x)
    for device in ("reference", "llvm", "opencl"):
        got = accy.compile(text, device=device)(x)
        for g, w in zip(got, want, strict=True):
            assert _bits(np.asarray(g)) == _bits(w), device


def test_masked_softmax_written_with_hex_minus_inf(tmp_path: Path) -> None:
    """A mask of MLIR's -inf (`0xFF800000`) added before a softmax zeroes
    the masked columns on every device (it was 4.29e9: one-hot there)."""
    t = "tensor<3x17xf32>"
    src = f"""
func.func @main(%x: {t}, %keep: tensor<3x17xi1>) -> {t} {{
  %ninf = "accy.constant"() <{{value = dense<0xFF800000> : {t}}}> : () -> {t}
  %zero = "accy.constant"() <{{value = dense<0.0> : {t}}}> : () -> {t}
  %bias = "accy.select"(%keep, %zero, %ninf) : (tensor<3x17xi1>, {t}, {t}) -> {t}
  %s = "accy.add"(%x, %bias) : ({t}, {t}) -> {t}
  %y = "accy.softmax"(%s) <{{axis = 1 : i64}}> : ({t}) -> {t}
  func.return %y : {t}
}}"""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 17)).astype(np.float32)
    keep = rng.integers(0, 2, (3, 17)).astype(bool)
    keep[:, 0] = True
    e = np.where(keep, np.exp(x - np.where(keep, x, -np.inf).max(axis=1, keepdims=True)), 0.0)
    want = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    for device in ("reference", "llvm", "opencl"):
        (y,) = accy.compile(src, device=device)(x, keep)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-7, err_msg=device)
