"""Where a value's data lives: on the host by default, on an accelerator, or
somewhere we cannot tell.

The answers build on `Value.device` (context.py): a factory called without
`device=` leaves its tensor on the host by default (`HOST_DEFAULT`), `.cuda()`
and `.to(<device>)` move it, and what a module returns lives where the module
was moved. On top of that, this module answers the questions placement rules
ask:

- `may_be_accelerator(device)`: can this device be an accelerator at run time
  (a literal `'cuda'`, an availability-guarded choice, a device variable)?
- `target_may_be_accelerator(ctx, expr)`: the same for the expression a
  `.to(...)` / `device=` receives.
- `data_device(ctx, expr)`: where the data an expression evaluates to lives,
  also through the attributes and items of a module's output.
- `host_factory(ctx, call)`: a torch factory that makes a tensor of one
  dimension or more on the default device.
- `default_device_overridden(ctx)`: the file changes the default device
  (`torch.set_default_device`, `with torch.device(...)`), so a factory
  without `device=` is not known to make a host tensor.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, AbstractSet, Iterator, Optional

import libcst as cst

from . import bindings, torchapi
from .tree import children
from .values import Device, Kind, Value

if TYPE_CHECKING:
    from .context import Context

# The device a factory without `device=` uses: the host, unless the default
# device was changed. Not `literal`: nothing in the source names the CPU.
HOST_DEFAULT = Device("cpu")

# Names that, as the argument of `.to(...)` / `device=`, name a device (and so
# may name an accelerator): `device`, `self.device`, `args.device`,
# `torch_device`, `local_rank`, `gpu_id`. Not dtypes, not tensors.
_DEVICE_WORD = re.compile(
    r"(^|_)(device|dev|devices|device_id|device_ids|rank|local_rank|gpu|gpu_id|gpu_ids|gpus|cuda|cuda_id)$", re.I
)

# Factories whose first positional arguments are a shape (or sizes).
SHAPE_FACTORIES = frozenset(
    f"torch.{n}" for n in "zeros ones empty full rand randn randint eye empty_strided".split()
)
# Factories whose result has one dimension or more whatever the arguments.
RANGE_FACTORIES = frozenset(f"torch.{n}" for n in "arange range linspace logspace randperm".split())
# Factories that copy `data`: host tensors only when `data` is Python data.
DATA_FACTORIES = frozenset(f"torch.{n}" for n in "tensor as_tensor asarray".split())

# Attributes of a module's output that are not its data.
_NOT_DATA_ATTRS = frozenset("shape dtype device ndim is_cuda requires_grad names layout".split())
NOT_DATA_ATTRS = _NOT_DATA_ATTRS  # attributes of a tensor (or output) that are metadata, not data


def data_chain(
    ctx: "Context", expr: cst.BaseExpression, stop: AbstractSet[str] = frozenset()
) -> Iterator[cst.BaseExpression]:
    """`expr`, then what it is the same data of, down to where that ends:
    `out.logits[0].detach()` -> itself, `out.logits[0]`, `out.logits`, `out`.
    Through tensor methods (not those in `stop`), items and data attributes;
    a method that returns something else, metadata (`x.shape`), or a torch
    function (`torch.max(out, 1)` is no method of `torch`) ends it."""
    while True:
        yield expr
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method in stop or method not in torchapi.TENSOR_RETURNING_METHODS or ctx.qualify(expr.func):
                return
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value not in _NOT_DATA_ATTRS:
            expr = expr.value
        else:
            return

def numpy_value(ctx: "Context", expr: cst.BaseExpression, _depth: int = 0) -> bool:
    """A NumPy array or scalar, which lives on the host: what a NumPy function
    returns (`np.mean(np.abs(diff))`), `.numpy()` of a tensor, and the items,
    methods and arithmetic of those (`arr.mean()`, `arr[0]`, `a - b`), also
    through a name (`diff = pred.cpu().numpy() - y.cpu().numpy()`)."""
    kind = type(expr)
    if kind is cst.Call:
        func = expr.func  # type: ignore[attr-defined]
        qual = ctx.qualify(func) or ""
        if qual.startswith("numpy."):
            return True
        if type(func) is cst.Attribute and not qual:
            return func.attr.value == "numpy" or numpy_value(ctx, func.value, _depth)  # type: ignore[attr-defined]
        return False
    if kind is cst.Subscript:
        return numpy_value(ctx, expr.value, _depth)  # type: ignore[attr-defined]
    if kind is cst.BinaryOperation:
        sides = (expr.left, expr.right)  # type: ignore[attr-defined]
        return any(numpy_value(ctx, e, _depth) for e in sides) and all(
            numpy_value(ctx, e, _depth) or type(e) in (cst.Integer, cst.Float) for e in sides
        )
    if kind is cst.Name and _depth < 3:
        source = bindings.certain_source(ctx, expr)  # type: ignore[arg-type]
        return source is not None and numpy_value(ctx, source, _depth + 1)
    return False


# Tensor methods whose result is no tensor (metadata, Python values).
NON_TENSOR_METHODS = frozenset(
    "size dim numel item tolist ndimension nelement element_size stride storage_offset "
    "is_contiguous data_ptr get_device is_floating_point is_complex numpy __len__ keys items values".split()
)


def may_be_accelerator(device: Optional[Device]) -> bool:
    """Can data placed on `device` be on an accelerator at run time?

    A literal accelerator, an availability-guarded choice, or a device we
    cannot name (a variable) may be; the host and "nothing known" (None) are
    not."""
    if device is None:
        return False
    if device.type is None:
        # `x.device` of a tensor whose place we do not know: unknown, not "maybe".
        return not getattr(device, "of_tensor", False)
    return device.type in torchapi.ACCELERATOR_TYPES


def is_host_default(device: Optional[Device]) -> bool:
    """Placed on the host only because no device was given."""
    return device is not None and device.type == "cpu" and not device.literal and not device.guarded


def looks_like_device(expr: cst.BaseExpression) -> bool:
    """`device`, `self.device`, `args.local_rank`, `f"cuda:{rank}"`, `x.device`: an
    expression that, by its shape or name, names a device rather than a dtype."""
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        return isinstance(head, cst.FormattedStringText) and head.value.split(":", 1)[0] in torchapi.DEVICE_TYPES
    leaf = None
    if isinstance(expr, cst.Attribute):
        leaf = expr.attr.value
    elif isinstance(expr, cst.Name):
        leaf = expr.value
    elif isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        key = expr.slice[0].slice
        if isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString):
            text = key.value.evaluated_value  # `cfg["device"]`, `Ps["device"]`
            leaf = text if isinstance(text, str) else None
    return leaf is not None and bool(_DEVICE_WORD.search(leaf))


def target_may_be_accelerator(ctx: "Context", expr: Optional[cst.BaseExpression]) -> bool:
    """May the device argument `expr` of a `.to(...)` / `device=` be an accelerator?"""
    if expr is None:
        return False
    if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
        return _device_attribute_may_be_accelerator(ctx, expr.value)
    device = ctx.device_of(expr)
    if device is not None:
        return may_be_accelerator(device)
    if ctx.is_dtype(expr):
        return False
    value = ctx.value_of(expr)
    if value.is_tensor:  # `.to(other)`: where the other tensor is
        return may_be_accelerator(value.device)
    return looks_like_device(expr)


# Objects whose `.device` is the run's chosen device (not some tensor's).
_DEVICE_HOLDERS = frozenset(
    "self args arg opt opts cfg cfgs config configs conf hparams hparam hp hps hyperparams hyper_params "
    "params settings options flags FLAGS accelerator trainer training_args state fabric "
    "strategy model pipe pipeline engine runner".split()
)


def _device_attribute_may_be_accelerator(ctx: "Context", base: cst.BaseExpression) -> bool:
    """`<base>.device`: where `base` lives if it is data we can place; the run's
    device for a model or a settings object (`args.device`, `self.device`)."""
    value = ctx.value_of(base)
    if value.kind in (Kind.TENSOR, Kind.MODULE_OUTPUT):
        return may_be_accelerator(value.device)
    if value.is_module:
        return True
    leaf = base.attr.value if isinstance(base, cst.Attribute) else base.value if isinstance(base, cst.Name) else ""
    return leaf in _DEVICE_HOLDERS or leaf.endswith(("model", "args", "config"))


def data_device(ctx: "Context", expr: cst.BaseExpression, _depth: int = 0) -> Optional[Device]:
    """Where the data `expr` evaluates to lives, when known.

    Follows `Value.device` for tensors and module outputs, and — since what a
    module returns is often a tuple or a `ModelOutput` — also the items and
    data attributes of a module's output (`out[0]`, `out.logits`) and tensor
    methods called on them (`out.logits.argmax(-1)`)."""
    value = ctx.value_of(expr)
    if value.kind in (Kind.TENSOR, Kind.MODULE_OUTPUT):
        if value.device is not None:
            return value.device
    if isinstance(expr, cst.Name) and value.kind in _FOLLOWED and _depth < 3:
        # `target = target.cuda()` of something unknown, `label = label.to(device).long()`:
        # where the one assignment in effect put it.
        source = bindings.certain_source(ctx, expr)
        return data_device(ctx, source, _depth + 1) if source is not None else None
    if isinstance(expr, cst.Subscript):
        return _output_part(ctx, expr.value, _depth)
    if isinstance(expr, cst.Attribute) and expr.attr.value not in _NOT_DATA_ATTRS:
        return _output_part(ctx, expr.value, _depth)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not ctx.qualify(expr.func):
        method = expr.func.attr.value  # a method, not a torch function (`torch.max(out, 1)`)
        if method in _ACCELERATOR_METHODS:  # `batch.cuda()`, whatever `batch` was
            return Device(method)
        if method == "type":
            cast = legacy_type_device(ctx, expr)
            if cast is not None:  # `x.type(torch.FloatTensor)`: a copy on the host
                return cast
        if method == "to" and not value.is_tensor:
            target = to_target(expr)
            if target is not None and target_may_be_accelerator(ctx, target):
                return Device()
        if method in _DTYPE_CASTS and not expr.args:  # `label.to(device).long()`: same place
            return data_device(ctx, expr.func.value, _depth)
        if method in torchapi.TENSOR_RETURNING_METHODS and method not in torchapi.MOVE_METHODS:
            device = data_device(ctx, expr.func.value, _depth)
            if device is None and method in _BINARY_METHODS and expr.args and expr.args[0].keyword is None:
                # `pred.eq(target)`: both sides live on one device (or it raises).
                return data_device(ctx, expr.args[0].value, _depth)
            return device
    if isinstance(expr, cst.Call):
        places = (data_device(ctx, e, _depth) for e in kept_inputs(ctx, expr))
        return next((p for p in places if p is not None), None)
    return None


def kept_inputs(ctx: "Context", call: cst.Call) -> list[cst.BaseExpression]:
    """The inputs a torch function computes where they live: `x` of
    `torch.mean(x)` / `F.softmax(x, -1)`, `xs` and `xt` of `torch.cat((xs, xt))`
    (they share one device, or it raises), `x` of `Variable(x)`. Empty for
    anything else."""
    first = call.args[0] if call.args else None
    if first is None or first.keyword is not None or first.star:
        return []
    qual = ctx.qualify(call.func)
    if qual in torchapi.WRAPPING_CONSTRUCTORS:
        return [first.value]  # `Variable(x)`, `nn.Parameter(t)`: the same data, where it was
    if qual not in torchapi.TENSOR_FUNCTIONS or qual in torchapi.FACTORIES or _keyword(call, "device") is not None:
        return []
    if isinstance(first.value, (cst.List, cst.Tuple)):
        return [e.value for e in first.value.elements if isinstance(e, cst.Element)]
    return [first.value]


def legacy_type_device(ctx: "Context", call: cst.Call) -> Optional[Device]:
    """Where `x.type(torch.FloatTensor)` / `x.type('torch.cuda.FloatTensor')` puts
    x's data: the legacy type names the device. None for a dtype or anything else."""
    arg = call.args[0].value if call.args and call.args[0].keyword is None else _keyword(call, "dtype")
    if arg is None:
        return None
    if isinstance(arg, cst.SimpleString):
        name: Optional[str] = arg.evaluated_value if isinstance(arg.evaluated_value, str) else None
    else:
        name = ctx.qualify(arg)
    if name is None or name == "torch.Tensor":
        return None
    if name in torchapi.LEGACY_CPU_CONSTRUCTORS:
        return Device("cpu", literal=True)
    if name in torchapi.LEGACY_CUDA_TENSOR_TYPES:
        return Device("cuda", literal=True)
    return None


