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
from .bindings import certain_source, certain_value
from .context import string_value
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
# ("tpu" is not among them: the TPU backend for torch registers it.)
_NOT_DEVICE_TYPES = frozenset({"gpu", "gpus", "nvidia", "cude"})


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


# A placeholder of `%` formatting or of `str.format`.
_PLACEHOLDER = re.compile(r"%[-+ #0]*\d*[dis]|\{[^{}]*\}")


def device_texts(expr: cst.BaseExpression) -> Iterator[tuple[cst.BaseExpression, str]]:
    """The device strings an expression can evaluate to, with the node that
    writes each: string literals, the branches of a conditional expression,
    and strings built at run time whose text up to the `:` is written out
    (`"cuda: {}".format(i)`, `f"cuda:{rank}"`, `"cuda:%d" % i`, `"cuda:" +
    str(i)`), with `0` for the index — whatever the index, the rest is fixed."""
    if isinstance(expr, cst.IfExp):
        yield from device_texts(expr.body)
        yield from device_texts(expr.orelse)
        return
    for literal in string_literals(expr):
        yield literal, literal.evaluated_value  # type: ignore[attr-defined]
    built = _built_text(expr)
    if built is not None:
        yield expr, built


def _built_text(expr: cst.BaseExpression) -> Optional[str]:
    """`"cuda: {0}".format(i)` -> `"cuda: 0"`, when the device type is written out."""
    if isinstance(expr, cst.FormattedString):
        pieces = [p.value if isinstance(p, cst.FormattedStringText) else "\0" for p in expr.parts]
        text = "".join(pieces)
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        text = _PLACEHOLDER.sub("\0", string_value(expr.left) or "\0")
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        left = string_value(expr.left)
        text = left + "\0" if left is not None and string_value(expr.right) is None else "\0"
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        text = _PLACEHOLDER.sub("\0", string_value(expr.func.value) or "\0")
    else:
        return None
    head, _, _ = text.partition("\0")
    return text.replace("\0", "0") if ":" in head else None


def known_device(
    ctx: "Context", expr: cst.BaseExpression, _depth: int = 0
) -> Optional[tuple[Device, Callable[[], bool]]]:
    """`expr` is certainly a `torch.device` object: `torch.device(...)`, a known
    tensor's `.device`, a parameter annotated `torch.device`, the `.device` of a
    Hugging Face model or pipeline or an `accelerate.Accelerator`, a name bound
    to one. Returns what is known of the device, and a condition to re-check
    once the whole file is walked (a class' attributes may still change)."""
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
        source = certain_source(ctx, expr) if _depth < 3 else None
        if isinstance(source, cst.Attribute) and source.attr.value == "device":
            return known_device(ctx, source, _depth + 1)
        return None
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "device" and not _is_self(expr.value):
            receiver, later = _certain(ctx, expr.value)
            if receiver.is_tensor:
                return Device(of_tensor=True), lambda: later().is_tensor
            owner = _device_owner(ctx, expr.value)
            if owner is not None:
                return Device(of_tensor=owner), always
            return None
        value, later = _certain(ctx, expr)
        if value.kind is Kind.DEVICE and _is_self(expr.value):
            return value.device or Device(), lambda: later().kind is Kind.DEVICE
        if expr.attr.value == "device" and value.kind is Kind.UNKNOWN and _is_self(expr.value):
            cls = ctx.current_class()
            owner = _inherited_device(ctx, cls) if cls is not None else None
            if owner is not None and not _dynamic(cls) and "device" not in cls.members:
                return Device(of_tensor=owner), lambda: "device" not in cls.attrs
    return None


# -- libraries whose objects have a `torch.device` at `.device` ----------------
# `.device` of these is the device of the first parameter: a GPU one carries its index.
_PARAMETER_DEVICE_LIBRARIES = ("transformers.", "diffusers.")
_PRETRAINED = re.compile(r"(Model|Pipeline|For[A-Z]\w*)$")
# Objects whose `.device` is a torch.device that may have no index (`mps`).
_DEVICE_OBJECTS = frozenset(
    {"accelerate.Accelerator", "accelerate.accelerator.Accelerator", "accelerate.PartialState",
     "accelerate.state.PartialState"}
)
# Base classes that give `self.device`: True where it is a parameter's device.
_DEVICE_BASES = {
    "transformers.PreTrainedModel": True, "transformers.modeling_utils.PreTrainedModel": True,
    "diffusers.ModelMixin": True, "diffusers.models.modeling_utils.ModelMixin": True,
    "diffusers.DiffusionPipeline": True, "diffusers.pipelines.pipeline_utils.DiffusionPipeline": True,
    "lightning.LightningModule": False, "lightning.pytorch.LightningModule": False,
    "pytorch_lightning.LightningModule": False, "lightning.pytorch.core.module.LightningModule": False,
    "pytorch_lightning.core.module.LightningModule": False,
}
# Calls on such an object that return it (`model.to(device).eval()`).
_RETURNS_SELF = frozenset(torchapi.MODULE_RETURNING_METHODS)


def pretrained_class(qual: Optional[str]) -> bool:
    """`transformers.AutoModelForCausalLM`, `diffusers.UNet2DConditionModel`,
    `diffusers.StableDiffusionPipeline`: a model (or pipeline) class, not a
    tokenizer, config or processor; TensorFlow and Flax classes excluded."""
    if qual is None or not qual.startswith(_PARAMETER_DEVICE_LIBRARIES):
        return False
    last = qual.rsplit(".", 1)[-1]
    return bool(_PRETRAINED.search(last)) and not last.startswith(("TF", "Flax"))


def _device_owner(ctx: "Context", expr: cst.BaseExpression, depth: int = 0) -> Optional[bool]:
    """Is `expr` an object whose `.device` is a torch.device? True when it is a
    parameter's device (indexed on a GPU), False when it may lack the index,
    None when not known to be such an object."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _RETURNS_SELF:
        expr = expr.func.value
    if isinstance(expr, cst.Call):
        qual = ctx.qualify(expr.func)
        if qual is None:
            return None
        if qual.endswith(".from_pretrained") and pretrained_class(qual[: -len(".from_pretrained")]):
            return True
        if qual in _DEVICE_OBJECTS:
            return False
        return None
    if isinstance(expr, cst.Name) and depth < 3:
        source = certain_source(ctx, expr)
        return _device_owner(ctx, source, depth + 1) if source is not None else None
    return None


def _inherited_device(ctx: "Context", cls: "ClassInfo") -> Optional[bool]:
    """Does `cls` inherit `.device` from one of the libraries above? Bases are
    searched in order, as attribute lookup does; an unknown base met first may
    define its own `device`, and then nothing is known."""
    found = _search_device(ctx, cls, set())
    return found if isinstance(found, bool) else None


_NOT_FOUND, _MAYBE_ELSEWHERE = "not found", "maybe elsewhere"


def _search_device(ctx: "Context", cls: "ClassInfo", seen: set[str]):
    if cls.name in seen:
        return _MAYBE_ELSEWHERE
    seen.add(cls.name)
    for base in cls.bases:
        if base in _DEVICE_BASES:
            return _DEVICE_BASES[base]
        local = ctx.classes.get(base)
        if local is not None:
            if "device" in local.members or "device" in local.attrs or _dynamic(local):
                return _MAYBE_ELSEWHERE
            found = _search_device(ctx, local, seen)
            if found is not _NOT_FOUND:
                return found
        elif not plain_torch_module(base) and base not in ("object", "abc.ABC"):
            return _MAYBE_ELSEWHERE
    return _NOT_FOUND


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
