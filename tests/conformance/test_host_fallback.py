"""Conformance of `accy.iterate` and of host fallbacks (`accy_host.fallback`)
on the OpenCL runtime (PoCL), under both profiles: an iterate whose body
reads, and whose carried value starts as, each kind of input a kernel can
have — function arguments and kernel outputs (whole buffers), views of them,
constants (splat, stored as ONE element read with strides 0, or not; i1,
rank 0, empty, also read by a kernel, also returned) and views of constants
— must match the reference interpreter, both when its body is a kernel
(`lowered`) and when the body's work item runs on the host reference path
(`host`: the target computes no float64 and the body's tanh is float64)."""

from __future__ import annotations

import numpy as np
import pytest
from check import arr, check, ty

T, TB = ty([3, 5]), ty([3, 5], "i1")


def const(name: str, value: str, t: str) -> str:
    return f'  %{name} = "accy.constant"() <{{value = {value} : {t}}}> : () -> {t}'


#: kind -> (ops before the iterate, the value the iterate body adds to its
#: carried value %a; a 3x5 f32 value defined before the iterate).
INPUTS: dict[str, tuple[list[str], str]] = {
    "argument": ([], "%x"),
    "kernel_output": ([f'  %v = "accy.exp"(%x) : ({T}) -> {T}'], "%v"),
    "transposed_argument": (
        [f'  %v = "accy.transpose"(%y) <{{permutation = {arr([1, 0])}}}> : ({ty([5, 3])}) -> {T}'], "%v"
    ),
    "splat": ([const("c", "dense<0.5>", T)], "%c"),
    "dense": ([const("c", f"dense<[{', '.join(str([i * 5 + j for j in range(5)]) for i in range(3))}]>", T)], "%c"),
    "broadcast_dense": (
        [
            const("c", "dense<[1.0, -2.0, 3.0, -4.0, 5.0]>", ty([5])),
            f'  %v = "accy.broadcast"(%c) <{{dims = {arr([1])}}}> : ({ty([5])}) -> {T}',
        ],
        "%v",
    ),
    "broadcast_rank0_splat": (
        [
            const("c", "dense<1.5>", ty([])),
            f'  %v = "accy.broadcast"(%c) <{{dims = {arr([])}}}> : ({ty([])}) -> {T}',
        ],
        "%v",
    ),
    "sliced_splat": (
        [
            const("c", "dense<-0.25>", ty([4, 7])),
            f'  %v = "accy.slice"(%c) <{{start = {arr([1, 2])}, limit = {arr([4, 7])}, stride = {arr([1, 1])}}}> '
            f": ({ty([4, 7])}) -> {T}",
        ],
        "%v",
    ),
    "i1_splat": (
        [const("m", "dense<true>", TB), f'  %v = "accy.select"(%m, %x, %y0) : ({TB}, {T}, {T}) -> {T}'],
        "%v",
    ),
}


