from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import Kind, classes, residence, torchapi


class TensorAttributeNotBuffer(Rule):
    """
    ## What it does
    Flags `self.x = torch.<factory>(...)` in the `__init__` of an `nn.Module`
    subclass — a plain tensor attribute, neither an `nn.Parameter`, an
    `nn.Buffer`, nor registered with `register_buffer` — that another method
    of the class reads.

    ## Why is this bad?
    `model.to(device)`, `model.cuda()` and `model.half()` move and convert the
    module's parameters and buffers only. A plain tensor attribute stays on
    the CPU, and the first `forward` on a GPU fails with
    `RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!`.
    It is also missing from `state_dict()`.

    Not flagged: 0-dim tensors (`torch.tensor(0.5)` mixes with CUDA tensors),
    attributes the class moves itself (`self.x.to(x.device)`), registers
    later or wraps in `nn.Parameter`, classes that override `_apply`/`to`, and
    classes that are no `nn.Module`.

    ## Example
    ```python
    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.mean = torch.tensor([0.485, 0.456, 0.406])

        def forward(self, x):
            return x - self.mean
    ```

    ## Use instead
    ```python
    class Normalize(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]), persistent=False)

        def forward(self, x):
            return x - self.mean
    ```

    ## Fix safety
    Unsafe: the fix registers a non-persistent buffer, so `state_dict()` is
    unchanged, but the tensor now follows `model.half()` / `.double()` too,
    and `register_buffer` fails if it runs before `super().__init__()`.
    """

    code = "DEV302"
    name = "tensor-attribute-not-buffer"
    message = "Tensor stored as a plain attribute of an `nn.Module`: `model.to(device)` leaves it behind; register it as a buffer"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("cpu", "cuda"),
        summary="the tensor is no buffer of the module, so `model.to(device)` leaves it on the CPU "
        "(on CUDA, forward then raises `Expected all tensors to be on the same device`)",
        postcondition=True,
    )
    # A factory call is in the text: in the assignment, or in a local name's.
    triggers = torchapi.HOST_FACTORY_TRIGGERS

    def __init__(self, *args) -> None:
        super().__init__(*args)
        # Local names of the current `__init__` bound to a fresh host tensor.
        self._fresh_names: dict[int, set[str]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        if isinstance(target, cst.Name):
            if classes.in_init(self.ctx) is not None:
                names = self._fresh_names.setdefault(id(self.ctx.current_function()), set())
                if self._fresh_host_tensor(node.value):
                    names.add(target.value)
                else:
                    names.discard(target.value)
            return
        self._check(node, target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node, node.target, node.value)

    def _check(self, statement: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"):
            return
        info = classes.in_init(self.ctx)
        if info is None or residence.default_device_overridden(self.ctx):
            return
        if not self._fresh_host_tensor(value):
            return
        facts = classes.attributes(info)
        attr = target.attr.value
        seen = facts.get(attr)
        if facts.custom_move or seen.registered or seen.moved:
            return
        # Given to a torch op (`F.embedding(idx, self.pe)`, `torch.matmul(x, self.w)`)
        # it is read there; given to anything else, it may be registered or moved.
        read_by_ops = set()
        for callee, method in seen.passed_to:
            if not _is_torch_op(self.ctx.qualify(callee)):
                return
            read_by_ops.add(method)
        others = [v for _, v in seen.assigned_in if v is not value and not _reshaped_self(v, attr)]
        if any(v is None or not self._fresh_host_tensor(v) for v in others):
            return  # also assigned something else (a Parameter, a moved tensor) somewhere
        if not ((seen.read_in | read_by_ops) - {"__init__"}):
            return  # never used after construction
        self.report(value, fix=self._fix(statement, attr, value))

    def _fresh_host_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor of one dimension or more made on the default device here:
        a host factory, maybe through dtype/shape methods and arithmetic."""
        if isinstance(expr, cst.Name):
            return expr.value in self._fresh_names.get(id(self.ctx.current_function()), ())
        if isinstance(expr, cst.Call):
            if residence.host_factory(self.ctx, expr):
                return True
            qual = self.ctx.qualify(expr.func)
            if qual in torchapi.PLAIN_TENSOR_WRAPPERS:
                # `Variable(torch.FloatTensor(mean))`: a no-op since torch 0.4, a plain tensor.
                args = [a for a in expr.args if not a.star]
                return len(args) == 1 and args[0].keyword is None and self._fresh_host_tensor(args[0].value)
            if qual in torchapi.LEGACY_CPU_CONSTRUCTORS:
                return bool(expr.args)  # `torch.FloatTensor([0.5, 0.5])`: always on the CPU
            if qual in residence.DATA_FACTORIES and _list_like_name(expr) and not any(
                a.keyword is not None and a.keyword.value == "device" for a in expr.args
            ):
                return self.ctx.value_of(expr.args[0].value).kind is Kind.UNKNOWN  # `torch.tensor(anchors)`
            if qual in torchapi.TENSOR_FUNCTIONS and qual not in torchapi.FACTORIES and qual not in torchapi.LIKE_FACTORIES:
                # `torch.exp(torch.arange(n) * c)`: computed from fresh host tensors only.
                args = [a.value for a in expr.args if a.keyword is None]
                return bool(args) and self._fresh_host_tensor(args[0]) and all(
                    self._scalar(a) or self._fresh_host_tensor(a) for a in args[1:]
                )
            func = expr.func
            if isinstance(func, cst.Attribute):
                method = func.attr.value
                if method in torchapi.MOVE_METHODS and method not in _DTYPE_METHODS:
                    return False
                if method in _KEEPS_DEVICE:
                    return self._fresh_host_tensor(func.value)
            return False
        if isinstance(expr, cst.BinaryOperation):
            sides = [expr.left, expr.right]
            fresh = [s for s in sides if self._fresh_host_tensor(s)]
            others = [s for s in sides if s not in fresh]
            return bool(fresh) and all(self._scalar(s) or self._fresh_host_tensor(s) for s in others)
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            other = expr.comparisons[0].comparator
            return (self._fresh_host_tensor(expr.left) and self._scalar(other)) or (
                self._fresh_host_tensor(other) and self._scalar(expr.left)
            )
        if isinstance(expr, cst.UnaryOperation):
            return self._fresh_host_tensor(expr.expression)
        return False

    def _scalar(self, expr: cst.BaseExpression) -> bool:
        """A Python number as far as we can tell: literals, `dim`, `math.log(x) / dim`."""
        if _plain_number(expr):
            return True
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return self.ctx.value_of(expr).kind is Kind.UNKNOWN and not self._fresh_host_tensor(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self._scalar(expr.left) and self._scalar(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self._scalar(expr.expression)
        if isinstance(expr, cst.Call):
            qual = self.ctx.qualify(expr.func)
            if qual is None:
                return isinstance(expr.func, cst.Name) and expr.func.value in _SCALAR_BUILTINS
            return qual.startswith("math.")
        return False

    def _fix(self, statement: cst.CSTNode, attr: str, value: cst.BaseExpression) -> Optional[NodeFix]:
        if not isinstance(self.ctx.parent(), cst.SimpleStatementLine):
            return None
        call = cst.parse_expression(f'self.register_buffer("{attr}", VALUE, persistent=False)')
        assert isinstance(call, cst.Call)
        args = list(call.args)
        args[1] = args[1].with_changes(value=value.with_changes(lpar=[], rpar=[]) if _redundant_parens(value) else value)
        return self.fix("Register it as a non-persistent buffer", [(statement, cst.Expr(call.with_changes(args=args)))])


def _reshaped_self(expr: Optional[cst.BaseExpression], attr: str) -> bool:
    """`self.pe.unsqueeze(0)`, `self.pe[:, :n].transpose(0, 1)`: the attribute
    itself, reshaped where it lives (`self.pe = self.pe.unsqueeze(0)`)."""
    while expr is not None:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _KEEPS_DEVICE:
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            break
    return (
        isinstance(expr, cst.Attribute) and expr.attr.value == attr
        and isinstance(expr.value, cst.Name) and expr.value.value == "self"
    )


# Methods that keep a tensor where it is (dtype, shape, arithmetic).
_DTYPE_METHODS = frozenset("half float double bfloat16 int long bool byte char short".split())
_KEEPS_DEVICE = _DTYPE_METHODS | frozenset(
    "view reshape unsqueeze squeeze transpose permute t expand repeat flatten contiguous clone detach "
    "float_power pow exp log sqrt abs neg cumsum cumprod triu tril flip roll tile repeat_interleave "
    "outer matmul mul add sub div softmax log_softmax sigmoid tanh".split()
)


def _list_like_name(call: cst.Call) -> bool:
    """`torch.tensor(anchors)`, `torch.tensor(cfg.means)`: data named in the plural, a list."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return False
    data = call.args[0].value
    leaf = data.value if isinstance(data, cst.Name) else data.attr.value if isinstance(data, cst.Attribute) else ""
    return len(leaf) > 2 and leaf.endswith("s") and not leaf.endswith(("ss", "us", "is"))


_SCALAR_BUILTINS = frozenset({"float", "int", "len", "max", "min", "round", "abs", "pow"})


def _plain_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _redundant_parens(expr: cst.BaseExpression) -> bool:
    return bool(expr.lpar) and isinstance(expr, (cst.Call, cst.Name, cst.Attribute, cst.Subscript))


def _is_torch_op(qual: Optional[str]) -> bool:
    """`torch.matmul`, `torch.nn.functional.embedding`: a function that reads
    tensors; not a class (`torch.nn.Parameter`, `torch.nn.ModuleList`)."""
    if qual is None or not qual.startswith("torch."):
        return False
    leaf = qual.rsplit(".", 1)[1]
    return leaf[:1].islower()
