from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import Kind, bindings, classes, residence, torchapi
from ..semantics.placements import is_cast
from ..semantics.names import is_variable_use
from ..semantics.tree import children, iter_subtree

# Methods of a fresh tensor that keep it where it is.
_KEEPS_DEVICE = frozenset(
    "half float double bfloat16 int long bool byte char short view reshape unsqueeze squeeze "
    "transpose permute t expand expand_as repeat flatten contiguous clone detach triu tril flip "
    "roll tile repeat_interleave exp log sqrt abs neg pow cumsum cumprod sum mean softmax sigmoid "
    "view_as reshape_as unbind chunk split narrow select".split()
)
_TRANSPARENT_ATTRS = frozenset({"T", "mT", "data"})


@dataclass(frozen=True)
class _Meeting:
    """Where a fresh host tensor ends up: it meets `other` (None: a module's
    parameters), or is bound to the local name `bound`."""

    met: bool = False
    other: Optional[cst.BaseExpression] = None
    bound: Optional[str] = None


_NOTHING = _Meeting()
_CLIMB = _Meeting(bound="")  # keep climbing: the call's result is the fresh tensor still

# torch functions whose result stays where their first argument is.
_KEEPING_FUNCTIONS = frozenset(
    f"torch.{n}"
    for n in (
        "triu tril exp log sqrt abs flip roll cumsum cumprod sin cos sigmoid tanh relu softmax "
        "log_softmax flatten reshape squeeze unsqueeze transpose permute repeat_interleave tile diag "
        "clone sum mean logical_not broadcast_to"
    ).split()
) | frozenset({"torch.nn.functional.pad", "torch.nn.functional.one_hot"})
# `Variable(t)` has returned `t` itself since torch 0.4; `nn.Parameter(t)` made
# in `forward` wraps t where it is (nothing registers or moves it).
_KEEPING_FUNCTIONS |= torchapi.WRAPPING_CONSTRUCTORS


