"""Programs that only their dims tell apart from a fused pattern.

On square and cubic tensors a row total broadcast back along the columns, a
reduction along the first dim, an epilogue that reads its anchor's result
transposed, or a row-invariant input read through a transpose has exactly
the types of the usual softmax / layer norm / attention / epilogue. Each
must compute what was written (checked against the reference on both
profiles, outputs poisoned), as kernels: no host fallback. The usual forms
beside them must still fuse (kernel counts)."""

from __future__ import annotations

import numpy as np
import pytest
from check import assert_matches

import accy

SIZES = (3, 16, 17)


def t(n: int, rank: int = 2) -> str:
    return "tensor<" + "x".join([str(n)] * rank) + "xf32>"


def reduce(x: str, kind: str, axis: int, n: int, rank: int = 2) -> str:
    return (f'"accy.reduce"({x}) <{{kind = "{kind}", axes = array<i64: {axis}>}}> : '
            f"({t(n, rank)}) -> {t(n, rank - 1)}")


def bcast(x: str, dims: str, n: int, rank: int = 2) -> str:
    return f'"accy.broadcast"({x}) <{{dims = array<i64: {dims}>}}> : ({t(n, rank - 1)}) -> {t(n, rank)}'


def binary(op: str, a: str, b: str, n: int, rank: int = 2) -> str:
    return f'"accy.{op}"({a}, {b}) : ({t(n, rank)}, {t(n, rank)}) -> {t(n, rank)}'


def unary(op: str, a: str, n: int, rank: int = 2) -> str:
    return f'"accy.{op}"({a}) : ({t(n, rank)}) -> {t(n, rank)}'


def transpose(x: str, perm: str, n: int, rank: int = 2) -> str:
    return f'"accy.transpose"({x}) <{{permutation = array<i64: {perm}>}}> : ({t(n, rank)}) -> {t(n, rank)}'


def func(args: str, body: list[str], result: str, rtype: str) -> str:
    lines = "\n".join(f"  {line}" for line in body)
    return f"func.func @main({args}) -> {rtype} {{\n{lines}\n  func.return {result} : {rtype}\n}}\n"


def softmax(n: int, max_dims: str = "0", sum_dims: str = "0", max_axis: int = 1, rank: int = 2) -> str:
    """exp(x - max) / sum along the last dim, with the max reduced along
    `max_axis` and each row value broadcast back along the dims given."""
    last = rank - 1
    return func(f"%x: {t(n, rank)}", [
        f"%m = {reduce('%x', 'max', max_axis, n, rank)}",
        f"%mb = {bcast('%m', max_dims, n, rank)}",
        f"%d = {binary('sub', '%x', '%mb', n, rank)}",
        f"%e = {unary('exp', '%d', n, rank)}",
        f"%s = {reduce('%e', 'sum', last, n, rank)}",
        f"%sb = {bcast('%s', sum_dims, n, rank)}",
        f"%p = {binary('div', '%e', '%sb', n, rank)}",
    ], "%p", t(n, rank))


def layer_norm(n: int, mean_dims: str = "0", inv_dims: str = "0") -> str:
    """(x - mean) * rsqrt(var + eps) with its row values broadcast along the dims given."""
    return func(f"%x: {t(n)}", [
        f'%eps = "accy.constant"() <{{value = dense<1.0e-3> : {t(n, 1)}}}> : () -> {t(n, 1)}',
        f"%mu = {reduce('%x', 'mean', 1, n)}",
        f"%mub = {bcast('%mu', mean_dims, n)}",
        f"%c = {binary('sub', '%x', '%mub', n)}",
        f"%c2 = {binary('mul', '%c', '%c', n)}",
        f"%var = {reduce('%c2', 'mean', 1, n)}",
        f'%ve = "accy.add"(%var, %eps) : ({t(n, 1)}, {t(n, 1)}) -> {t(n, 1)}',
        f'%inv = "accy.rsqrt"(%ve) : ({t(n, 1)}) -> {t(n, 1)}',
        f"%invb = {bcast('%inv', inv_dims, n)}",
        f"%y = {binary('mul', '%c', '%invb', n)}",
    ], "%y", t(n))


def attention(n: int, sum_dims: str = "0", k_transposed: bool = False) -> str:
    """q·kᵀ · 0.125, softmax written with primitives, ·v, all n x n."""
    dot = ('"accy.dot_general"({a}, {b}) <{{lhs_batch = array<i64>, rhs_batch = array<i64>, '
           'lhs_contract = array<i64: 1>, rhs_contract = array<i64: {rc}>}}> : ({ta}, {ta}) -> {ta}')
    return func(f"%q: {t(n)}, %k: {t(n)}, %v: {t(n)}", [
        f"%s0 = {dot.format(a='%q', b='%k', rc=0 if k_transposed else 1, ta=t(n))}",
        f'%c = "accy.constant"() <{{value = dense<0.125> : {t(n)}}}> : () -> {t(n)}',
        f"%s = {binary('mul', '%s0', '%c', n)}",
        f"%m = {reduce('%s', 'max', 1, n)}",
        f"%mb = {bcast('%m', '0', n)}",
        f"%d = {binary('sub', '%s', '%mb', n)}",
        f"%e = {unary('exp', '%d', n)}",
        f"%sum = {reduce('%e', 'sum', 1, n)}",
        f"%sb = {bcast('%sum', sum_dims, n)}",
        f"%p = {binary('div', '%e', '%sb', n)}",
        f"%o = {dot.format(a='%p', b='%v', rc=0, ta=t(n))}",
    ], "%o", t(n))


