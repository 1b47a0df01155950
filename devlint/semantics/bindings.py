"""Which assignment of a name is in effect at a use, and how sure we are.

The walk binds names in text order, so after

    if cond:
        device = torch.device("cuda")
    else:
        device = "cpu"

it holds the `else` value, though either may reach the next line. Rules whose
verdict hangs on a value's exact kind (a `torch.device`, not a `str`) ask
`certain_value`: it trusts the walk's binding only when that assignment is
certain to be the one in effect — it dominates the use, and no later
assignment can come back round a loop — and otherwise accepts a kind only
when every assignment of the name in its scope agrees.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from .values import UNKNOWN, Value
from .tree import children

if TYPE_CHECKING:
    from .context import Context

_BLOCKS = frozenset((cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module))
_LOOPS = frozenset((cst.For, cst.While))
_BINDING_NODES = frozenset(
    (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.WithItem, cst.Import, cst.ImportFrom, cst.Del)
)


@dataclass
class _Site:
    """One place that binds a name."""

    time: int  # when it binds, on the scope's execution-order clock
    block: Optional[cst.CSTNode]  # the block it sits in (None: the scope's entry)
    loops: tuple[int, ...]  # ids of the loops around it, inside the scope
    kind: str  # "assign", "annassign", "param" (the walk reads these) or "other"
    value: Optional[cst.BaseExpression] = None  # for "other": what a name was unpacked from
    annotation: Optional[cst.Annotation] = None


@dataclass
class _Scan:
    ticks: dict[int, int] = field(default_factory=dict)  # id(node) -> enter time
    sites: dict[str, list[_Site]] = field(default_factory=dict)
    opaque: set[str] = field(default_factory=set)  # global/nonlocal names
    failed: bool = False  # the scope could not be scanned


_cache: "weakref.WeakKeyDictionary[Context, dict[int, _Scan]]" = weakref.WeakKeyDictionary()


def certain_value(ctx: "Context", expr: cst.BaseExpression) -> Value:
    """`ctx.value_of(expr)`, except that a name's value is only given when it is
    certain to be in effect here (see the module docs); else UNKNOWN."""
    if not isinstance(expr, cst.Name):
        return ctx.value_of(expr)
    current = ctx.value_of(expr)
    if current.kind is UNKNOWN.kind:
        return UNKNOWN
    found = _in_effect(ctx, expr)
    if found is None:
        return UNKNOWN
    sites, last = found
    if last is not None:
        return current if last.kind != "other" and not _default_disagrees(ctx, last, current) else UNKNOWN
    return _agreed(ctx, sites)


def certain_source(ctx: "Context", name: cst.Name) -> Optional[cst.BaseExpression]:
    """The expression assigned to `name` by the one assignment certain to be in
    effect here (`model = AutoModel.from_pretrained(...)`); None when that is
    not certain or the binding is no plain assignment."""
    site = _certain_site(ctx, name)
    return site.value if site is not None and site.kind in ("assign", "annassign") else None


def unpacked_source(ctx: "Context", name: cst.Name) -> Optional[cst.BaseExpression]:
    """The value `name` was unpacked from by the one binding certain to be in
    effect here (`real, fake = disc(y, y_hat)` gives `disc(y, y_hat)`)."""
    site = _certain_site(ctx, name)
    return site.value if site is not None and site.kind == "other" else None


def _certain_site(ctx: "Context", name: cst.Name) -> Optional[_Site]:
    """The one binding of `name` certain to be in effect here (the only one, if
    it is the only binding in its scope)."""
    found = _in_effect(ctx, name)
    if found is None:
        return None
    sites, last = found
    return last if last is not None else (sites[0] if len(sites) == 1 else None)


def assigned_expressions(ctx: "Context", name: cst.Name) -> list[cst.BaseExpression]:
    """The right-hand side of each plain assignment of `name` in its scope,
    wherever it is: after `if args.cuda: device = torch.device("cuda") else:
    device = "cpu"` both, whichever the walk holds now."""
    scope_node, _ = _binding_scope(ctx, name.value)
    if scope_node is None:
        return []
    scanned = scan(ctx, scope_node)
    return [
        site.value
        for site in scanned.sites.get(name.value, [])
        if site.kind in ("assign", "annassign") and site.value is not None
    ]


def assigned_values(ctx: "Context", name: cst.Name) -> list[Value]:
    """What each plain assignment of `name` in its scope gives."""
    return [ctx.value_of(value) for value in assigned_expressions(ctx, name)]


def _in_effect(ctx: "Context", name: cst.Name) -> Optional[tuple[list[_Site], Optional[_Site]]]:
    """Every binding of `name` in its scope, and the one certain to be in effect
    at this use (None when several may be); None when the name is not
    understood (unbound, `global`, ...)."""
    scope_node, innermost = _binding_scope(ctx, name.value)
    if scope_node is None:
        return None
    scanned = scan(ctx, scope_node)
    if scanned.failed or name.value in scanned.opaque:
        return None
    sites = scanned.sites.get(name.value, [])
    if not sites:
        return None
    use = scanned.ticks.get(id(name))
    if innermost and use is not None:
        before = [s for s in sites if s.time < use]
        if before:
            last = max(before, key=lambda s: s.time)
            if _dominates(ctx, last) and not _loops_back(ctx, sites, last, use):
                return sites, last
    return sites, None


def _default_disagrees(ctx: "Context", site: _Site, value: Value) -> bool:
    """`device: torch.device = "cpu"`: the annotation is not the whole truth."""
    if site.kind != "param" or site.value is None:
        return False
    if isinstance(site.value, cst.Name) and site.value.value == "None":
        return False
    return ctx.value_of(site.value).kind is not value.kind


def _binding_scope(ctx: "Context", name: str) -> tuple[Optional[cst.CSTNode], bool]:
    """The scope node that binds `name` as `ctx.lookup` sees it, and whether it
    is the scope the walk is in now (not an enclosing function or the module)."""
    for i, scope in enumerate(reversed(ctx.scopes)):
        if scope.kind == "class" and i > 0:
            continue
        if scope.lookup(name) is not None:
            return scope.node, i == 0
    return None, False


def _dominates(ctx: "Context", site: _Site) -> bool:
    if site.block is None:
        return True
    return any(node is site.block for node in ctx.stack)


def _loops_back(ctx: "Context", sites: list[_Site], last: _Site, use: int) -> bool:
    """Can an assignment after the use reach it round a loop that `last` is not in?"""
    around_use = {id(n) for n in ctx.stack if type(n) in _LOOPS}
    for site in sites:
        if site.time > use:
            for loop in site.loops:
                if loop in around_use and loop not in last.loops:
                    return True
    return False


def _agreed(ctx: "Context", sites: list[_Site]) -> Value:
    """The value every assignment gives, when they all give the same kind."""
    values = []
    for site in sites:
        if site.kind == "param":
            value = ctx.annotation_value(site.annotation)  # callers pass anything else
            if _default_disagrees(ctx, site, value):
                return UNKNOWN
        elif site.kind == "annassign":
            value = ctx.annotation_value(site.annotation)
            if value.kind is UNKNOWN.kind and site.value is not None:
                value = ctx.value_of(site.value)
        elif site.kind == "assign" and site.value is not None:
            value = ctx.value_of(site.value)
        else:
            return UNKNOWN
        values.append(value)
    first = values[0]
    if first.kind is UNKNOWN.kind or any(v.kind is not first.kind for v in values):
        return UNKNOWN
    if all(v == first for v in values):
        return first
    cls = first.cls if all(v.cls == first.cls for v in values) else None
    return Value(first.kind, cls=cls)


# -- scanning a scope ------------------------------------------------------
def scan(ctx: "Context", scope_node: cst.CSTNode) -> _Scan:
    """Every binding site of a scope (function, class or module), scanned once per file."""
    per_ctx = _cache.setdefault(ctx, {})
    found = per_ctx.get(id(scope_node))
    if found is None:
        try:
            found = _Scanner(scope_node).run()
        except RecursionError:  # nested too deeply to follow: nothing is certain
            found = _Scan(failed=True)
        per_ctx[id(scope_node)] = found
    return found


class _Scanner:
    def __init__(self, scope_node: cst.CSTNode) -> None:
        self.root = scope_node
        self.out = _Scan()
        self.clock = 0
        self.blocks: list[cst.CSTNode] = []
        self.loops: list[int] = []

    def run(self) -> _Scan:
        root = self.root
        if isinstance(root, cst.FunctionDef):
            params = root.params
            for p in (*params.posonly_params, *params.params, *params.kwonly_params):
                self._add(p.name.value, _Site(-1, None, (), "param", p.default, p.annotation))
            for star in (params.star_arg, params.star_kwarg):
                if isinstance(star, cst.Param):
                    self._add(star.name.value, _Site(-1, None, (), "other"))
            self._visit(root.body)
        elif isinstance(root, cst.ClassDef):
            self._visit(root.body)
        else:
            self._visit(root)
        return self.out

    def _tick(self) -> int:
        self.clock += 1
        return self.clock

    def _add(self, name: str, site: _Site) -> None:
        self.out.sites.setdefault(name, []).append(site)

    def _site(self, kind: str, value=None, annotation=None, block=None) -> _Site:
        return _Site(self.clock, block if block is not None else (self.blocks[-1] if self.blocks else None),
                     tuple(self.loops), kind, value, annotation)

    def _bind(self, target: cst.BaseExpression, kind: str, value=None, annotation=None, block=None) -> None:
        if isinstance(target, cst.Name):
            self._add(target.value, self._site(kind, value, annotation, block))
        elif isinstance(target, (cst.Tuple, cst.List)):
            # `real, fake = disc(y, y_hat)`: each name is some part of the value
            # ("other", with the whole value kept for `unpacked_source`).
            whole = value if kind == "assign" else None
            for el in target.elements:
                self._bind(el.value, "other", whole, block=block)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, "other", block=block)

    def _visit(self, node: cst.CSTNode) -> None:
        # Dispatch on the exact type: libcst's node classes are ABCs, and a
        # failing isinstance against one is a slow call on every node.
        self.out.ticks[id(node)] = self._tick()
        kind = type(node)
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            for dec in node.decorators:  # type: ignore[attr-defined]
                self._visit(dec)
            self._tick()
            self._add(node.name.value, self._site("other"))  # type: ignore[attr-defined]
            return
        if kind is cst.Lambda:
            return
        if kind is cst.Global or kind is cst.Nonlocal:
            self.out.opaque.update(n.name.value for n in node.names if type(n.name) is cst.Name)  # type: ignore[attr-defined]
            return
        is_block = kind in _BLOCKS
        if is_block:
            self.blocks.append(node)
        is_loop = kind in _LOOPS
        if is_loop:
            self.loops.append(id(node))
        if kind is cst.For:
            self._visit(node.iter)  # type: ignore[attr-defined]
            self._tick()
            self._bind(node.target, "other", block=node.body)  # type: ignore[attr-defined]
            self._visit(node.body)  # type: ignore[attr-defined]
            if node.orelse is not None:  # type: ignore[attr-defined]
                self._visit(node.orelse)  # type: ignore[attr-defined]
        elif kind is cst.CompFor:
            # Comprehension targets live in the comprehension's own scope.
            self._visit(node.iter)  # type: ignore[attr-defined]
            for cond in node.ifs:  # type: ignore[attr-defined]
                self._visit(cond)
            if node.inner_for_in is not None:  # type: ignore[attr-defined]
                self._visit(node.inner_for_in)  # type: ignore[attr-defined]
        elif kind is cst.ExceptHandler and node.name is not None:  # type: ignore[attr-defined]
            if node.type is not None:  # type: ignore[attr-defined]
                self._visit(node.type)  # type: ignore[attr-defined]
            self._tick()
            self._bind(node.name.name, "other", block=node.body)  # type: ignore[attr-defined]
            self._visit(node.body)  # type: ignore[attr-defined]
        else:
            for child in children(node):
                self._visit(child)
        if is_loop:
            self.loops.pop()
        if is_block:
            self.blocks.pop()
        self._tick()
        # Bindings take effect once the whole statement has run.
        if kind not in _BINDING_NODES:
            return
        if kind is cst.Assign:
            value = node.value  # type: ignore[attr-defined]
            for t in node.targets:  # type: ignore[attr-defined]
                if pairwise(t.target, value):
                    # `x, y = x.cuda(), y.cuda()`: each name is assigned its own value.
                    for el, v in zip(t.target.elements, value.elements):  # type: ignore[attr-defined]
                        self._bind(el.value, "assign", v.value)
                else:
                    self._bind(t.target, "assign", value)
        elif kind is cst.AnnAssign:
            if node.value is not None:  # type: ignore[attr-defined]
                self._bind(node.target, "annassign", node.value, node.annotation)  # type: ignore[attr-defined]
        elif kind is cst.AugAssign or kind is cst.NamedExpr:
            self._bind(node.target, "other")  # type: ignore[attr-defined]
        elif kind is cst.WithItem:
            if node.asname is not None:  # type: ignore[attr-defined]
                self._bind(node.asname.name, "other")  # type: ignore[attr-defined]
        elif kind is cst.Import or kind is cst.ImportFrom:
            if not isinstance(node.names, cst.ImportStar):  # type: ignore[attr-defined]
                for alias in node.names:  # type: ignore[attr-defined]
                    local = alias.asname.name if alias.asname is not None else alias.name
                    while isinstance(local, cst.Attribute):
                        local = local.value
                    self._bind(local, "other")
        elif kind is cst.Del:
            self._bind(node.target, "other")  # type: ignore[attr-defined]


def pairwise(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`a, b = x, y`: as many plain targets as values, no unpacking."""
    return (
        isinstance(target, (cst.Tuple, cst.List))
        and isinstance(value, (cst.Tuple, cst.List))
        and len(target.elements) == len(value.elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))
    )