_ACCELERATOR_METHODS = frozenset({"cuda", "mps", "xpu"})
# Casts that keep the data where it is.
_DTYPE_CASTS = frozenset("half float double bfloat16 int long bool byte char short".split())
# Names whose place is followed to their assignment: unknown, or data whose place was lost.
_FOLLOWED = frozenset({Kind.UNKNOWN, Kind.TENSOR, Kind.MODULE_OUTPUT})
# Tensor methods of two tensors, which must share a device.
_BINARY_METHODS = frozenset(
    "eq ne gt lt ge le add sub mul div matmul mm bmm logical_and logical_or logical_xor".split()
)


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def to_target(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The device of `x.to(device)`, `x.to(device=...)` (or a dtype: the caller tells)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _output_part(ctx: "Context", base: cst.BaseExpression, _depth: int = 0) -> Optional[Device]:
    value = ctx.value_of(base)
    if value.kind is Kind.MODULE_OUTPUT:
        return value.device
    if isinstance(base, (cst.Subscript, cst.Attribute)) or (isinstance(base, cst.Name) and value.kind is Kind.UNKNOWN):
        return data_device(ctx, base, _depth)
    return None


def host_factory(ctx: "Context", call: cst.Call) -> bool:
    """Does `call` make a tensor of one dimension or more on the default device?

    `torch.zeros(3, 4)`, `torch.arange(n)`, `torch.tensor([1, 2])` — not
    `torch.tensor(0.5)` (a 0-dim CPU tensor mixes with CUDA tensors), not
    `torch.zeros(())`, not `torch.tensor(t)` of a tensor (it keeps t's device),
    not with `device=`."""
    qual = ctx.qualify(call.func)
    if qual in torchapi.LEGACY_CPU_CONSTRUCTORS:
        return _legacy_host_tensor(ctx, call)
    if qual is None or qual not in torchapi.FACTORIES:
        return False
    if any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        return False
    if any(a.star == "**" for a in call.args):
        return False
    positional = [a for a in call.args if a.keyword is None]
    if qual in RANGE_FACTORIES or qual == "torch.from_numpy":
        return True
    if qual in SHAPE_FACTORIES:
        if not positional:
            size = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "size"), None)
            return size is not None and not _empty_shape(size)
        first = positional[0]
        if first.star:
            return False
        return not _empty_shape(first.value)
    if qual in DATA_FACTORIES:
        data = positional[0].value if positional and not positional[0].star else None
        return data is not None and _python_sequence(data)
    return False


