"""Class and method context: is this class an `nn.Module`, which method is the
walk in (`__init__`, `forward`, a helper `forward` calls), and what does the
class do with each `self.<attr>` (assign, read, move, register, wrap)?

`ClassInfo.is_module` (context.py) already follows torch aliases and local
base classes; `is_module_base` adds the well-known third-party bases
(`PreTrainedModel`, `ModelMixin`, `LightningModule`). The facts about a
class' attributes are computed once per class, on first question, from the
class' complete syntax tree (the walk has it as soon as it enters the class).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Optional

import libcst as cst

from . import bindings, torchapi
from .names import dotted
from .scopes import ClassInfo
from .tree import children

if TYPE_CHECKING:
    from .context import Context

# Bases from outside torch that are nn.Modules (matched on the last dotted
# component, since projects import them through relative imports too).
_THIRD_PARTY_MODULE_BASES = frozenset(
    {"PreTrainedModel", "ModelMixin", "LightningModule", "TorchModelMixin"}
)

# Methods that make `self.x` a registered tensor or submodule under a name.
REGISTERING_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "register_module"})
# Calls that turn a tensor argument into a registered one.
_REGISTERING_CONSTRUCTORS = ("Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer")
# Methods that, overridden, change how `model.to(...)` moves the class' state.
_CUSTOM_MOVE_METHODS = frozenset({"_apply", "to", "cuda", "cpu", "to_empty"})
# Reads of an attribute that only look at its metadata or copy it to Python.
_METADATA_ATTRS = frozenset(
    "shape dtype ndim device size numel dim tolist item cpu numpy is_cuda requires_grad __len__ clone".split()
)
_MOVING_ATTRS = frozenset({"to", "cuda", "type_as", "xpu", "mps"})


def is_module_base(qual_or_name: str) -> bool:
    """A base class from outside torch known to be an nn.Module."""
    return qual_or_name.rsplit(".", 1)[-1] in _THIRD_PARTY_MODULE_BASES


# -- which method the walk is in ----------------------------------------------


def enclosing_method(ctx: "Context") -> Optional[tuple[ClassInfo, cst.FunctionDef]]:
    """The method (a function defined directly in a class) around the current
    node, through nested functions and lambdas, with its class."""
    for scope in reversed(ctx.scopes):
        if scope.kind == "function" and scope.cls is not None:
            return scope.cls, scope.node  # type: ignore[return-value]
        if scope.kind == "class":
            return None
    return None


def in_module_method(ctx: "Context", *names: str) -> Optional[ClassInfo]:
    """The nn.Module class when the walk is directly in one of its methods named `names`."""
    scope = ctx.scopes[-1] if ctx.scopes else None
    if scope is None or scope.kind != "function" or scope.cls is None or not scope.cls.is_module:
        return None
    node = scope.node
    if isinstance(node, cst.FunctionDef) and node.name.value in names:
        return scope.cls
    return None


def in_init(ctx: "Context") -> Optional[ClassInfo]:
    """The nn.Module class whose `__init__` the walk is directly in."""
    return in_module_method(ctx, "__init__")


def in_forward(ctx: "Context") -> Optional[tuple[ClassInfo, cst.FunctionDef]]:
    """(class, method) when the walk is in an nn.Module's `forward` or a helper
    that `forward` calls (`self.helper(...)`, transitively)."""
    found = enclosing_method(ctx)
    if found is None or not found[0].is_module:
        return None
    info, method = found
    return (info, method) if method.name.value in forward_methods(info) else None


def methods(info: ClassInfo) -> dict[str, cst.FunctionDef]:
    cached = info.facts.get("methods")
    if cached is None:
        cached = {
            stmt.name.value: stmt for stmt in info.node.body.body if isinstance(stmt, cst.FunctionDef)
        }
        info.facts["methods"] = cached
    return cached  # type: ignore[return-value]


def forward_methods(info: ClassInfo) -> frozenset[str]:
    """`forward` and the methods it reaches through `self.<method>(...)` calls."""
    cached = info.facts.get("forward_methods")
    if cached is None:
        table = methods(info)
        reached: set[str] = set()
        todo = ["forward"] if "forward" in table else []
        while todo:
            name = todo.pop()
            if name in reached:
                continue
            reached.add(name)
            for node in _walk(table[name]):
                if (
                    isinstance(node, cst.Call)
                    and isinstance(node.func, cst.Attribute)
                    and _is_self(node.func.value)
                    and node.func.attr.value in table
                ):
                    todo.append(node.func.attr.value)
        cached = frozenset(reached)
        info.facts["forward_methods"] = cached
    return cached  # type: ignore[return-value]


# -- what the class does with its attributes -------------------------------------


@dataclass
class AttributeFacts:
    """Everything a class' methods do with one `self.<attr>`."""

    assigned_in: list[tuple[str, cst.BaseExpression]] = field(default_factory=list)  # (method, value)
    read_in: set[str] = field(default_factory=set)  # methods that read it, beyond metadata
    moved: bool = False  # `self.x.to(...)`, `.cuda()`, `.type_as(...)`
    # Given as an argument to a call (`nn.ModuleList(self.x)`, `f(*self.x)`): (callee, method).
    passed_to: list[tuple[cst.BaseExpression, str]] = field(default_factory=list)
    registered: bool = False  # named in register_buffer / add_module / setattr, or made a Parameter
    tensor: bool = False  # registered as a buffer or parameter with a value (not `None`)

    @property
    def passed(self) -> bool:
        return bool(self.passed_to)


