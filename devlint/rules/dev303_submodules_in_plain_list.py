from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import classes
from ..semantics.tree import children

_LIST_DISPLAYS = (cst.List, cst.Tuple, cst.ListComp)
_DICT_DISPLAYS = (cst.Dict, cst.DictComp)
_ADDING_METHODS = frozenset({"append", "extend", "insert"})


class SubmodulesInPlainList(Rule):
    """
    ## What it does
    Flags `self.layers = [nn.Linear(...), ...]` — a plain list, tuple or dict
    of submodules with parameters, built or filled (`self.layers.append(...)`)
    in an `nn.Module` — when the class never registers them otherwise.

    ## Why is this bad?
    `nn.Module` registers the submodules it finds in its attributes, not
    those inside a list or dict. The layers are missing from
    `model.parameters()` (the optimizer never trains them), from
    `state_dict()` (never saved), and `model.to(device)` does not move them:
    on a GPU, forward fails with
    `RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same`.

    Not flagged: a local list later wrapped (`self.blocks = nn.Sequential(*blocks)`,
    `nn.ModuleList(self.layers)`), modules also registered another way
    (`add_module`, `setattr`, an attribute of their own), lists of modules
    without parameters (`nn.ReLU()`), and lists of modules passed in from
    outside (often kept unregistered on purpose).

    A stray trailing comma (`self.conv = nn.Conv2d(3, 8, 3),`) makes a
    one-element tuple: reported with its own message, and fixed by removing
    the comma.

    ## Example
    ```python
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(16, 16) for _ in range(4)]
    ```

    ## Use instead
    ```python
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(16, 16) for _ in range(4)])
    ```

    ## Fix safety
    Unsafe: `nn.ModuleList` / `nn.ModuleDict` change the parameter set, the
    `state_dict()` keys and what `model.to()` moves — the point of the fix,
    but checkpoints saved before no longer load with `strict=True`, and
    `nn.ModuleDict` only takes string keys. Removing a stray comma turns the
    attribute from a tuple into the module, so code that indexed it
    (`self.conv[0]`) must change too.
    """

    code = "DEV303"
    name = "submodules-in-plain-list"
    message = "Submodules in a plain {kind} are not registered: `model.to()`, `.parameters()` and `state_dict()` miss them; use `nn.{container}`"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("cpu", "cuda"),
        summary="the layers' parameters are missing from model.parameters() (not trained, saved or moved: "
        "on CUDA, forward raises `Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same`)",
        postcondition=True,
    )
    triggers = ("self.",)

    def __init__(self, *args) -> None:
        super().__init__(*args)
        # (class node id, attribute) that some method fills with stateful modules.
        self._filled: set[tuple[int, str]] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Subscript):  # `self.heads[name] = nn.Linear(...)`
            self._note_filled(target.value, [node.value])
            return
        attr = _self_attribute(target)
        if attr is None:
            return
        info = classes.in_init(self.ctx)
        if info is None or not isinstance(node.value, (*_LIST_DISPLAYS, *_DICT_DISPLAYS)):
            return
        value = node.value
        if not self._unregistered_otherwise(info, attr, value):
            return
        elements = _elements(value)
        is_dict = isinstance(value, _DICT_DISPLAYS)
        message = self.message.format(
            kind="dict" if is_dict else "tuple" if isinstance(value, cst.Tuple) else "list",
            container="ModuleDict" if is_dict else "ModuleList",
        )
        if elements:
            if any(self._stateful(e) for e in elements):
                if _stray_comma(value):
                    fix = self.fix("Remove the trailing comma", [(value, elements[0])])
                    self.report(value, _STRAY_COMMA_MESSAGE, fix=fix)
                else:
                    self.report(value, message, fix=self._fix(node, value))
            return
        if isinstance(value, (cst.List, cst.Dict)):  # empty: flagged if some method fills it
            key = (id(info.node), attr)
            self.report(value, message, fix=self._fix(node, value), condition=lambda: key in self._filled)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.value, _LIST_DISPLAYS):
            self._note_filled(node.target, _elements(node.value))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _ADDING_METHODS:
            return
        args = [a.value for a in node.args if a.keyword is None and not a.star]
        if func.attr.value == "insert":
            args = args[1:]
        elif func.attr.value == "extend":
            args = [e for a in args if isinstance(a, _LIST_DISPLAYS) for e in _elements(a)]
        self._note_filled(func.value, args)

    def _note_filled(self, container: cst.BaseExpression, added: list[cst.BaseExpression]) -> None:
        attr = _self_attribute(container)
        if attr is None:
            return
        found = classes.enclosing_method(self.ctx)
        if found is None or not found[0].is_module:
            return
        if any(self._stateful(e) for e in added):
            self._filled.add((id(found[0].node), attr))

    def _stateful(self, expr: cst.BaseExpression) -> bool:
        """A module with parameters, built here (or bound to a local name that
        is not also stored elsewhere)."""
        if isinstance(expr, cst.Name):
            function = self.ctx.current_function()
            if function is None or expr.value in _params(function):
                return False
            if _stored_on_self(function, expr.value):
                return False
            sources = _local_constructor(function, expr.value)
            return any(classes.constructs_stateful_module(self.ctx, c) for c in sources)
        return classes.constructs_stateful_module(self.ctx, expr)

    def _unregistered_otherwise(self, info, attr: str, value: cst.BaseExpression) -> bool:
        facts = classes.attributes(info)
        seen = facts.get(attr)
        # Handed to a call, the list may be registered or owned there; not when
        # the call only iterates or inspects it (`enumerate(self.layers)`).
        handed_off = any(
            not (type(callee) is cst.Name and callee.value in _INSPECTING_BUILTINS) for callee, _ in seen.passed_to
        )
        if facts.dynamic_registration or seen.registered or handed_off:
            return False
        # Assigned something else elsewhere (`self.layers = nn.ModuleList(self.layers)`).
        return all(v is value or isinstance(v, (*_LIST_DISPLAYS, *_DICT_DISPLAYS)) for _, v in seen.assigned_in)

    def _fix(self, statement: cst.Assign, value: cst.BaseExpression) -> Optional[NodeFix]:
        prefix = _nn_prefix(self.ctx)
        if prefix is None:
            return None
        if isinstance(value, _DICT_DISPLAYS):
            if isinstance(value, cst.Dict) and not all(
                isinstance(el, cst.DictElement) and _string_key(el.key) for el in value.elements
            ):
                return None
            if isinstance(value, cst.DictComp):
                return None
            container = "ModuleDict"
        else:
            container = "ModuleList"
        func = cst.parse_expression(f"{prefix}{container}")
        if isinstance(value, cst.Tuple):  # `(a, b)` -> `[a, b]`
            value = cst.List(elements=value.elements)
        args = [cst.Arg(value.with_changes(lpar=[], rpar=[]))] if _elements(value) else []
        new = statement.with_changes(value=cst.Call(func=func, args=args))
        return self.fix(f"Use `nn.{container}`", [(statement, new)])


