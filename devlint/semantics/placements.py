"""Where code puts data on a device: `.to(dev)`, `.cuda()`, `device=...`,
`torch.cuda.set_device(i)`, `map_location=...`, `torch.set_default_device(d)`.

One question, asked by every portability rule: "is this call a placement, and
on which device?"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import bindings, classes, torchapi
from .names import dotted
from .context import keyword
from .values import Device

if TYPE_CHECKING:
    from .context import Context

# Method calls that place their receiver on the accelerator the name says.
ACCELERATOR_METHODS = {"cuda": "cuda", "mps": "mps", "xpu": "xpu"}
# torch functions whose (first) argument is a device they select or default to.
_DEVICE_SETTERS = {
    "torch.cuda.set_device": "cuda",
    "torch.set_default_device": None,
    "torch.cuda.device": "cuda",
}
_LOADERS = frozenset({"torch.load", "torch.jit.load"})
LOADERS = _LOADERS  # calls that take a `map_location`
# Tensor.cuda / Module.cuda take only these: anything else is another library's method.
_ACCELERATOR_METHOD_KEYWORDS = frozenset({"device", "non_blocking", "memory_format"})
# `Tensor.to` keywords that change no device.
_CAST_KEYWORDS = frozenset({"dtype", "non_blocking", "copy", "memory_format"})


@dataclass(frozen=True)
class Placement:
    call: cst.Call
    how: str  # "method" (.to/.cuda), "device-kwarg", "setter", "map_location"
    # The expression naming the device, None for `.cuda()` without arguments.
    target: Optional[cst.BaseExpression]
    device: Optional[Device]  # what is known of that device; None if nothing

    def hardcoded(self, device_type: str) -> bool:
        return self.device is not None and self.device.hardcoded(device_type)


def placement(ctx: "Context", call: cst.Call) -> Optional[Placement]:
    func = call.func
    qual = ctx.qualify(func)
    if qual is not None and _rebound_import(ctx, func):
        qual = None  # `Generator = Generator(); Generator.cuda()`: an instance now, not the import
    if qual is not None:
        if qual in _DEVICE_SETTERS:
            arg = _first(call) or keyword(call, "device")
            if arg is None:
                return None
            if qual == "torch.cuda.device" and _read_from_data(arg):
                # `with torch.cuda.device(x.device):` in a kernel wrapper makes the input's
                # own GPU current: a CUDA device only where the data already is on one.
                return Placement(call, "setter", arg, ctx.device_of(arg))
            return Placement(call, "setter", arg, _device_or_index(ctx, arg, _DEVICE_SETTERS[qual]))
        if qual in _LOADERS:
            arg = keyword(call, "map_location")
            if arg is None:
                return None
            return Placement(call, "map_location", arg, ctx.device_of(arg))
        if qual.startswith("torch.") and qual not in torchapi.DEVICE_KEYWORD_NOT_PLACING:
            arg = keyword(call, "device")
            if arg is not None:
                return Placement(call, "device-kwarg", arg, ctx.device_of(arg))
        return None
    if not isinstance(func, cst.Attribute):
        return None
    method = func.attr.value
    receiver = func.value
    if ctx.defines_own(receiver, method):
        return None
    if method in ACCELERATOR_METHODS:
        if not _matches_signature(call, _ACCELERATOR_METHOD_KEYWORDS, max_positional=2):
            return None  # another library's `.cuda(tensor, meta=...)`
        if _narrowed_to_foreign_class(ctx, receiver):
            return None  # `if isinstance(m, HQQLinear): m.cuda(device)`: that class's own method
        if _holds_no_tensors(ctx, receiver):
            return None  # `nn.BCELoss().cuda()` moves nothing and never asks for CUDA
        arg = _first(call) or keyword(call, "device")
        if arg is None:
            return Placement(call, "method", None, Device(ACCELERATOR_METHODS[method], literal=True))
        if ctx.is_tensor(arg):
            return None
        return Placement(call, "method", arg, _device_or_index(ctx, arg, ACCELERATOR_METHODS[method]))
    if method == "to":
        arg = keyword(call, "device") or _first(call)
        if arg is None or ctx.is_dtype(arg) or ctx.is_tensor(arg) or _holds_no_tensors(ctx, receiver):
            return None
        return Placement(call, "method", arg, ctx.device_of(arg))
    if method.startswith("new_") or method in torchapi.TENSOR_RETURNING_METHODS:
        arg = keyword(call, "device")
        if arg is not None:
            return Placement(call, "device-kwarg", arg, ctx.device_of(arg))
    return None


def is_cast(ctx: "Context", call: cst.Call) -> bool:
    """`x.to(torch.int32)`, `x.to(dtype=torch.long)`: a cast that keeps the device."""
    if not call.args:
        return False
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is None:
            if not ctx.is_dtype(arg.value):
                return False
        elif arg.keyword.value not in _CAST_KEYWORDS:
            return False
    return True


def _first(call: cst.Call) -> Optional[cst.BaseExpression]:
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _matches_signature(call: cst.Call, keywords: frozenset[str], max_positional: int) -> bool:
    positional = 0
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value not in keywords:
            return False
    return positional <= max_positional


def _holds_no_tensors(ctx: "Context", receiver: cst.BaseExpression) -> bool:
    """`nn.BCELoss()`, `criterion = nn.MSELoss()`, `nn.ReLU()`: a torch module
    with no parameters or buffers. Not a loss given a `weight` (a buffer)."""
    value = ctx.value_of(receiver)
    qual = value.cls if value.is_module else None
    if qual is None and isinstance(receiver, cst.Name):
        # `for fn in losses: fn.cuda()`, `[fn.cuda() for fn in losses]` over a list
        # of modules that each hold none (`[StyleLoss()] * 5 + [nn.MSELoss()]`).
        elements = _iterated_list(ctx, receiver)
        return bool(elements) and all(
            not (type(e) is cst.Name and e.value == receiver.value) and _holds_no_tensors(ctx, e)  # type: ignore[attr-defined]
            for e in elements
        )
    local = ctx.classes.get(qual) if qual is not None else None
    if local is not None:
        # A module class of this file that holds no tensors (`class ECE(nn.Module)`
        # keeping plain tensors), made here: nothing to move.
        return classes.holds_no_state(ctx, local) and _built_by(ctx, receiver, qual)  # type: ignore[arg-type]
    if qual is None or not qual.startswith("torch.nn."):
        return False
    last = qual.rsplit(".", 1)[-1]
    if not (last.endswith("Loss") or last in torchapi.STATELESS_MODULES):
        return False
    if isinstance(receiver, cst.Name):
        # `criterion = nn.CrossEntropyLoss().cuda()`, then `criterion = criterion.cuda()` in a loop.
        made = _made_as(ctx, receiver)
        return bool(made) and all(_built_without_state(m) for m in made)
    if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
        # `self.criterion = nn.L1Loss()` (and `self.criterion = self.criterion.cuda()`).
        info = ctx.current_class()
        if info is None:
            return False
        made = [
            _unmoved(value) for _, value in classes.attributes(info).get(receiver.attr.value).assigned_in
            if not _moves_itself(value, receiver.attr.value)
        ]
        return len(made) == 1 and _built_without_state(made[0])
    return _built_without_state(_unmoved(receiver))


def _iterated_list(ctx: "Context", name: cst.Name) -> list[cst.BaseExpression]:
    """The elements of the list literal that the loop or comprehension around
    the walk iterates with `name` as its whole target: `[a, b]`, `[a] * 5 + [b]`,
    or a name certain to hold one. Nothing when unknown."""
    for node in reversed(ctx.stack):
        if type(node) in (cst.ListComp, cst.GeneratorExp, cst.SetComp):
            target, iterable = node.for_in.target, node.for_in.iter  # type: ignore[attr-defined]
        elif type(node) is cst.For:
            target, iterable = node.target, node.iter  # type: ignore[attr-defined]
        elif type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
            return []
        else:
            continue
        if type(target) is cst.Name and target.value == name.value:
            if type(iterable) is cst.Name:
                iterable = bindings.certain_source(ctx, iterable)
            return _list_elements(iterable) if iterable is not None else []
    return []


def _list_elements(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    if type(expr) is cst.List:
        found = [e.value for e in expr.elements]  # type: ignore[attr-defined]
        return [] if any(type(e) is cst.StarredElement for e in expr.elements) else found  # type: ignore[attr-defined]
    if type(expr) is cst.BinaryOperation:
        op = type(expr.operator)  # type: ignore[attr-defined]
        if op is cst.Add:
            left, right = _list_elements(expr.left), _list_elements(expr.right)  # type: ignore[attr-defined]
            return left + right if left and right else []
        if op is cst.Multiply:  # `[m] * 5`
            return _list_elements(expr.left) or _list_elements(expr.right)  # type: ignore[attr-defined]
    return []


def _built_by(ctx: "Context", receiver: cst.BaseExpression, cls: str) -> bool:
    """Is `receiver` certainly an instance of the file's class `cls`: built
    inline (`ECE().cuda()`), or a name every binding of which builds one."""
    def builds(expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == cls

    if isinstance(receiver, cst.Name):
        made = _made_as(ctx, receiver)
        return bool(made) and all(builds(m) for m in made)
    return builds(_unmoved(receiver))


def _made_as(ctx: "Context", name: cst.Name) -> list[cst.BaseExpression]:
    """What the bindings of `name` build, moves stripped; not `m = m.cuda()`."""
    made = (_unmoved(value) for value in bindings.assigned_expressions(ctx, name))
    return [m for m in made if not (isinstance(m, cst.Name) and m.value == name.value)]


def _unmoved(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`nn.MSELoss().cuda()` -> `nn.MSELoss()`: a module's move returns the module."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("to", "cuda", "cpu")
    ):
        expr = expr.func.value
    return expr


def _built_without_state(expr: cst.BaseExpression) -> bool:
    """A constructor call given no positional argument and no `weight`."""
    return isinstance(expr, cst.Call) and not any(
        a.keyword is None or a.keyword.value in ("weight", "pos_weight") for a in expr.args
    )


def _moves_itself(value: cst.BaseExpression, attr: str) -> bool:
    """`self.<attr>.cuda()`, `self.<attr>.to(device)`."""
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("to", "cuda", "cpu")
        and isinstance(value.func.value, cst.Attribute)
        and value.func.value.attr.value == attr
        and isinstance(value.func.value.value, cst.Name)
        and value.func.value.value.value == "self"
    )


def _read_from_data(arg: cst.BaseExpression) -> bool:
    """`x.device`, `x.device.index`, `x.get_device()`: where some tensor (or
    module) already is, not a device picked here."""
    if type(arg) is cst.Attribute and arg.attr.value == "index":  # type: ignore[attr-defined]
        arg = arg.value  # type: ignore[attr-defined]
    if type(arg) is cst.Call and type(arg.func) is cst.Attribute:  # type: ignore[attr-defined]
        return arg.func.attr.value == "get_device" and not arg.args  # type: ignore[attr-defined]
    return type(arg) is cst.Attribute and arg.attr.value == "device"  # type: ignore[attr-defined]


def _rebound_import(ctx: "Context", func: cst.BaseExpression) -> bool:
    """Is the head of `func` (`Generator` of `Generator.cuda`) an imported
    name that the code has since assigned to (`Generator = Generator(1, 3)`)?"""
    head = func
    while type(head) is cst.Attribute:
        head = head.value  # type: ignore[attr-defined]
    if type(head) is not cst.Name or ctx.imports.aliases.get(head.value) == "torch":  # type: ignore[attr-defined]
        return False  # not `torch` itself: `except ImportError: torch = None` changes nothing that runs
    return any(head.value in scope.names for scope in ctx.scopes)  # type: ignore[attr-defined]


def _narrowed_to_foreign_class(ctx: "Context", receiver: cst.BaseExpression) -> bool:
    """Is `receiver` checked, in an enclosing `if`, to be an instance of a class
    imported from outside torch (`isinstance(module, HQQLinear)`)? Such a class
    may define `.cuda()` its own way."""
    name = dotted(receiver)
    if name is None:
        return False
    for node in ctx.stack:
        if not isinstance(node, cst.If):
            continue
        test = node.test
        if (
            isinstance(test, cst.Call)
            and isinstance(test.func, cst.Name)
            and test.func.value == "isinstance"
            and len(test.args) == 2
            and dotted(test.args[0].value) == name
        ):
            qual = ctx.qualify(test.args[1].value)
            if qual is not None and not qual.startswith("torch."):
                return True
    return False


def _device_or_index(ctx: "Context", arg: cst.BaseExpression, implied: Optional[str]) -> Optional[Device]:
    """`.cuda(1)` / `set_device(1)`: a bare integer is an ordinal of the implied type.
    `.cuda(args.gpu)` / `set_device(local_rank)` with a value chosen elsewhere
    only picks the index: the type is written out, as hardcoded as in
    `.cuda()`. So is a parameter (`def train(gpu, args): model.cuda(gpu)`):
    whatever the caller passes, the backend is CUDA; only `.to(device)`
    leaves the backend to the caller."""
    if isinstance(arg, cst.Integer) and implied is not None:
        return Device(implied, int(arg.value), literal=True)
    device = ctx.device_of(arg)
    if device is None and implied is not None:
        return Device(implied, literal=True)
    return device