class FactoryWithoutDevice(Rule):
    """
    ## What it does
    Flags `torch.zeros`, `ones`, `arange`, `full`, `eye`, `tensor([...])`,
    `randn`, the other factories, and the legacy typed constructors
    (`torch.FloatTensor(x.shape)`) called without `device=` inside an
    `nn.Module`'s `forward` (or a helper `forward` calls) when the new tensor
    then meets an input, a parameter or a submodule: in arithmetic, in
    `torch.cat`/`where`/`matmul`, as the argument of a submodule
    (`self.embed(positions)`), or in `masked_fill`.

    ## Why is this bad?
    A factory without `device=` makes its tensor on the CPU. Once the model
    and its inputs are on a GPU, the operation that mixes them fails with
    `RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!`
    The model works in CPU tests and breaks on the first GPU run.

    Not flagged: factories with `device=`, `torch.zeros_like(x)`,
    `x.new_zeros(...)`, 0-dim tensors (`torch.tensor(0.5)` mixes with any
    device), results moved before use (`.to(x.device)`, `.type_as(x)`;
    a cast such as `.to(x.dtype)` moves nothing), tensors
    used as indices, and files that change the default device.

    ## Example
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1])
        return x + self.pos_embed(positions)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        positions = torch.arange(x.shape[1], device=x.device)
        return x + self.pos_embed(positions)
    ```

    ## Fix safety
    Unsafe: the fix adds `device=<input>.device` for an input tensor of the
    method, which is where the model runs only if that input is on the
    model's device — usually, not always (a model split over several GPUs).
    """

    code = "DEV304"
    name = "factory-without-device"
    message = "`{factory}()` without `device=` in `forward` makes a CPU tensor that then meets the model's tensors"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("cuda",),
        summary="RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        raises="RuntimeError",
        # The mix raises where the tensors meet: a binary op, a method, or an RNN given a host state.
        match=r"(?i)expected .*to be (on|in) the same device|are not at the same device",
    )
    triggers = torchapi.HOST_FACTORY_TRIGGERS

    def __init__(self, *args) -> None:
        super().__init__(*args)
        # Per function: local names bound to a fresh host tensor (-> its factory call),
        # and local names that follow the model's device.
        self._fresh: dict[int, dict[str, cst.Call]] = {}
        self._resident: dict[int, set[str]] = {}
        self._params: dict[int, list[str]] = {}
        self._bound_now: set[str] = set()  # names the current assignment binds to a fresh tensor
        # Factories a helper method returns (`def init_hidden(...): return torch.zeros(...)`),
        # followed from where `forward` calls it; each reported once, without a fix
        # (the tensor it meets is not in the helper's scope).
        self._returned: dict[int, Optional[cst.Call]] = {}
        self._remote: set[int] = set()
        self._reported: set[int] = set()

    # -- the walk ------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        if classes.in_forward(self.ctx) is None:
            return
        key = id(self.ctx.current_function())
        resident = self._is_resident(node.value)
        self._bound_now = set()
        names = self._resident.setdefault(key, set())
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                name = target.target.value
                if resident or _passes_itself(node.value, name) and name in names:
                    names.add(name)  # also `h = block(h)`: a layer keeps h where it was
                else:
                    names.discard(name)
            elif isinstance(target.target, (cst.Tuple, cst.List)):
                # `q, k, v = self.qkv(x).chunk(3, -1)`
                for el in target.target.elements:
                    if isinstance(el.value, cst.Name):
                        if resident:
                            names.add(el.value.value)
                        else:
                            names.discard(el.value.value)

    def leave_Assign(self, node: cst.Assign) -> None:
        fresh = self._fresh.get(id(self.ctx.current_function()))
        if not fresh:
            return
        for target in node.targets:
            name = target.target.value if isinstance(target.target, cst.Name) else None
            if name is not None and name not in self._bound_now:
                fresh.pop(name, None)  # rebound to something else (`pos = pos.to(x.device)`)

    def visit_Call(self, node: cst.Call) -> None:
        factory = node if residence.host_factory(self.ctx, node) else None
        if factory is None and not (isinstance(node.func, cst.Attribute) and _is_self(node.func.value)):
            return
        if classes.in_forward(self.ctx) is None or residence.default_device_overridden(self.ctx):
            return
        if factory is None:
            factory = self._returned_factory(node.func.attr.value)  # type: ignore[attr-defined]
            if factory is None:
                return
            self._remote.add(id(factory))
        self._follow(node, factory)

    def _returned_factory(self, method_name: str) -> Optional[cst.Call]:
        """The fresh host tensor a method of this class returns on every path:
        `return torch.zeros(n, b, h)`, or a tuple of them (an LSTM's `(h0, c0)`)."""
        found = classes.enclosing_method(self.ctx)
        method = classes.methods(found[0]).get(method_name) if found is not None else None
        if method is None or method is found[1]:  # type: ignore[index]
            return None
        key = id(method)
        if key not in self._returned:
            factories: list[cst.Call] = []
            sites = bindings.scan(self.ctx, method).sites

            def fresh(v: cst.BaseExpression) -> Optional[cst.Call]:
                # `hidden = torch.zeros(...)` then `return hidden`: a name bound once.
                if isinstance(v, cst.Name):
                    bound = sites.get(v.value, [])
                    v = bound[0].value if len(bound) == 1 and bound[0].kind == "assign" else None  # type: ignore[assignment]
                return v if isinstance(v, cst.Call) and residence.host_factory(self.ctx, v) else None

            nested = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
            returns = (n for n in iter_subtree(method.body, lambda n: isinstance(n, nested)) if type(n) is cst.Return)
            for ret in returns:
                values = [fresh(v) for v in _flatten(ret.value)] if ret.value is not None else []  # type: ignore[attr-defined]
                if not values or None in values:
                    factories = []
                    break
                factories.append(values[0])  # type: ignore[arg-type]
            self._returned[key] = factories[0] if factories else None
        return self._returned[key]

    def visit_Name(self, node: cst.Name) -> None:
        fresh = self._fresh.get(id(self.ctx.current_function()))
        if not fresh or node.value not in fresh:
            return
        if not is_variable_use(self.ctx.parent(), node):
            return
        self._follow(node, fresh[node.value])

    def _follow(self, node: cst.BaseExpression, factory: cst.Call) -> None:
        meeting = self._climb()
        if meeting.bound is not None:
            self._fresh.setdefault(id(self.ctx.current_function()), {})[meeting.bound] = factory
            self._bound_now.add(meeting.bound)
        elif meeting.met and id(factory) not in self._reported:
            self._reported.add(id(factory))
            name = self.ctx.qualify(factory.func) or "torch.<factory>"
            direct = node is factory  # met in the expression that creates it
            fix = None if id(factory) in self._remote else self._fix(factory, meeting.other, direct)
            self.report(factory, self.message.format(factory=name), fix=fix)

    # -- where the fresh tensor goes ---------------------------------------------
    def _climb(self) -> _Meeting:
        """From the current node up: through methods that keep it on the host,
        to the first place it meets another tensor (or is bound to a name)."""
        stack = self.ctx.stack
        child: cst.CSTNode = stack[-1]
        i = len(stack) - 2
        while i >= 0:
            parent = stack[i]
            if isinstance(parent, cst.Attribute) and parent.value is child:
                if parent.attr.value in _TRANSPARENT_ATTRS:
                    child, i = parent, i - 1
                    continue
                call = stack[i - 1] if i >= 1 else None
                if not isinstance(call, cst.Call) or call.func is not parent:
                    return _NOTHING  # `.shape`, `.dtype`: no data
                method = parent.attr.value
                if method in residence.SAME_DEVICE_METHODS:
                    other = self._resident_among([a.value for a in call.args])
                    if other is not None:
                        return _Meeting(True, other)
                elif method not in _KEEPS_DEVICE and not (method == "to" and is_cast(self.ctx, call)):
                    return _NOTHING  # moved (`.to`, `.type_as`, `.cuda`) or left tensor land
                child, i = call, i - 2
                continue
            if isinstance(parent, cst.Subscript) and parent.value is child:
                child, i = parent, i - 1
                continue
            if isinstance(parent, (cst.UnaryOperation, cst.Element, cst.StarredElement, cst.List, cst.Tuple, cst.ComparisonTarget)):
                child, i = parent, i - 1
                continue
            if isinstance(parent, cst.BinaryOperation):
                other = parent.right if parent.left is child else parent.left
                if self._is_resident(other):
                    return _Meeting(True, other)
                if _explicitly_on_host(other):
                    return _NOTHING  # `grid.cpu() * torch.tensor([...])`: host on purpose
                child, i = parent, i - 1
                continue
            if isinstance(parent, cst.Comparison):
                others = [parent.left, *(c.comparator for c in parent.comparisons)]
                other = self._resident_among([o for o in others if o is not child and not _contains(o, stack[-1])])
                if other is not None and not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in parent.comparisons):
                    return _Meeting(True, other)
                child, i = parent, i - 1
                continue
            if isinstance(parent, cst.Arg):
                call = stack[i - 1] if i >= 1 else None
                if not isinstance(call, cst.Call):
                    return _NOTHING
                meeting = self._meets_in_call(call, parent)
                if meeting is not _CLIMB:
                    return meeting
                child, i = call, i - 2
                continue
            if isinstance(parent, cst.Assign) and parent.value is child:
                targets = parent.targets
                if len(targets) == 1 and isinstance(targets[0].target, cst.Name):
                    return _Meeting(bound=targets[0].target.value)
                return _NOTHING
            if isinstance(parent, cst.AugAssign) and parent.value is child:
                if self._is_resident(parent.target):
                    return _Meeting(True, parent.target)
                return _NOTHING
            if isinstance(parent, cst.AugAssign) and parent.target is child:
                # `log_det -= alpha`: the host accumulator meets what is added to it.
                if self._is_resident(parent.value):
                    return _Meeting(True, parent.value)
                return _NOTHING
            return _NOTHING
        return _NOTHING

    def _meets_in_call(self, call: cst.Call, arg: cst.Arg) -> _Meeting:
        qual = self.ctx.qualify(call.func)
        if qual is not None:
            here = self.ctx.stack[-1]
            flat = [x for a in call.args for x in _flatten(a.value) if not _contains(x, here)]
            if qual in residence.SAME_DEVICE_FUNCTIONS:
                other = self._resident_among(flat)
                # `torch.stack((mask, mask))` of host tensors only: still a host tensor.
                return _Meeting(True, other) if other is not None else _CLIMB
            if qual in _KEEPING_FUNCTIONS and call.args and call.args[0] is arg:
                return _CLIMB  # `torch.triu(torch.ones(n, n))`: still a fresh host tensor
            return _NOTHING
        func = call.func
        if isinstance(func, cst.Attribute):
            if _is_self(func.value) and self._stateful_submodule(func.attr.value):
                # `self.embed(positions)`, `self.lstm(x, (h0, c0))`: meets its weights. A torch
                # layer takes only data; another module, data first (then maybe sizes, grids).
                if self._torch_layer(func.attr.value) or _data_argument(call, arg):
                    return _Meeting(True, None)
            if func.attr.value in residence.SAME_DEVICE_METHODS and self._is_resident(func.value):
                return _Meeting(True, func.value)
        return _NOTHING

    # -- what lives with the model -----------------------------------------------
    def _resident_among(self, exprs: list[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        for expr in exprs:
            for item in _flatten(expr):
                if self._is_resident(item):
                    return item
        return None

    def _is_resident(self, expr: cst.BaseExpression) -> bool:
        """Does `expr` live where the model does: an input tensor, a parameter or
        buffer, a submodule's output, or something computed from those?"""
        if isinstance(expr, cst.Name):
            key = id(self.ctx.current_function())
            if expr.value in self._fresh.get(key, {}):
                return False
            return expr.value in self._resident.get(key, ()) or expr.value in self._method_params()
        if isinstance(expr, cst.Attribute):
            if _is_self(expr.value):
                return self._registered_tensor(expr.attr.value)
            if expr.attr.value in _TRANSPARENT_ATTRS:
                return self._is_resident(expr.value)
            return False
        if isinstance(expr, cst.Subscript):
            return self._is_resident(expr.value)
        if isinstance(expr, (cst.UnaryOperation,)):
            return self._is_resident(expr.expression)
        if isinstance(expr, cst.BinaryOperation):
            return self._is_resident(expr.left) or self._is_resident(expr.right)
        if isinstance(expr, cst.Call):
            func = expr.func
            qual = self.ctx.qualify(func)
            if qual is not None:
                if qual.startswith(("torch.", "torch.nn.functional.")) and qual not in torchapi.FACTORIES:
                    return any(self._is_resident(v) for a in expr.args for v in _flatten(a.value))
                return False
            if isinstance(func, cst.Attribute):
                if _is_self(func.value):
                    return self._stateful_submodule(func.attr.value)
                method = func.attr.value
                if method in residence.NON_TENSOR_METHODS or method in ("cpu", "to", "numpy", "tolist", "item"):
                    return False
                return self._is_resident(func.value)
            return False
        return residence.may_be_accelerator(residence.data_device(self.ctx, expr))

    def _method_params(self) -> list[str]:
        found = classes.enclosing_method(self.ctx)
        if found is None:
            return []
        method = found[1]
        key = id(method)
        if key not in self._params:
            self._params[key] = residence.tensor_params(self.ctx, method)
        return self._params[key]

    def _registered_tensor(self, attr: str) -> bool:
        """`self.weight` of an `nn.Parameter` / `nn.Buffer` / registered buffer."""
        found = classes.enclosing_method(self.ctx)
        if found is None:
            return False
        facts = classes.attributes(found[0]).get(attr)
        if facts.registered:
            return True
        return any(
            isinstance(v, cst.Call) and self.ctx.qualify(v.func) in torchapi.NOT_MODULE_CONSTRUCTORS
            for _, v in facts.assigned_in
        )

    def _stateful_submodule(self, attr: str) -> bool:
        """`self.<attr>` is a submodule with parameters or buffers."""
        found = classes.enclosing_method(self.ctx)
        if found is None:
            return False
        info = found[0]
        if attr in classes.methods(info):
            return False
        value = info.attrs.get(attr)
        if value is None or value.kind is not Kind.MODULE:
            return False
        facts = classes.attributes(info).get(attr)
        return any(
            v is not None and classes.constructs_stateful_module(self.ctx, v) for _, v in facts.assigned_in
        )

    def _torch_layer(self, attr: str) -> bool:
        found = classes.enclosing_method(self.ctx)
        value = found[0].attrs.get(attr) if found is not None else None
        return value is not None and (value.cls or "").startswith("torch.nn.")

    # -- the fix -------------------------------------------------------------
    def _fix(self, factory: cst.Call, other: Optional[cst.BaseExpression], direct: bool) -> Optional[NodeFix]:
        if self.ctx.qualify(factory.func) in torchapi.LEGACY_CPU_CONSTRUCTORS:
            return None  # `torch.FloatTensor(..., device=)` is DEV207's bug: the author rewrites it
        params = self._method_params()
        if isinstance(other, cst.Name) and (other.value in params or direct):
            name = other.value  # the tensor it meets, bound by then
        elif params:
            name = params[0]
        else:
            return None
        device = cst.Arg(
            keyword=cst.Name("device"),
            value=cst.parse_expression(f"{name}.device"),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        )
        args = list(factory.args)
        if args and not isinstance(args[-1].comma, cst.Comma):
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        new = factory.with_changes(args=[*args, device])
        return self.fix(f"Create it on `{name}.device`", [(factory, new)])


# Keyword arguments of a submodule call that carry data to mix with its
# tensors (not sizes or grids): `attention_mask=`, `position_ids=`.
_DATA_KEYWORDS = ("mask", "ids", "position", "input", "hidden", "embed", "states")


def _data_argument(call: cst.Call, arg: cst.Arg) -> bool:
    """The submodule's input: its first positional argument, or a data keyword."""
    if arg.keyword is not None:
        return any(w in arg.keyword.value for w in _DATA_KEYWORDS)
    positional = [a for a in call.args if a.keyword is None]
    return bool(positional) and positional[0] is arg and not arg.star


def _explicitly_on_host(expr: cst.BaseExpression) -> bool:
    """`t.cpu()`, `t.to("cpu")`: a value the code puts on the host on purpose."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if expr.func.attr.value == "cpu":
            return True
        if expr.func.attr.value == "to" and expr.args:
            first = expr.args[0].value
            return isinstance(first, cst.SimpleString) and first.evaluated_value == "cpu"
    return False


def _passes_itself(value: cst.BaseExpression, name: str) -> bool:
    """`h = block(h)`, `h = layer(h, mask)`."""
    return isinstance(value, cst.Call) and any(
        isinstance(a.value, cst.Name) and a.value.value == name for a in value.args
    )


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _flatten(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return [x for el in expr.elements for x in _flatten(el.value)]
    return [expr]


def _contains(root: cst.CSTNode, node: cst.CSTNode) -> bool:
    if root is node:
        return True
    return any(_contains(c, node) for c in children(root))
