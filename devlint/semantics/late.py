"""Module names a function reads before the text assigns them.

The walk binds names in text order, but a function body runs when it is
called, usually from the bottom of a script:

    def train(model, loader):
        for x, y in loader:
            x = x.to(device)          # `device` is the module's, set below
    ...
    if __name__ == "__main__":
        device = torch.device("cuda")
        train(model, loader)

`late_value` answers such a read, and only where nothing else can: the name is
assigned exactly once in the module's own code (top level, or the
`if __name__ == "__main__":` block), to a literal device (`"cuda:1"`,
`torch.device("cuda")`), no `global` statement rebinds it, the function does
not bind it itself, and no module-level check of the accelerator comes before
the assignment. Anything else stays unknown, and rules stay silent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import bindings, guards
from .values import Kind, Value

if TYPE_CHECKING:
    from .context import Context

_MEMO_KEY = "late-module-sites"
_DEVICE_KINDS = (Kind.DEVICE, Kind.DEVICE_STRING)


def late_value(ctx: "Context", name: str) -> Optional[Value]:
    """The value of module name `name` read inside a function before the text
    assigns it, when the module makes it certain (see the module docs)."""
    sites = ctx.memo.get(_MEMO_KEY)
    if sites is None:
        ctx.memo[_MEMO_KEY] = {}  # the scan asks lookups of its own: they find nothing late
        sites = ctx.memo[_MEMO_KEY] = _module_sites(ctx)
    value_expr = sites.get(name)  # type: ignore[union-attr]
    if value_expr is None or _rebound_by_global(ctx.source, name):
        return None
    for scope in ctx.scopes:
        if scope.kind == "function":
            scan = bindings.scan(ctx, scope.node)
            if scan.failed or name in scan.sites or name in scan.opaque:
                return None  # the function's own name (or one it cannot follow)
    value = ctx.value_of(value_expr)
    return value if value.kind in _DEVICE_KINDS else None


def _module_sites(ctx: "Context") -> dict[str, cst.BaseExpression]:
    """Names the module assigns once, unguarded, to a literal device: name -> value."""
    module = ctx.scopes[0].node if ctx.scopes else None
    if not isinstance(module, cst.Module):
        return {}
    scan = bindings.scan(ctx, module)
    if scan.failed:
        return {}
    # The blocks that run once, in order: the module's own, and its main block's.
    blocks: dict[int, Optional[cst.If]] = {id(module): None}
    for stmt in module.body:
        if isinstance(stmt, cst.If) and _is_main_check(stmt.test) and isinstance(stmt.body, cst.IndentedBlock):
            blocks[id(stmt.body)] = stmt
    found: dict[str, cst.BaseExpression] = {}
    for name, sites in scan.sites.items():
        if len(sites) != 1 or name in scan.opaque:
            continue
        site = sites[0]
        if site.kind != "assign" or site.loops or site.value is None or id(site.block) not in blocks:
            continue
        if _literal_device(ctx, site.value) and not _checked_before(ctx, module, blocks[id(site.block)], site.value):
            found[name] = site.value
    return found


def _literal_device(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """`"cuda:1"` or `torch.device("cuda", 1)`: nothing in it that the function's
    own names could change when it is evaluated there."""
    if isinstance(expr, cst.SimpleString):
        return True
    if isinstance(expr, cst.Call) and ctx.qualify(expr.func) == "torch.device":
        return all(not a.star and isinstance(a.value, (cst.SimpleString, cst.Integer)) for a in expr.args)
    return False


def _checked_before(ctx: "Context", module: cst.Module, main: Optional[cst.If], value: cst.BaseExpression) -> bool:
    """Does a module-level check of the accelerator run before the assignment?
    (`if not torch.cuda.is_available(): sys.exit(...)`, `assert ...`): then the
    device may be chosen by it, and the answer is left unknown."""
    statements: list[cst.BaseStatement] = []
    for stmt in module.body:
        if stmt is main:
            statements.extend(main.body.body)  # type: ignore[union-attr]
            break
        statements.append(stmt)
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, cst.Assign) and s.value is value for s in stmt.body):
                return False
            if any(isinstance(s, cst.Assert) and guards.mentions_availability(ctx, s.test) for s in stmt.body):
                return True
        elif isinstance(stmt, (cst.If, cst.While)) and guards.mentions_availability(ctx, stmt.test):
            return True
    return False


def _is_main_check(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


def _rebound_by_global(source: str, name: str) -> bool:
    return "global" in source and re.search(rf"\bglobal\b[^\n]*\b{re.escape(name)}\b", source) is not None
