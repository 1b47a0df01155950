"""Facts about devices beyond "which one":

- which device strings torch rejects (`'gpu'`, `'cuda0'`, `'CUDA'`);
- where in a call a device is expected (`torch.device(...)`, `device=`,
  `map_location=`, `.to(...)` on a tensor or module, `.cuda(...)`);
- which expressions are certainly `torch.device` objects, not strings;
- which modules have no `.device` attribute at all.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Iterator, Optional

import libcst as cst

from . import torchapi
from .bindings import certain_value
from .placements import placement
from .values import Device, Kind, Value

if TYPE_CHECKING:
    from .context import Context
    from .scopes import ClassInfo

# What torch's parser accepts (c10/core/Device.cpp): `([a-zA-Z_]+)(?::([1-9]\d*|0))?`.
_GRAMMAR = re.compile(r"(?P<type>[A-Za-z_]+)(?::(?P<index>0|[1-9][0-9]*))?")
# Lowercase names torch rejects that people write for a GPU. Other unknown
# lowercase names may be out-of-tree backends registered at run time
# (`torch.utils.rename_privateuse1_backend("npu")`), so they are not judged.
_NOT_DEVICE_TYPES = frozenset({"gpu", "gpus", "tpu", "nvidia", "cude"})


def device_string_error(text: str) -> Optional[str]:
    """Why `torch.device(text)` raises, or None when it parses (or might)."""
    if not text:
        return "empty device string"
    m = _GRAMMAR.fullmatch(text)
    if m is None:
        return "malformed device string"
    dtype = m.group("type")
    if dtype in torchapi.DEVICE_TYPES:
        return None
    if dtype != dtype.lower() or dtype in _NOT_DEVICE_TYPES:
        return "unknown device type"
    return None


def device_arguments(ctx: "Context", call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of `call` that torch parses as a device.

    `torch.device(x)`, `device=x` of a torch function, `map_location=x`,
    `torch.cuda.set_device(x)`, `.cuda(x)`; and `.to(x)` / `.new_zeros(device=x)`
    only where the receiver is known to be a tensor or module (another
    library's `.to` may take anything)."""
    qual = ctx.qualify(call.func)
    if qual == "torch.device":
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        first = positional[0] if positional else _keyword(call, "type")
        return [first] if first is not None else []
    found = placement(ctx, call)
    if found is None or found.target is None:
        return []
    if qual is None and isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        if method not in ("cuda", "mps", "xpu"):
            receiver = ctx.value_of(call.func.value)
            if not (receiver.is_tensor or (receiver.is_module and method == "to")):
                return []
    if found.how == "map_location" and not isinstance(found.target, (cst.SimpleString, cst.ConcatenatedString)):
        return []  # dicts and callables map locations, not devices
    return [found.target]


def string_literals(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """String literals an expression can evaluate to: itself, or the branches
    of a conditional expression."""
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        if isinstance(expr.evaluated_value, str):
            yield expr
    elif isinstance(expr, cst.IfExp):
        yield from string_literals(expr.body)
        yield from string_literals(expr.orelse)


def known_device(ctx: "Context", expr: cst.BaseExpression) -> Optional[tuple[Device, Callable[[], bool]]]:
    """`expr` is certainly a `torch.device` object: `torch.device(...)`, a known
    tensor's `.device`, a parameter annotated `torch.device`, a name bound to
    one. Returns what is known of the device, and a condition to re-check once
    the whole file is walked (a class' attributes may still change)."""
    always: Callable[[], bool] = lambda: True
    if isinstance(expr, cst.Call):
        value = ctx.value_of(expr)
        if value.kind is Kind.DEVICE and ctx.qualify(expr.func) == "torch.device":
            return value.device or Device(), always
        return None
    if isinstance(expr, cst.Name):
        value = certain_value(ctx, expr)
        if value.kind is Kind.DEVICE:
            return value.device or Device(), always
        return None
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "device" and not _is_self(expr.value):
            receiver, later = _certain(ctx, expr.value)
            if receiver.is_tensor:
                return Device(of_tensor=True), lambda: later().is_tensor
            return None
        value, later = _certain(ctx, expr)
        if value.kind is Kind.DEVICE and _is_self(expr.value):
            return value.device or Device(), lambda: later().kind is Kind.DEVICE
    return None


def _certain(ctx: "Context", expr: cst.BaseExpression) -> tuple[Value, Callable[[], Value]]:
    """What `expr` certainly is now, and a way to ask again at the end of the
    file: `self.<attr>` is re-read once every method has been walked."""
    if isinstance(expr, cst.Attribute) and _is_self(expr.value):
        cls = ctx.current_class()
        attr = expr.attr.value
        if cls is None or attr in cls.members or _dynamic(cls):
            return Value(), lambda: Value()
        return cls.attrs.get(attr, Value()), lambda: cls.attrs.get(attr, Value())
    value = certain_value(ctx, expr)
    return value, lambda: value


def _dynamic(cls: "ClassInfo") -> bool:
    return bool({"__getattr__", "__getattribute__", "__setattr__"} & cls.members)


# -- modules without `.device` ----------------------------------------------
# torch.nn classes that set `self.device` themselves.
_TORCH_MODULES_WITH_DEVICE = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
)


def lacks_device_attribute(ctx: "Context", value: Value) -> bool:
    """Is `value` certainly an nn.Module whose class has no `device` attribute:
    a plain `torch.nn` layer, or a local subclass of only such classes that
    never defines or assigns `device`?"""
    return value.is_module and value.cls is not None and _class_lacks_device(ctx, value.cls, set())


def class_lacks_device(ctx: "Context", cls: "ClassInfo") -> bool:
    return cls.is_module and _class_lacks_device(ctx, cls.name, set())


def _class_lacks_device(ctx: "Context", name: str, seen: set[str]) -> bool:
    if name in seen:
        return False
    seen.add(name)
    if "." in name:
        return plain_torch_module(name)
    info = ctx.classes.get(name)
    if info is None or not info.is_module or _dynamic(info):
        return False
    if "device" in info.members or "device" in info.attrs:
        return False
    return all(
        base in torchapi.MODULE_BASES or (base in ctx.classes and _class_lacks_device(ctx, base, seen))
        or plain_torch_module(base)
        for base in info.bases
    )


def plain_torch_module(qual: str) -> bool:
    """A `torch.nn` module class known to have no `device` attribute."""
    if qual in torchapi.MODULE_BASES:
        return True
    if not torchapi.is_module_constructor(qual) or qual in _TORCH_MODULES_WITH_DEVICE:
        return False
    return ".parallel." not in qual


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"