def _legacy_host_tensor(ctx: "Context", call: cst.Call) -> bool:
    """`torch.FloatTensor(x.shape)`, `torch.LongTensor(3, 4)`, `torch.Tensor([[1, 2]])`:
    a legacy constructor given sizes or data makes a CPU tensor of one
    dimension or more, always (from a CUDA tensor it raises)."""
    return bool(call.args) and not any(a.keyword is not None or a.star for a in call.args)


def _empty_shape(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Tuple, cst.List)) and not expr.elements


def _python_sequence(expr: cst.BaseExpression) -> bool:
    """A list/tuple display or comprehension: data with one dimension or more."""
    return isinstance(expr, (cst.List, cst.Tuple, cst.ListComp)) and (
        isinstance(expr, cst.ListComp) or bool(expr.elements)
    )


_DEFAULT_DEVICE_TEXT = re.compile(r"set_default_device|set_default_tensor_type|with\s+[\w.]*device\(")


def default_device_overridden(ctx: "Context") -> bool:
    """The file may change the default device (`torch.set_default_device`,
    `with torch.device('cuda'):`), so factories without `device=` may not
    make host tensors. A textual check: when in doubt, overridden."""
    found = ctx.memo.get("default_device_overridden")
    if found is None:  # asked for every factory call: search the text once
        found = ctx.memo["default_device_overridden"] = bool(_DEFAULT_DEVICE_TEXT.search(ctx.source))
    return found  # type: ignore[return-value]


