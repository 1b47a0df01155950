"""Fast iteration over a libcst tree, for the engine's walk and for the few
sub-expression scans the semantic layer makes.

libcst's `node.children` and `node.visit` rebuild nodes through its visitor
machinery and cost about half a parse per traversal; this module reads the
node dataclasses' fields directly, skipping the fields that only hold
whitespace, comments or punctuation (no rule looks at those).
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Optional, Sequence

import libcst as cst

_SKIPPED_FIELDS = frozenset(
    "lpar rpar comma semicolon leading_lines lines_after_decorators header footer equal colon dot "
    "star_tok newline trailing_whitespace first_line empty_lines indent operator asynchronous "
    "arrow whitespace_after_at".split()
)
# Source order where the dataclass field order differs (decorators come first).
_FIELD_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.Arg: ("keyword", "value"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.MatchCase: ("pattern", "guard", "body"),
}
# type -> the fields `child_fields` gives, filled as types are met.
FIELDS: dict[type, tuple[str, ...]] = {}
_fields = FIELDS
# type -> whether it is a CSTNode, filled as types are met (read directly by the engine's walk).
NODE_TYPES: dict[type, bool] = {}
_is_node = NODE_TYPES


def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of a node type that can hold nodes a rule may care about."""
    names = _fields.get(node_type)
    if names is None:
        names = _FIELD_ORDER.get(node_type) or tuple(
            f.name for f in dataclasses.fields(node_type)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _fields[node_type] = names
    return names


def is_node(value: object) -> bool:
    """isinstance(value, cst.CSTNode), without the ABC's slow instance check."""
    t = type(value)
    known = _is_node.get(t)
    if known is None:
        known = _is_node[t] = isinstance(value, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children in source order, whitespace and punctuation left out."""
    out: list[cst.CSTNode] = []
    node_types = NODE_TYPES
    names = _fields.get(type(node))
    if names is None:
        names = child_fields(type(node))
    for name in names:
        value = getattr(node, name)
        value_type = type(value)
        if value_type is tuple or value_type is list:
            for item in value:
                known = node_types.get(type(item))
                if known or (known is None and is_node(item)):
                    out.append(item)
        else:
            known = node_types.get(value_type)
            if known or (known is None and is_node(value)):
                out.append(value)
    return out


def iter_subtree(
    node: cst.CSTNode, prune: Optional[Callable[[cst.CSTNode], bool]] = None
) -> Iterator[cst.CSTNode]:
    """Every node below and including `node`, depth first in source order; the
    subtrees of nodes for which `prune` is true are not entered."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if prune is not None and prune(current) and current is not node:
            continue
        stack.extend(reversed(children(current)))


def never_runs(stack: Sequence[cst.CSTNode]) -> bool:
    """Is the innermost node of `stack` (its ancestors, outermost first) in code
    switched off by a constant: the body of `if False:`, `if 0:`, `while False:`?"""
    for i in range(len(stack) - 1):
        node = stack[i]
        if type(node) in (cst.If, cst.While) and stack[i + 1] is node.body:  # type: ignore[attr-defined]
            test = node.test  # type: ignore[attr-defined]
            if (type(test) is cst.Name and test.value == "False") or (type(test) is cst.Integer and test.value == "0"):
                return True
    return False


def ends_by_raising(block: cst.BaseSuite) -> bool:
    """Does the block end by raising (`raise`, `raise RuntimeError(...) from e`),
    as an indented block or on one line (`except ImportError: raise`)?"""
    if isinstance(block, cst.IndentedBlock):
        last = block.body[-1] if block.body else None
        small = last.body if isinstance(last, cst.SimpleStatementLine) else ()
    else:
        small = block.body  # type: ignore[attr-defined]
    return any(isinstance(s, cst.Raise) for s in small)


def exclusive_branches(a: Sequence[cst.CSTNode], b: Sequence[cst.CSTNode]) -> bool:
    """Given two nodes' ancestor chains (root first), do they sit in different
    branches of one `if` (its body and its `else`/`elif`), so that no run
    reaches both?"""
    for i, (x, y) in enumerate(zip(a, b)):
        if x is y:
            continue
        parent = a[i - 1] if i else None
        if type(parent) is not cst.If:
            return False
        sides = {id(parent.body), id(parent.orelse)}  # type: ignore[attr-defined]
        return id(x) in sides and id(y) in sides
    return False
