"""`inline`: every `func.call` replaced by a copy of the callee's body.

accy's kernels are planned per function (the schedule fuses ops of one
body), so a program that calls helper functions runs on a device once its
calls are inlined; the reference interpreter runs calls as they are. Callees
are inlined before their callers, so one pass leaves no call behind. What
cannot be inlined is an error naming it: a call to a function that is only
declared (no body), or recursion (accy runs no loops but `accy.iterate`).
The callee functions stay in the module; `dce`-like removal of functions
nobody calls is left to the caller (`accy.compile` keeps only the one it runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from accy.passes.pass_manager import AccyPass, AnalysisManager, PreservedAnalyses


class CallError(ValueError):
    """A call accy cannot inline; `op` is the call (for a located diagnostic)."""

    def __init__(self, op: func.CallOp, message: str) -> None:
        super().__init__(message)
        self.op = op


def callees(f: func.FuncOp) -> list[func.CallOp]:
    """The calls in `f`'s body, nested regions included, in program order."""
    return [op for op in f.walk() if isinstance(op, func.CallOp)]


def call_order(module: ModuleOp) -> list[func.FuncOp]:
    """The module's defined functions, each after every function it calls.
    Raises CallError at a call to a declared-only or missing function, or at
    the call that closes a cycle (recursion)."""
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    order: list[func.FuncOp] = []
    done: set[str] = set()
    # Iterative depth-first search (call chains may be long): a stack of
    # (function, its calls, next call index); `path` is the chain being walked.
    for root in functions.values():
        if root.is_declaration or root.sym_name.data in done:
            continue
        stack = [(root, callees(root), 0)]
        path = [root.sym_name.data]
        while stack:
            f, calls, i = stack.pop()
            if i == len(calls):
                done.add(f.sym_name.data)
                order.append(f)
                path.pop()
                continue
            stack.append((f, calls, i + 1))
            call = calls[i]
            name = call.callee.root_reference.data
            callee = functions.get(name)
            if callee is None or call.callee.nested_references.data:
                raise CallError(call, f"calls @{call.callee.string_value()}, which is not a function of this module")
            if callee.is_declaration:
                raise CallError(call, f"calls @{name}, which is only declared: accy needs the body of every function it runs")
            if name in path:
                cycle = " -> ".join(f"@{n}" for n in [*path[path.index(name) :], name])
                raise CallError(call, f"recursive call ({cycle}): accy cannot run recursion (use accy.iterate for loops)")
            if name not in done:
                stack.append((callee, callees(callee), 0))
                path.append(name)
    return order


def inline_call(call: func.CallOp, callee: func.FuncOp) -> None:
    """Replaces `call` by a copy of `callee`'s body (which holds no calls)."""
    if len(callee.body.blocks) != 1:
        raise CallError(call, f"calls @{callee.sym_name.data}, whose body is not one block: accy cannot inline it")
    block = callee.body.block
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, call.arguments, strict=True))
    results: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            results = [mapping.get(v, v) for v in op.arguments]
            break
        copy = op.clone(mapping)
        call.parent_block().insert_op_before(copy, call)  # type: ignore[union-attr]
    for old, new in zip(call.results, results, strict=True):
        old.replace_all_uses_with(new)
    call.detach()
    call.erase()


def inline_calls(module: ModuleOp) -> bool:
    """Inlines every call of `module`; whether there was one. Raises CallError
    (see `call_order`) for a call accy cannot inline."""
    changed = False
    functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    for f in call_order(module):
        for call in callees(f):
            inline_call(call, functions[call.callee.root_reference.data])
            changed = True
    return changed


@dataclass(frozen=True)
class InlinePass(AccyPass):
    """Inlines every func.call to a function of the module (callees first);
    a call to a declared-only function, or recursion, is an error."""

    name: ClassVar[str] = "inline"
    version: ClassVar[int] = 1

    def run(self, ctx: Context, module: ModuleOp, am: AnalysisManager) -> PreservedAnalyses:
        return PreservedAnalyses.none() if inline_calls(module) else PreservedAnalyses.all()