@dataclass
class ClassAttributes:
    attrs: dict[str, AttributeFacts]
    custom_move: bool  # overrides `_apply` / `to` / `cuda`
    dynamic_registration: bool  # registers under computed names (`setattr(self, name, m)`)

    def get(self, attr: str) -> AttributeFacts:
        return self.attrs.get(attr) or AttributeFacts()


def attributes(info: ClassInfo) -> ClassAttributes:
    cached = info.facts.get("attributes")
    if cached is None:
        cached = _scan_attributes(info)
        info.facts["attributes"] = cached
    return cached  # type: ignore[return-value]


def true_by_default(ctx: "Context", info: ClassInfo, attr: str) -> bool:
    """Is `self.<attr>` a flag that is on unless the caller says otherwise?
    Every assignment gives it `True`, or a parameter of the method, never
    rebound there, whose default is `True` (`def __init__(self, cuda=True):
    self.cuda = cuda`)."""
    assigned = attributes(info).get(attr).assigned_in
    if not assigned:
        return False
    table = methods(info)
    for method_name, value in assigned:
        if isinstance(value, cst.Name) and value.value == "True":
            continue
        method = table.get(method_name)
        if not isinstance(value, cst.Name) or method is None:
            return False
        sites = bindings.scan(ctx, method).sites.get(value.value, [])
        default = sites[0].value if len(sites) == 1 and sites[0].kind == "param" else None
        if not (isinstance(default, cst.Name) and default.value == "True"):
            return False
    return True


def _scan_attributes(info: ClassInfo) -> ClassAttributes:
    attrs: dict[str, AttributeFacts] = {}
    dynamic = False

    def facts(name: str) -> AttributeFacts:
        return attrs.setdefault(name, AttributeFacts())

    table = methods(info)
    for method_name, method in table.items():
        # One walk per method, dispatching on the exact node type (libcst's
        # classes are ABCs: a failing isinstance is a slow call). Statements
        # come before the expressions inside them, so a store is known before
        # its target is met as an attribute.
        stores: set[int] = set()
        for node, parent in _walk_with_parent(method):
            kind = type(node)
            if kind is cst.Attribute:
                if (
                    type(node.value) is cst.Name and node.value.value == "self"  # type: ignore[attr-defined]
                    and id(node) not in stores
                ):
                    if type(parent) is cst.Attribute and parent.value is node and parent.attr.value in _METADATA_ATTRS:  # type: ignore[union-attr]
                        continue
                    if type(parent) is cst.Arg:
                        continue  # counted as `passed`
                    facts(node.attr.value).read_in.add(method_name)  # type: ignore[attr-defined]
            elif kind is cst.Call:
                name = _called_name(node)  # type: ignore[arg-type]
                args = node.args  # type: ignore[attr-defined]
                if name in REGISTERING_METHODS or name == "setattr":
                    key = args[1 if name == "setattr" else 0].value if len(args) > (name == "setattr") else None
                    text = _string(key) if key is not None else None
                    if text is not None:
                        facts(text).registered = True
                        if name in ("register_buffer", "register_parameter") and len(args) > 1:
                            value = args[1].value
                            facts(text).tensor |= not (type(value) is cst.Name and value.value == "None")  # type: ignore[attr-defined]
                    else:
                        dynamic = True
                if name is not None and name.rsplit(".", 1)[-1] in _REGISTERING_CONSTRUCTORS:
                    for arg in args:
                        for attr_node in _self_attributes_in(arg.value):
                            facts(attr_node.attr.value).registered = True
                for arg in args:
                    if _is_self_attribute(arg.value):
                        facts(arg.value.attr.value).passed_to.append((node.func, method_name))  # type: ignore[union-attr,attr-defined]
                func = node.func  # type: ignore[attr-defined]
                if type(func) is cst.Attribute and func.attr.value in _MOVING_ATTRS:
                    root = _chain_root(func.value)  # `self.x[:n].unsqueeze(0).to(device)`
                    if root is not None:
                        facts(root).moved = True
            elif kind is cst.Assign or kind is cst.AnnAssign or kind is cst.AugAssign:
                targets = [t.target for t in node.targets] if kind is cst.Assign else [node.target]  # type: ignore[attr-defined]
                for target in targets:
                    for attr_node in _self_attribute_targets(target):
                        stores.add(id(attr_node))
                        value = node.value if kind is not cst.AugAssign else None  # type: ignore[attr-defined]
                        if kind is not cst.AugAssign and type(target) is cst.Attribute:
                            facts(attr_node.attr.value).assigned_in.append((method_name, value))
                        else:  # unpacking or augmented: some value we do not follow
                            facts(attr_node.attr.value).assigned_in.append((method_name, None))
    custom = bool(_CUSTOM_MOVE_METHODS & set(table))
    return ClassAttributes(attrs, custom, dynamic)


