"""`accy.jit`: trace a numpy-style Python function once per input signature,
compile it, and call the compiled executable.

    import accy, accy.numpy as anp

    @accy.jit
    def mlp(x, w, b):
        return anp.maximum(x @ w + b, 0.0)

    y = mlp(x, w, b)                       # traced, compiled (accy.compile), run
    y = mlp(x2, w, b)                      # same shapes and dtypes: the cached executable
    print(mlp.lower(x, w, b).as_text())    # the traced module
    step = accy.jit(fn, device="llvm", static_argnums=(2,))

As `jax.jit`: the signature of a call is the shape and dtype of every
array argument (numpy arrays and `accy.Array`s alike; arguments may nest
in tuples, lists and dicts), the Python type of every Python scalar
argument (traced as a weak rank-0 value: `x * lr` keeps x's dtype), and the
value of every static argument (`static_argnums`, `static_argnames`: the
function sees them as they are, so Python control flow may depend on
them; they must be hashable). A new signature traces the function again
and compiles a new executable (`trace_count` counts the traces); a known
one calls the cached executable with the arrays as they are. Calling a
jitted function inside another's trace inlines it.

A jitted function keeps the executables of its `cache_size` most recently
called signatures (default `$ACCY_JIT_CACHE_SIZE`, else 64); an older one
is dropped (its device programs and memory given back) and traced again
if it comes back, so a function called with thousands of shapes stays
bounded in memory (JAX and torch.compile bound theirs too).

What tracing builds, and its numpy rules, are accy/frontends/tracing.py's
(docs/tracing.md). Results are numpy arrays, or `accy.Array`s on the
device with `to_host=False`, nested as the function returned them.
"""

from __future__ import annotations

import functools
import io
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

# First: the ops of xDSL's dialects imported below then read their formats lazily.
import accy.dialects.lazy_formats  # noqa: F401

# isort: split
import numpy as np
from xdsl.dialects.builtin import ModuleOp

from accy.dialects.dense import DensePrinter
from accy.env import env_int
from accy.frontends.tracing import (
    LEAF,
    WEAK_STORAGE,
    Traced,
    Tracer,
    TreeDef,
    dynamic_leaves,
    leaf_spec,
    trace,
)
from accy.runtime.array import Array
from accy.runtime.device import Device
from accy.runtime.executable import Executable, compile

JIT_CACHE_SIZE_ENV = "ACCY_JIT_CACHE_SIZE"
DEFAULT_JIT_CACHE_SIZE = 64


def default_cache_size() -> int:
    """`$ACCY_JIT_CACHE_SIZE` (signatures a jitted function keeps, >= 1), else 64."""
    return env_int(JIT_CACHE_SIZE_ENV, DEFAULT_JIT_CACHE_SIZE, "signatures")


@dataclass
class _Entry:
    """One signature: its key, what tracing built, and its executable once compiled."""

    key: Any
    traced: Traced
    rebuild: Callable[[tuple[Any, ...]], Any]
    executable: Executable | None = None


def _rebuild(tree: TreeDef) -> Callable[[tuple[Any, ...]], Any]:
    """How a call's results (a tuple, one per leaf) become what the function returned."""
    if tree == LEAF:
        return lambda results: results[0]
    if tree.kind == "tuple" and tree.node is tuple and all(c == LEAF for c in tree.children):
        return lambda results: results
    return tree.unflatten


def _leaf_key(leaf: Any) -> Any:
    """A leaf's part of the signature: (shape, dtype) of an array, the type
    of a Python scalar (weak)."""
    kind = type(leaf)
    if kind is np.ndarray or kind is Array:
        return (leaf.shape, leaf.dtype)
    if kind in WEAK_STORAGE:
        return kind
    try:
        shape, dtype, _ = leaf_spec(leaf, "")
    except TypeError:
        return ("not an array", kind)  # tracing says what is wrong, naming the argument
    return (shape, dtype)


def _leaf_input(leaf: Any) -> Any:
    """A dynamic leaf as the executable takes it: a Python scalar in its weak
    storage dtype, a numpy scalar a 0-d array, arrays as they are."""
    kind = type(leaf)
    if kind is np.ndarray or kind is Array:
        return leaf
    if kind in WEAK_STORAGE:
        return np.asarray(leaf, WEAK_STORAGE[kind])
    return np.asarray(leaf)


class Lowered:
    """A traced signature of a jitted function: `module` (a copy of the
    module that signature compiles), `as_text()`, and `compile()`."""

    def __init__(self, owner: JitFunction, key: Any, entry: _Entry) -> None:
        self._owner, self._key, self._entry = owner, key, entry
        self.module: ModuleOp = entry.traced.module.clone()

    def as_text(self) -> str:
        """The module as accy-opt prints it (large literals from their bytes)."""
        out = io.StringIO()
        DensePrinter(stream=out).print_op(self.module)
        return out.getvalue() + "\n"

    def __str__(self) -> str:
        return self.as_text()

    def compile(self) -> Executable:
        """The executable calls with this signature run (compiled once, then cached)."""
        return self._owner._executable(self._entry)