def dot_epilogue_transposed(n: int) -> str:
    return func(f"%a: {t(n)}, %b: {t(n)}", [
        f'%d = "accy.dot_general"(%a, %b) <{{lhs_batch = array<i64>, rhs_batch = array<i64>, '
        f"lhs_contract = array<i64: 1>, rhs_contract = array<i64: 0>}}> : ({t(n)}, {t(n)}) -> {t(n)}",
        f"%dt = {transpose('%d', '1, 0', n)}",
        f"%y = {binary('add', '%d', '%dt', n)}",
    ], "%y", t(n))


def reduction_epilogue_transposed(n: int) -> str:
    return func(f"%x: {t(n, 3)}", [
        f"%r = {reduce('%x', 'sum', 2, n, 3)}",
        f"%rt = {transpose('%r', '1, 0', n)}",
        f"%y = {binary('sub', '%r', '%rt', n)}",
    ], "%y", t(n))


def scan_epilogue_transposed(n: int) -> str:
    return func(f"%x: {t(n)}", [
        f'%s = "accy.scan"(%x) <{{kind = "sum", axis = 1 : i64, exclusive = false, reverse = false}}> : '
        f"({t(n)}) -> {t(n)}",
        f"%st = {transpose('%s', '1, 0', n)}",
        f"%y = {binary('mul', '%s', '%st', n)}",
    ], "%y", t(n))


def row_invariant_transposed(n: int) -> str:
    """A per-row input (broadcast along the rows, then exp) read transposed inside a softmax."""
    return func(f"%x: {t(n)}, %a: {t(n, 1)}", [
        f"%b = {bcast('%a', '0', n)}",
        f"%eb = {unary('exp', '%b', n)}",
        f"%tb = {transpose('%eb', '1, 0', n)}",
        f"%d = {binary('sub', '%x', '%tb', n)}",
        f"%e = {unary('exp', '%d', n)}",
        f"%s = {reduce('%e', 'sum', 1, n)}",
        f"%sb = {bcast('%s', '0', n)}",
        f"%p = {binary('div', '%e', '%sb', n)}",
    ], "%p", t(n))


#: name -> (program of size n, kernels when it must stay fused, else None).
CASES = {
    "softmax_usual": (lambda n: softmax(n), 1),
    "softmax_sum_along_columns": (lambda n: softmax(n, sum_dims="1"), None),
    "softmax_max_along_columns": (lambda n: softmax(n, max_dims="1"), None),
    "softmax_column_max": (lambda n: softmax(n, max_axis=0, max_dims="1"), None),
    "softmax_rank3_usual": (lambda n: softmax(n, "0, 1", "0, 1", 2, 3), 1),
    "softmax_rank3_sum_dims_0_2": (lambda n: softmax(n, "0, 1", "0, 2", 2, 3), None),
    "softmax_rank3_max_dims_1_2": (lambda n: softmax(n, "1, 2", "0, 1", 2, 3), None),
    "layer_norm_usual": (lambda n: layer_norm(n), 1),
    "layer_norm_mean_along_columns": (lambda n: layer_norm(n, mean_dims="1"), None),
    "layer_norm_inv_along_columns": (lambda n: layer_norm(n, inv_dims="1"), None),
    "attention_usual": (lambda n: attention(n), 1),
    "attention_k_transposed": (lambda n: attention(n, k_transposed=True), 1),
    "attention_sum_along_queries": (lambda n: attention(n, sum_dims="1"), None),
    "dot_epilogue_transposed": (dot_epilogue_transposed, None),
    "reduction_epilogue_transposed": (reduction_epilogue_transposed, None),
    "scan_epilogue_transposed": (scan_epilogue_transposed, None),
    "row_invariant_input_transposed": (row_invariant_transposed, None),
}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_dims_not_sizes(case: str, n: int, device) -> None:
    make, kernels = CASES[case]
    exe = accy.compile(make(n), device=device)
    rng = np.random.default_rng(n)
    inputs = [(rng.standard_normal(ty) * 2).astype(np.float32) for ty in (a.shape for a in _shapes(exe))]
    got = exe(*inputs)
    assert exe.stats.fallbacks == 0, "ran on the host reference path"
    if kernels is not None:
        assert exe.stats.kernels == kernels
    for g, w in zip(got, exe.reference_outputs(inputs), strict=True):
        assert_matches(g, w)


def _shapes(exe: accy.Executable) -> list[np.ndarray]:
    return [np.empty(tuple(ty.get_shape()), np.float32) for ty in exe.input_types]