def makes_on_default_device(call: cst.Call, qual: str) -> bool:
    """A factory (`qual` in torchapi.FACTORIES) without `device=` that puts its
    tensor on the default device: every factory except `torch.tensor(t)` /
    `as_tensor(t)` / `asarray(t)` of a value that may itself be a tensor (they
    keep its device)."""
    if qual not in DATA_FACTORIES:
        return True
    data = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    if data is None:
        return False
    if isinstance(data, cst.UnaryOperation):
        data = data.expression
    return isinstance(data, (cst.Integer, cst.Float, cst.List, cst.Tuple, cst.ListComp))


def combined_device(left: Value, right: Value) -> Optional[Device]:
    """Where `left <op> right` lives, for a binary operation with a tensor operand:
    with an accelerator operand, there; with an unknown one, unknown."""
    if left.is_tensor and right.is_tensor:
        if left.device is None or right.device is None:
            return None
        for device in (left.device, right.device):
            if device.type != "cpu":
                return device
        return left.device
    return left.device if left.is_tensor else right.device


# torch functions whose tensor arguments must all be on one device.
SAME_DEVICE_FUNCTIONS = frozenset(
    f"torch.{n}"
    for n in (
        "cat concat concatenate stack hstack vstack dstack column_stack where matmul mm bmm einsum "
        "add sub subtract mul multiply div divide true_divide maximum minimum fmax fmin gather "
        "index_select masked_fill masked_select cdist dot outer addmm addbmm baddbmm lerp eq ne lt le "
        "gt ge logical_and logical_or logical_xor bitwise_and bitwise_or bucketize searchsorted "
        "cartesian_prod block_diag atan2 remainder fmod pow"
    ).split()
) | frozenset(
    f"torch.nn.functional.{n}"
    for n in (
        "embedding linear bilinear conv1d conv2d conv3d conv_transpose1d conv_transpose2d "
        "cross_entropy nll_loss mse_loss l1_loss smooth_l1_loss binary_cross_entropy "
        "binary_cross_entropy_with_logits kl_div cosine_similarity scaled_dot_product_attention "
        "layer_norm group_norm batch_norm"
    ).split()
)
# Tensor methods whose tensor arguments must be on the receiver's device.
SAME_DEVICE_METHODS = frozenset(
    "masked_fill masked_fill_ add add_ sub sub_ mul mul_ div div_ matmul mm bmm where gather "
    "index_select scatter scatter_ scatter_add scatter_add_ masked_scatter masked_scatter_ "
    "masked_select eq ne lt le gt ge maximum minimum lerp lerp_ addcmul addcmul_ addcdiv addcdiv_ "
    "copysign dot outer pow logical_and logical_or index_add index_add_ index_copy index_copy_ "
    "scatter_reduce scatter_reduce_".split()
)

