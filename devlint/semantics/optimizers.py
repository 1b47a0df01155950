"""Optimizers: which calls build one, and from which module's parameters.

`torch.optim.Adam(model.parameters())`, `AdamW([{"params": model.encoder.parameters()}, ...])`,
`SGD(filter(lambda p: p.requires_grad, model.parameters()))`, third-party
optimizers under an `optim`/`optimizers` package (timm, bitsandbytes, apex),
and local subclasses of `torch.optim.Optimizer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from .names import dotted
from .tree import children

if TYPE_CHECKING:
    from .context import Context

# Callables under torch.optim that are no optimizer.
_NOT_OPTIMIZERS = ("lr_scheduler", "swa_utils", "Optimizer")
_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Packages (one dotted component) whose capitalised callables are optimizers.
_OPTIMIZER_PACKAGES = frozenset({"optim", "optimizers", "optimizer", "optimization", "torch_optimizer"})


def is_optimizer_class(qual: str) -> bool:
    """`torch.optim.AdamW`, `timm.optim.Lamb`, `bitsandbytes.optim.Adam8bit`, `apex.optimizers.FusedAdam`."""
    parts = qual.split(".")
    last = parts[-1]
    if not last[:1].isupper() or any(p in _NOT_OPTIMIZERS for p in parts):
        return False
    if "Scheduler" in last or last.endswith("LR"):
        return False
    return any(p in _OPTIMIZER_PACKAGES for p in parts[:-1])


def builds_optimizer(ctx: "Context", call: cst.Call) -> bool:
    qual = ctx.qualify(call.func)
    if qual is not None:
        return is_optimizer_class(qual)
    if isinstance(call.func, cst.Name):
        info = ctx.classes.get(call.func.value)
        if info is not None and ctx.lookup(call.func.value) is None:
            return any(is_optimizer_class(b) or b.endswith("torch.optim.Optimizer") for b in info.bases)
    return False


def params_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "params":
            return arg.value
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def parameter_owners(expr: cst.CSTNode) -> list[tuple[str, cst.BaseExpression]]:
    """The modules whose `.parameters()` / `.named_parameters()` an expression
    reads, as (dotted name, receiver node): `model.parameters()` -> `model`,
    `[{"params": self.head.parameters()}]` -> `self.head`."""
    found: list[tuple[str, cst.BaseExpression]] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _PARAMETER_METHODS
        ):
            name = dotted(node.func.value)
            if name is not None:
                found.append((name, node.func.value))
                continue
        stack.extend(children(node))
    return found


def same_module_tree(a: str, b: str) -> bool:
    """Moving `model` moves `model.encoder` and the reverse overlaps too."""
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")
