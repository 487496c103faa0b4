"""The one step loop (`schedule.StepExecutor`) that every device runs its
host schedule with: each step goes to the method of its kind in program
order, loops rebind their carried slots a trip (no method sees a loop),
fallbacks are timed under `profile`, and a call's buffers go when the call
drops its executor (no reference cycle), all without a device."""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from accy.runtime.schedule import Alloc, Constant, Copy, Fallback, Free, Loop, Schedule, StepExecutor, describe


@dataclass
class _Launch:
    name: str
    args: list[int]


class _Buffer:
    """A buffer that a weakref can follow."""

    def __init__(self, name: str) -> None:
        self.name = name


class _Recorder(StepExecutor):
    """Records each method call; buffers are named by the step that made them."""

    LAUNCH = _Launch
    __slots__ = ("calls",)

    def __init__(self, num_slots: int, profile: bool = False) -> None:
        StepExecutor.__init__(self, num_slots, profile)
        self.calls: list[tuple[str, Any]] = []

    def launch(self, step: _Launch) -> None:
        self.calls.append(("launch", (step.name, [self.bufs[a].name for a in step.args])))

    def alloc(self, step: Alloc) -> None:
        self.bufs[step.slot] = _Buffer(f"alloc{step.slot}")
        self.calls.append(("alloc", step.slot))

    def free(self, step: Free) -> None:
        self.calls.append(("free", step.slot))

    def constant(self, step: Constant) -> None:
        self.bufs[step.slot] = _Buffer(f"const{step.slot}")
        self.calls.append(("constant", step.slot))

    def copy(self, step: Copy) -> None:
        self.calls.append(("copy", (self.bufs[step.source].name, self.bufs[step.target].name)))

    def fallback(self, step: Fallback) -> None:
        self.calls.append(("fallback", step.inputs))


def _alloc(slot: int) -> Alloc:
    return Alloc(slot, 4, np.dtype(np.float32))


def _fallback(inputs: list[int], outputs: list[int]) -> Fallback:
    op = SimpleNamespace(kernel=SimpleNamespace(data="fb0"))
    return Fallback(op, inputs, outputs)  # type: ignore[arg-type]


def _ping_pong(trips: int) -> list[Any]:
    """slot 0 (an input) -> 2, a loop over carried slots 4, 5 that swaps them
    each trip (the body writes 5 from 4), results in 6, 7; then a copy out."""
    body = [_Launch("body", [4, 5])]
    loop = Loop(trips, carried=[4, 5], inits=[2, 3], body=body, yields=[5, 4], results=[6, 7])
    return [_alloc(2), _alloc(3), Constant(1, np.zeros(1, np.float32), 4, False), loop, Copy(6, 3, 4), Free(2)]


@pytest.mark.parametrize("trips", [0, 1, 2, 3])
def test_loops_rebind_carried_slots_and_methods_see_each_step_in_order(trips: int) -> None:
    ex = _Recorder(8)
    ex.bufs[0] = _Buffer("input")
    ex.run(_ping_pong(trips))
    # Trip k reads the buffer the last trip wrote: alloc2, alloc3, alloc2, ...
    names = ["alloc2", "alloc3"]
    launches = [("launch", ("body", [names[k % 2], names[(k + 1) % 2]])) for k in range(trips)]
    assert ex.calls == [
        ("alloc", 2),
        ("alloc", 3),
        ("constant", 1),
        *launches,
        ("copy", (names[trips % 2], "alloc3")),
        ("free", 2),
    ]
    assert [ex.bufs[s].name for s in (6, 7)] == [names[trips % 2], names[(trips + 1) % 2]]


def test_nested_loops_run_their_bodies_count_times() -> None:
    inner = Loop(3, carried=[], inits=[], body=[_Launch("inner", [])], yields=[], results=[])
    outer = Loop(2, carried=[], inits=[], body=[_Launch("outer", []), inner], yields=[], results=[])
    ex = _Recorder(1)
    ex.run([outer])
    assert [c[1][0] for c in ex.calls] == ["outer", "inner", "inner", "inner"] * 2


@pytest.mark.parametrize("profile", [False, True])
def test_a_fallback_is_timed_only_under_profile(profile: bool) -> None:
    ex = _Recorder(2, profile)
    ex.bufs[0] = _Buffer("input")
    ex.run([_alloc(1), _fallback([0], [1])])
    assert ex.calls == [("alloc", 1), ("fallback", [0])]
    if profile:
        (record,) = ex.records
        assert (record.name, record.kind, record.global_size, record.local_size) == ("fb0", "fallback", (), None)
        assert record.seconds >= 0
    else:
        assert ex.records == []


def test_a_device_must_say_every_kind_of_step() -> None:
    class NoCopy(StepExecutor):
        LAUNCH = _Launch

        def launch(self, step: Any) -> None: ...
        def alloc(self, step: Alloc) -> None: ...
        def free(self, step: Free) -> None: ...
        def constant(self, step: Constant) -> None: ...
        def fallback(self, step: Fallback) -> None: ...

    with pytest.raises(TypeError, match="copy"):
        NoCopy(1, False)  # type: ignore[abstract]


def test_the_calls_buffers_go_with_the_executor_without_a_collection() -> None:
    ex = _Recorder(8)
    ex.bufs[0] = _Buffer("input")
    ex.run(_ping_pong(3))
    refs = [weakref.ref(b) for b in ex.bufs if b is not None and b.name != "input"]
    assert refs
    enabled = gc.isenabled()
    gc.disable()
    try:
        del ex
        assert all(r() is None for r in refs)
    finally:
        if enabled:
            gc.enable()


def test_describe_says_loops_launches_and_fallbacks() -> None:
    steps = [*_ping_pong(5), _fallback([0], [1])]
    schedule = Schedule(8, [0], [4], [False], steps, [6], [], 16, 1, launches=1, launches_per_call=5)
    assert describe(schedule, _Launch, lambda step: f"{step.name} over {step.args}") == "\n".join(
        [
            "1 kernel(s), 1 fallback(s), peak 16 bytes",
            "  loop of 5 trip(s) over the next 1 step(s)",
            "  body over [4, 5]",
            "  fb0 on the host reference path",
        ]
    )