# -- classes that hold no tensors -----------------------------------------------------

_PLAIN_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "Tensor", "torch.Tensor"})


def holds_no_state(ctx: "Context", info: ClassInfo) -> bool:
    """A module class of this file with no parameters or buffers: a direct
    `nn.Module` subclass (or of such a class) whose methods store on `self`
    only numbers, strings, plain tensors (`self.lowers = torch.linspace(0, 1,
    16)[:-1]`, `self.target = target.detach()`) and submodules that hold none
    (`self.log_softmax = nn.LogSoftmax(dim=1)`), and register nothing.
    `.cuda()` and `.to(device)` of it move nothing."""
    cached = info.facts.get("holds-no-state")
    if cached is None:
        info.facts["holds-no-state"] = False  # while it is asked: a class among its own bases holds state
        cached = info.facts["holds-no-state"] = _holds_no_state(ctx, info)
    return bool(cached)


def _holds_no_state(ctx: "Context", info: ClassInfo) -> bool:
    if not info.is_module or not info.bases:
        return False
    for base in info.bases:
        local = ctx.classes.get(base)
        if base != "torch.nn.Module" and not (local is not None and holds_no_state(ctx, local)):
            return False
    for stmt in info.node.body.body:  # class-level state: `weight = nn.Parameter(...)`
        if type(stmt) is cst.SimpleStatementLine and any(type(s) in (cst.Assign, cst.AnnAssign) for s in stmt.body):
            return False
    found = attributes(info)
    if found.custom_move or found.dynamic_registration:
        return False
    table = methods(info)
    for facts in found.attrs.values():
        if facts.registered:
            return False
        for method_name, value in facts.assigned_in:
            method = table.get(method_name)
            if value is None or method is None:
                return False
            if not (_plain_value(ctx, value, method, 0) or _stateless_submodule(ctx, value)):
                return False
    return True