class JitFunction:
    """A function traced and compiled per input signature (module docstring)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        device: str | Device = "auto",
        static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
        to_host: bool = True,
        strict: bool = False,
        cache_size: int | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"accy.jit takes a function, got a {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.device = device
        self.static_argnums = frozenset([static_argnums] if isinstance(static_argnums, int) else static_argnums)
        self.static_argnames = frozenset([static_argnames] if isinstance(static_argnames, str) else static_argnames)
        self.to_host = to_host
        self.strict = strict
        if cache_size is None:
            cache_size = default_cache_size()
        elif not isinstance(cache_size, int) or isinstance(cache_size, bool) or cache_size < 1:
            raise ValueError(f"accy.jit's cache_size is a number of signatures >= 1, got {cache_size!r}")
        #: Signatures kept, least recently called dropped first (module docstring).
        self.max_signatures = cache_size
        #: How many times the Python function has been traced (once per new signature).
        self.trace_count = 0
        self._cache: OrderedDict[Any, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        # Without static arguments, a call of arrays alone is keyed by their
        # shapes and dtypes only: the warm path.
        self._plain = not self.static_argnums and not self.static_argnames

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._plain and not kwargs:
            key = []
            for a in args:
                kind = type(a)
                if kind is not np.ndarray and kind is not Array:
                    break
                key.append((a.shape, a.dtype))
            else:
                entry = self._cache.get(tuple(key))
                if entry is not None and entry.executable is not None:
                    self._touch(entry.key)
                    return entry.rebuild(entry.executable(*args))
        leaves, key = self._signature(args, kwargs)
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            return self._fn(*args, **kwargs)  # inside another function's trace: inlined
        entry = self._entry(key, args, kwargs)
        return entry.rebuild(self._executable(entry)(*[_leaf_input(leaf) for leaf in leaves]))

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The traced module of this signature (arguments may be
        `accy.frontends.tracing.ShapeDtype`s), traced if it is new; nothing is compiled."""
        _, key = self._signature(args, kwargs)
        return Lowered(self, key, self._entry(key, args, kwargs))

    def cache_size(self) -> int:
        """How many signatures are kept (traced, at most `max_signatures`)."""
        return len(self._cache)

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()

    def _signature(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], Any]:
        """The dynamic leaves of a call and its cache key."""
        leaves, _, structure = dynamic_leaves(args, kwargs, self.static_argnums, self.static_argnames)
        if any(isinstance(leaf, Tracer) for leaf in leaves):
            return leaves, None
        keys = tuple(_leaf_key(leaf) for leaf in leaves)
        if self._plain and not kwargs and all(s is LEAF for s in structure) and all(type(k) is tuple for k in keys):
            return leaves, keys  # arrays alone: the warm path's key
        key = (structure, keys)
        try:
            hash(key)
        except TypeError:
            bad = [s for s in structure if isinstance(s, tuple) and s and s[0] == "static" and not _hashable(s[3])]
            where = f"static argument {bad[0][1]!r}" if bad else "a static argument"
            raise TypeError(
                f"{where} of {self.__name__} is a {type(bad[0][3]).__name__ if bad else 'value'}, which is not hashable: "
                "static arguments are part of the signature (use a tuple for a list)"
            ) from None
        return leaves, key

    def _touch(self, key: Any) -> None:
        """Marks `key` most recently called (it may have just been dropped by another thread)."""
        try:
            self._cache.move_to_end(key)
        except KeyError:
            pass

    def _entry(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Entry:
        entry = self._cache.get(key)
        if entry is not None:
            self._touch(key)
            return entry
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                traced = trace(self._fn, args, kwargs, tuple(self.static_argnums), tuple(self.static_argnames))
                self.trace_count += 1
                entry = self._cache[key] = _Entry(key, traced, _rebuild(traced.out_tree))
                while len(self._cache) > self.max_signatures:
                    self._cache.popitem(last=False)
        return entry

    def _executable(self, entry: _Entry) -> Executable:
        if entry.executable is None:
            with self._lock:
                if entry.executable is None:
                    entry.executable = compile(entry.traced.module, self.device, "main", self.strict, self.to_host)
        return entry.executable

    def __repr__(self) -> str:
        return f"<accy.jit of {getattr(self._fn, '__qualname__', self._fn)!s}, {len(self._cache)} signature(s)>"


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def jit(
    fn: Callable[..., Any] | None = None,
    *,
    device: str | Device = "auto",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    to_host: bool = True,
    strict: bool = False,
    cache_size: int | None = None,
) -> Any:
    """`fn` traced and compiled per input signature for `device` (module
    docstring): `@accy.jit`, `@accy.jit(device="llvm")` or
    `accy.jit(fn, static_argnums=(1,))`. `to_host=False` returns
    `accy.Array`s; `strict` is `accy.compile`'s (no host fallbacks);
    `cache_size` the signatures kept (default `$ACCY_JIT_CACHE_SIZE`, else 64)."""
    options = {
        "device": device, "static_argnums": static_argnums, "static_argnames": static_argnames, "to_host": to_host,
        "strict": strict, "cache_size": cache_size,
    }
    if fn is None:
        return lambda f: JitFunction(f, **options)
    return JitFunction(fn, **options)


class _Module(types.ModuleType):
    """This module, callable as `accy.jit` itself: `import accy.jit` binds
    the module to the package's `jit` name, where `accy.jit(fn)` means the
    function."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return jit(*args, **kwargs)


sys.modules[__name__].__class__ = _Module