_STRAY_COMMA_MESSAGE = (
    "A trailing comma makes this a 1-tuple: the submodule is not registered (`model.to()`, "
    "`.parameters()` and `state_dict()` miss it) and calling it fails; remove the comma"
)


def _stray_comma(value: cst.BaseExpression) -> bool:
    """`self.conv = nn.Conv2d(...),`: a one-element tuple without parentheses,
    almost always a comma left over from an argument list, not a container."""
    return (
        isinstance(value, cst.Tuple)
        and not value.lpar
        and len(value.elements) == 1
        and not isinstance(value.elements[0], cst.StarredElement)
    )


def _self_attribute(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return expr.attr.value
    return None


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(value, (cst.List, cst.Tuple)):
        return [el.value for el in value.elements if not isinstance(el, cst.StarredElement)]
    if isinstance(value, cst.ListComp):
        return [value.elt]
    if isinstance(value, cst.Dict):
        return [el.value for el in value.elements if isinstance(el, cst.DictElement)]
    if isinstance(value, cst.DictComp):
        return [value.value]
    return []


def _string_key(key: cst.BaseExpression) -> bool:
    if isinstance(key, cst.SimpleString):
        text = key.evaluated_value
        return isinstance(text, str) and bool(text) and "." not in text
    return isinstance(key, cst.FormattedString)


def _params(function: cst.FunctionDef) -> set[str]:
    p = function.params
    names = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


_REGISTERING_CALLS = frozenset({"add_module", "register_module", "setattr"})


# Builtins that iterate or inspect a list and hand on no copy of it (not
# `list`, `tuple`, `sorted`, `reversed`: `nn.Sequential(*list(self.blocks))`
# registers what they return).
_INSPECTING_BUILTINS = frozenset("enumerate zip len any all sum min max print isinstance".split())


def _statements(function: cst.FunctionDef):
    """Assignments and calls in the function body (not in nested functions)."""
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Assign, cst.Call)):
            yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(node))  # not `node.children`: libcst rebuilds (and re-validates) each node


def _stored_on_self(function: cst.FunctionDef, name: str) -> bool:
    """`self.block1 = block`, `self.add_module("b", block)`, `setattr(self, n, block)`:
    registered under a name of its own."""
    for node in _statements(function):
        if isinstance(node, cst.Assign):
            if isinstance(node.value, cst.Name) and node.value.value == name:
                if any(isinstance(t.target, cst.Attribute) for t in node.targets):
                    return True
        else:
            func = node.func
            called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
            if called in _REGISTERING_CALLS and any(
                isinstance(a.value, cst.Name) and a.value.value == name for a in node.args
            ):
                return True
    return False


def _local_constructor(function: cst.FunctionDef, name: str) -> list[cst.Call]:
    """The calls a local name is bound to in the function (`block = Block(dim)`)."""
    found = []
    for node in _statements(function):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in node.targets):
                found.append(node.value)
    return found


def _nn_prefix(ctx) -> Optional[str]:
    """How this file spells `torch.nn.`: `nn.`, `torch.nn.`, `th.nn.`."""
    for local, full in ctx.imports.aliases.items():
        if full == "torch.nn":
            return f"{local}."
    torch = ctx.torch_alias()
    return f"{torch}.nn." if torch else None