# Uses of a name that show it holds a tensor (`x.shape`, `x.view(...)`).
_TENSOR_USES = frozenset(
    "shape size device dim ndim view reshape transpose permute unsqueeze squeeze contiguous "
    "new_zeros new_ones new_full new_empty new_tensor masked_fill type_as numel flatten expand "
    "expand_as repeat softmax matmul clone detach float half bfloat16 is_cuda".split()
)


def tensor_params(ctx: "Context", function: cst.FunctionDef) -> list[str]:
    """The parameters of `function` that hold tensors, in order: annotated
    `Tensor` (also `Optional[Tensor]`, `Tensor | None`), or used as one in the
    body (`x.shape`, `x.view(...)`, `x.device`)."""
    params = function.params
    names = [p for p in (*params.posonly_params, *params.params, *params.kwonly_params) if p.name.value != "self"]
    used: set[str] = set()
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if type(node) is cst.Attribute and type(node.value) is cst.Name and node.attr.value in _TENSOR_USES:  # type: ignore[attr-defined]
            used.add(node.value.value)  # type: ignore[attr-defined]
        stack.extend(children(node))
    out = []
    for p in names:
        annotated = p.annotation is not None and _mentions_tensor(p.annotation.annotation)
        if annotated or p.name.value in used:
            out.append(p.name.value)
    return out


def _mentions_tensor(annotation: cst.CSTNode) -> bool:
    stack: list[cst.CSTNode] = [annotation]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and node.value in ("Tensor", "FloatTensor", "LongTensor", "BoolTensor"):
            return True
        if isinstance(node, cst.SimpleString) and "Tensor" in node.value:
            return True
        stack.extend(children(node))
    return False