@pytest.fixture(params=["lowered", "host"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def fallbacks(mode: str) -> int:
    return 1 if mode == "host" else 0


def tanh(mode: str, x: str, out: str, t: str = T) -> list[str]:
    """`out = tanh(x)`, in float64 on a target without it in the host mode."""
    if mode == "lowered":
        return [f'    {out} = "accy.tanh"({x}) : ({t}) -> {t}']
    h = t.replace("f32", "f64")
    return [
        f'    {out}_h = "accy.cast"({x}) : ({t}) -> {h}',
        f'    {out}_t = "accy.tanh"({out}_h) : ({h}) -> {h}',
        f'    {out} = "accy.cast"({out}_t) : ({h}) -> {t}',
    ]


def module(mode: str, lines: list[str]) -> str:
    if mode == "lowered":
        return "\n".join(lines)
    return "\n".join(["builtin.module attributes {accy.target = #accy.target<fp64 = false>} {", *lines, "}"])


def program(prelude: list[str], value: str, init: str = "%x", extra: str = "", mode: str = "lowered") -> str:
    """The iterate (twice: a = tanh(a + value)) after `prelude`; `extra`
    names one more returned 3x5 f32 value."""
    results = f"{T}, {T}" if extra else T
    lines = [
        f"func.func @main(%x: {T}, %y: {ty([5, 3])}) -> ({results}) {{",
        f'  %y0 = "accy.transpose"(%y) <{{permutation = {arr([1, 0])}}}> : ({ty([5, 3])}) -> {T}',
        *prelude,
        f'  %it = "accy.iterate"({init}) <{{count = 2 : i64}}> ({{',
        f"  ^bb0(%a: {T}):",
        f'    %s = "accy.add"(%a, {value}) : ({T}, {T}) -> {T}',
        *tanh(mode, "%s", "%t"),
        f'    "accy.yield"(%t) : ({T}) -> ()',
        f"  }}) : ({T}) -> {T}",
        f"  func.return %it{', ' + extra if extra else ''} : {results}",
        "}",
    ]
    return module(mode, lines)


def inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((3, 5)).astype(np.float32), rng.standard_normal((5, 3)).astype(np.float32)]


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_body_reads_every_input_kind(kind: str, device, mode: str) -> None:
    """Read from the iterate's body (a value the region captures)."""
    prelude, value = INPUTS[kind]
    check(program(prelude, value, mode=mode), inputs(1), device, fallbacks=fallbacks(mode))


@pytest.mark.parametrize("kind", ["splat", "dense", "broadcast_rank0_splat", "sliced_splat"])
def test_constant_as_the_carried_value(kind: str, device, mode: str) -> None:
    """A constant (or a view of one) as the iterate's init: made whole
    before the loop."""
    prelude, value = INPUTS[kind]
    check(program(prelude, "%x", init=value, mode=mode), inputs(2), device, fallbacks=fallbacks(mode))


def test_splat_read_by_a_kernel_too(device, mode: str) -> None:
    """One splat constant read by the body and by kernels before and
    after the loop: the kernels read its one-element buffer, a fallback its
    own literal."""
    prelude = [
        const("c", "dense<0.75>", T),
        f'  %e = "accy.mul"(%x, %c) : ({T}, {T}) -> {T}',
    ]
    src = program(prelude, "%c", init="%e", mode=mode).replace(
        "  func.return %it", f'  %r = "accy.sub"(%it, %c) : ({T}, {T}) -> {T}\n  func.return %r'
    )
    check(src, inputs(3), device, kernels=2 if mode == "host" else 3, fallbacks=fallbacks(mode))


def test_returned_splat(device, mode: str) -> None:
    """A splat constant the function also returns (stored whole)."""
    prelude, value = INPUTS["splat"]
    check(program(prelude, value, extra="%c", mode=mode), inputs(4), device, fallbacks=fallbacks(mode))


def test_empty_splat(device, mode: str) -> None:
    """A splat constant with no elements, carried by the iterate."""
    t = ty([0, 5])
    lines = [
        f"func.func @main(%x: {t}) -> {t} {{",
        const("c", "dense<2.0>", t),
        '  %it = "accy.iterate"(%c) <{count = 2 : i64}> ({',
        f"  ^bb0(%a: {t}):",
        f'    %s = "accy.add"(%a, %x) : ({t}, {t}) -> {t}',
        *tanh(mode, "%s", "%u", t),
        f'    "accy.yield"(%u) : ({t}) -> ()',
        f"  }}) : ({t}) -> {t}",
        f"  func.return %it : {t}",
        "}",
    ]
    check(module(mode, lines), [np.zeros((0, 5), np.float32)], device, fallbacks=fallbacks(mode))


def test_body_of_constants_only(device, mode: str) -> None:
    """A body (and, on the host, a fallback) whose only input is the carried
    constant has no other input buffer."""
    lines = [
        f"func.func @main(%x: {T}, %y: {ty([5, 3])}) -> ({T}, {T}) {{",
        const("c", "dense<0.5>", T),
        '  %it = "accy.iterate"(%c) <{count = 3 : i64}> ({',
        f"  ^bb0(%a: {T}):",
        *tanh(mode, "%a", "%t"),
        f'    "accy.yield"(%t) : ({T}) -> ()',
        f"  }}) : ({T}) -> {T}",
        f'  %e = "accy.exp"(%x) : ({T}) -> {T}',
        f"  func.return %it, %e : {T}, {T}",
        "}",
    ]
    check(module(mode, lines), inputs(5), device, kernels=1 if mode == "host" else 2, fallbacks=fallbacks(mode))
