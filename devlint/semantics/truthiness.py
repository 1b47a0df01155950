"""Is an expression's value used as a bool?

`if probe:`, `while probe:`, `assert probe`, `x if probe else y`, `not probe`,
`probe and ...`, `[... for ... if probe]` and `bool(probe)` all test the
truth of `probe`. The right operand of `and`/`or` is not tested there: it is
the result, so its truth is tested only where the whole expression is. An
expression assigned to a plain name is tested where that name is.

Passing a value as an argument (`lru_cache(f)`, `filter(f, xs)`) or returning
it does not test it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence, Union

import libcst as cst


@dataclass(frozen=True)
class AssignedTo:
    """The value is assigned to this plain name; its truth is tested where the name is."""

    name: str
    assign: cst.Assign


TESTED = "tested"
_TESTING = frozenset((cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf))
Use = Union[str, AssignedTo, None]


def truth_use(chain: Sequence[cst.CSTNode]) -> Use:
    """How the node at the top of `chain` (its ancestors, outermost first) is
    used: `TESTED`, `AssignedTo(name)`, or None (anything else)."""
    node = chain[-1]
    for i in range(len(chain) - 2, -1, -1):
        parent = chain[i]
        kind = type(parent)  # exact types: libcst's classes are ABCs, slow to isinstance
        if kind in _TESTING:
            return TESTED if parent.test is node else None  # type: ignore[attr-defined]
        if kind is cst.UnaryOperation:
            return TESTED if isinstance(parent.operator, cst.Not) else None  # type: ignore[attr-defined]
        if kind is cst.BooleanOperation:
            if parent.left is node:
                return TESTED
            node = parent  # the result: tested where the whole is
            continue
        if isinstance(parent, cst.Arg) and i > 0:
            call = chain[i - 1]
            if _is_bool_call(call, parent):
                return TESTED
            return None
        if isinstance(parent, cst.Assign):
            if parent.value is node and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
                return AssignedTo(parent.targets[0].target.value, parent)
            return None
        return None
    return None


def _is_bool_call(call: cst.CSTNode, arg: cst.Arg) -> bool:
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Name)
        and call.func.value == "bool"
        and len(call.args) == 1
        and call.args[0] is arg
        and arg.keyword is None
        and not arg.star
    )


def is_tested(chain: Sequence[cst.CSTNode]) -> bool:
    return truth_use(chain) == TESTED