def _stateless_submodule(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """`nn.LogSoftmax(dim=1)`, `nn.MSELoss()`, `Sub()` of a local class that
    holds no state: a submodule with nothing to move. Not a loss given a
    weight, which its first positional argument may be (`nn.NLLLoss(w)`)."""
    if type(expr) is not cst.Call:
        return False
    func = expr.func  # type: ignore[attr-defined]
    local = ctx.classes.get(func.value) if type(func) is cst.Name else None
    if local is not None:
        return local.is_module and holds_no_state(ctx, local)
    qual = ctx.qualify(func)
    last = qual.rsplit(".", 1)[-1] if qual is not None and qual.startswith("torch.nn.") else ""
    return last in STATELESS_NN_MODULES and not _given_state(expr)  # type: ignore[arg-type]


def _given_state(call: cst.Call) -> bool:
    """A stateless torch module given a buffer: `CrossEntropyLoss(weight=w)`, or
    a loss's first positional argument, which may be its weight (`NLLLoss(w)`)."""
    name = (dotted(call.func) or "").rsplit(".", 1)[-1]
    return any(
        (a.keyword is None and name.endswith("Loss")) or (a.keyword is not None and a.keyword.value in _STATE_KEYWORDS)
        for a in call.args
    )


def _plain_value(ctx: "Context", expr: cst.BaseExpression, method: cst.FunctionDef, depth: int) -> bool:
    """A number, a string or a plain tensor, as the method computes it."""
    kind = type(expr)
    if kind in (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString):
        return True
    if depth > 4:
        return False
    if kind is cst.Name:
        if expr.value in ("True", "False", "None"):  # type: ignore[attr-defined]
            return True
        sites = bindings.scan(ctx, method).sites.get(expr.value, [])  # type: ignore[attr-defined]
        if not sites:
            return False
        for site in sites:
            if site.kind == "param":  # a number or a tensor by its annotation or default
                annotation = dotted(site.annotation.annotation) if site.annotation is not None else None
                default = site.value
                if annotation not in _PLAIN_ANNOTATIONS and not (
                    default is not None and type(default) in (cst.Integer, cst.Float, cst.SimpleString)
                ):
                    return False
            elif site.kind not in ("assign", "annassign") or site.value is None:
                return False  # unpacked, a loop's, a `with`'s: not followed
            elif not _plain_value(ctx, site.value, method, depth + 1):
                return False
        return True
    if kind in (cst.Tuple, cst.List):
        return all(
            type(e) is cst.Element and _plain_value(ctx, e.value, method, depth + 1) for e in expr.elements  # type: ignore[attr-defined]
        )
    if kind is cst.Subscript:
        return _plain_value(ctx, expr.value, method, depth + 1)  # type: ignore[attr-defined]
    if kind is cst.BinaryOperation:
        return _plain_value(ctx, expr.left, method, depth + 1) and _plain_value(ctx, expr.right, method, depth + 1)  # type: ignore[attr-defined]
    if kind is cst.UnaryOperation:
        return _plain_value(ctx, expr.expression, method, depth + 1)  # type: ignore[attr-defined]
    if kind is cst.Call:
        func = expr.func  # type: ignore[attr-defined]
        qual = ctx.qualify(func)
        if qual is not None:
            # `torch.linspace(...)`, `torch.tensor(...)`, `F.normalize(...)`; not `nn.Linear(...)`.
            return qual.startswith("torch.") and (
                not qual.startswith("torch.nn.") or qual.startswith("torch.nn.functional.")
            ) and qual not in ("torch.Generator",)
        return type(func) is cst.Attribute and func.attr.value in torchapi.TENSOR_ONLY_RESULTS
    return False


# -- small syntax helpers ------------------------------------------------------------


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def _walk_with_parent(node: cst.CSTNode) -> Iterator[tuple[cst.CSTNode, Optional[cst.CSTNode]]]:
    stack: list[tuple[cst.CSTNode, Optional[cst.CSTNode]]] = [(node, None)]
    while stack:
        n, parent = stack.pop()
        yield n, parent
        stack.extend((c, n) for c in reversed(children(n)))


def _chain_root(expr: cst.BaseExpression) -> Optional[str]:
    """`x` for `self.x`, `self.x[:n]`, `self.x.unsqueeze(0).expand(b, -1)`."""
    while True:
        if _is_self_attribute(expr):
            return expr.attr.value  # type: ignore[union-attr]
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "data"):
            expr = expr.value
        else:
            return None


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _is_self_attribute(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and _is_self(expr.value)


def _self_attribute_targets(target: cst.BaseExpression) -> Iterator[cst.Attribute]:
    if _is_self_attribute(target):
        yield target  # type: ignore[misc]
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _self_attribute_targets(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _self_attribute_targets(target.value)


def _self_attributes_in(expr: cst.CSTNode) -> Iterator[cst.Attribute]:
    for node in _walk(expr):
        if _is_self_attribute(node):  # type: ignore[arg-type]
            yield node  # type: ignore[misc]


def _called_name(call: cst.Call) -> Optional[str]:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value if _is_self(func.value) else dotted(func)
    if isinstance(func, cst.Name):
        return func.value
    return None


def _string(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


# -- does a module hold state (parameters or buffers)? ---------------------------

# torch.nn modules without parameters or buffers of their own: leaving one
# unregistered loses nothing (activations, dropout, pooling, shape helpers, losses).
STATELESS_NN_MODULES = frozenset(
    (
        "ReLU ReLU6 LeakyReLU ELU SELU CELU GELU SiLU Mish Sigmoid Tanh Softmax Softmax2d LogSoftmax "
        "Softplus Softsign Softmin Hardtanh Hardswish Hardsigmoid Hardshrink Softshrink Tanhshrink Threshold "
        "LogSigmoid GLU Identity Flatten Unflatten Dropout Dropout1d Dropout2d Dropout3d AlphaDropout "
        "FeatureAlphaDropout MaxPool1d MaxPool2d MaxPool3d AvgPool1d AvgPool2d AvgPool3d AdaptiveAvgPool1d "
        "AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d AdaptiveMaxPool3d LPPool1d "
        "LPPool2d Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle ChannelShuffle "
        "ZeroPad1d ZeroPad2d ZeroPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d "
        "ReplicationPad1d ReplicationPad2d CosineSimilarity PairwiseDistance Fold Unfold "
        "MSELoss L1Loss SmoothL1Loss HuberLoss KLDivLoss CosineEmbeddingLoss MarginRankingLoss "
        "HingeEmbeddingLoss TripletMarginLoss CTCLoss PoissonNLLLoss GaussianNLLLoss SoftMarginLoss "
        "MultiLabelSoftMarginLoss CrossEntropyLoss NLLLoss BCELoss BCEWithLogitsLoss MultiMarginLoss"
    ).split()
)
# Keyword arguments that give an otherwise stateless module a buffer (`CrossEntropyLoss(weight=w)`).
_STATE_KEYWORDS = frozenset({"weight", "pos_weight"})
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict"})


def constructs_stateful_module(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """Does `expr` build an nn.Module that holds parameters or buffers?
    `nn.Linear(4, 4)`, `Block(dim)` of a local Module class with state,
    `nn.Sequential(nn.Conv2d(...), nn.ReLU())` — not `nn.ReLU()`, not `nn.MSELoss()`."""
    if not isinstance(expr, cst.Call):
        return False
    value = ctx.value_of(expr)
    if not value.is_module:
        return False
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "cpu", "half", "float", "double", "train", "eval"):
        return constructs_stateful_module(ctx, func.value)
    qual = ctx.qualify(func)
    if qual is not None:
        last = qual.rsplit(".", 1)[-1]
        if last in _CONTAINERS:
            args = [a for a in expr.args if a.keyword is None]
            return any(a.star or not isinstance(a.value, cst.Call) or constructs_stateful_module(ctx, a.value) for a in args)
        if last in STATELESS_NN_MODULES:
            return _given_state(expr)
        return True
    if isinstance(func, cst.Name):
        info = ctx.classes.get(func.value)
        return info is not None and class_has_state(ctx, info)
    return False


def class_has_state(ctx: "Context", info: ClassInfo, _seen: Optional[set[str]] = None) -> bool:
    """Does a local nn.Module class hold parameters or buffers: it creates
    `nn.Parameter`/`nn.Buffer`, registers some, builds stateful submodules, or
    derives from a base other than `nn.Module` that may hold state?"""
    cached = info.facts.get("has_state")
    if isinstance(cached, bool):
        return cached
    seen = _seen if _seen is not None else set()
    seen.add(info.name)
    result = False
    for base in info.bases:
        local = ctx.classes.get(base)
        if local is not None:
            if local.name not in seen and class_has_state(ctx, local, seen):
                result = True
        elif base.rsplit(".", 1)[-1] not in ("Module", "object", "ABC", "Generic", "Protocol") and base:
            result = True  # e.g. nn.Linear, PreTrainedModel: may hold state
    if not result:
        for node in _walk(info.node):
            if not isinstance(node, cst.Call):
                continue
            name = _called_name(node) or ""
            last = name.rsplit(".", 1)[-1]
            if last in _REGISTERING_CONSTRUCTORS or last in ("register_buffer", "register_parameter"):
                result = True
                break
            qual = ctx.qualify(node.func)
            if qual is not None and qual.startswith("torch.nn.") and last[:1].isupper():
                if last not in STATELESS_NN_MODULES and last not in _CONTAINERS:
                    result = True
                    break
            local = ctx.classes.get(name)
            if local is not None and local.name not in seen and local.is_module and class_has_state(ctx, local, seen):
                result = True
                break
    info.facts["has_state"] = result
    return result
