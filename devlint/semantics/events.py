"""What happened, in statement order, in each scope (a function body or the
module): values moved with `.to(...)` / `.cuda()`, optimizers built from a
module's parameters, and the file's default device being changed.

Order rules ask here: "was this optimizer built before its model was
moved?", "is the DataParallel wrapper moved after wrapping?". The context
records every call as the walk enters it (`EventLog.record_call`); a rule's
`visit_Call` for the same node sees the event already recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import bindings, optimizers, residence, torchapi
from .names import dotted
from .tree import children

if TYPE_CHECKING:
    from .context import Context


@dataclass(frozen=True)
class Move:
    """`owner.to(device)` / `owner.cuda()`: the value named `owner` is placed."""

    owner: str  # dotted receiver: "model", "self.encoder"
    call: cst.Call
    seq: int
    may_accelerate: bool  # the target may be an accelerator


@dataclass(frozen=True)
class OptimizerBuilt:
    call: cst.Call
    seq: int
    owners: tuple[str, ...]  # modules whose parameters it holds
    placed: frozenset[str]  # those of them already placed on a device when it was built


@dataclass
class _ScopeEvents:
    moves: list[Move] = field(default_factory=list)
    optimizers: list[OptimizerBuilt] = field(default_factory=list)
    # `params = model.parameters()`: names holding some module's parameters.
    parameter_names: dict[str, tuple[str, ...]] = field(default_factory=dict)


class EventLog:
    def __init__(self) -> None:
        self._scopes: dict[int, _ScopeEvents] = {}
        self._seq = 0
        # `torch.set_default_device(<accelerator>)` seen so far in the file.
        self.default_device_call: Optional[cst.Call] = None

    # -- recording (called by the context) ---------------------------------
    def record_call(self, ctx: "Context", call: cst.Call) -> None:
        from .placements import placement  # placements imports context

        self._seq += 1
        func = call.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("to", "cuda", "xpu", "mps"):
                found = placement(ctx, call)
                owner = dotted(_unwrapped(ctx, func.value))
                if found is not None and found.how == "method" and owner is not None:
                    accel = (
                        residence.may_be_accelerator(found.device)
                        if found.device is not None
                        else residence.target_may_be_accelerator(ctx, found.target)
                    )
                    self._here(ctx).moves.append(Move(owner, call, self._seq, accel))
                return
            if method in ("parameters", "named_parameters"):
                self._remember_parameter_name(ctx, call)
                return
        if optimizers.builds_optimizer(ctx, call):
            self._record_optimizer(ctx, call)
            return
        qual = ctx.qualify(func)
        if qual == "torch.set_default_device":
            arg = call.args[0].value if call.args else None
            if residence.target_may_be_accelerator(ctx, arg):
                self.default_device_call = call
        elif qual == "torch.set_default_tensor_type" and call.args:
            # The legacy spelling: `set_default_tensor_type(torch.cuda.FloatTensor)`
            # (or its name as a string) makes factories build CUDA tensors too.
            arg = call.args[0].value
            name = arg.evaluated_value if isinstance(arg, cst.SimpleString) else ctx.qualify(arg)
            if isinstance(name, str) and name.startswith("torch.cuda."):
                self.default_device_call = call

    def _record_optimizer(self, ctx: "Context", call: cst.Call) -> None:
        arg = optimizers.params_argument(call)
        if arg is None:
            return
        events = self._here(ctx)
        owners: dict[str, Optional[cst.BaseExpression]] = {
            name: node for name, node in optimizers.parameter_owners(arg)
        }
        for node in _names_in(arg):
            for owner in events.parameter_names.get(node, ()):
                owners.setdefault(owner, None)
        if not owners:
            return
        placed = set()
        for owner, node in owners.items():
            if any(optimizers.same_module_tree(m.owner, owner) for m in events.moves):
                placed.add(owner)
            elif node is not None and ctx.value_of(node).device is not None:
                placed.add(owner)
            elif isinstance(node, cst.Name) and _placed_when_bound(ctx, node):
                placed.add(owner)
        events.optimizers.append(OptimizerBuilt(call, self._seq, tuple(owners), frozenset(placed)))

    def _remember_parameter_name(self, ctx: "Context", call: cst.Call) -> None:
        owner = dotted(call.func.value)  # type: ignore[union-attr]
        if owner is None:
            return
        target = _collecting_name(ctx)
        if target is not None:
            events = self._here(ctx)
            events.parameter_names[target] = (*events.parameter_names.get(target, ()), owner)

    def _here(self, ctx: "Context") -> _ScopeEvents:
        return self._scopes.setdefault(id(scope_node(ctx)), _ScopeEvents())

    # -- questions ----------------------------------------------------------
    def moves(self, scope: cst.CSTNode) -> list[Move]:
        found = self._scopes.get(id(scope))
        return found.moves if found else []

    def optimizers(self, scope: cst.CSTNode) -> list[OptimizerBuilt]:
        found = self._scopes.get(id(scope))
        return found.optimizers if found else []

    def moved_after(self, scope: cst.CSTNode, owner: str, after: cst.Call) -> bool:
        """Is `owner` (or a part/parent of it) placed in `scope` after the call `after`?"""
        seq = next((e.seq for e in self._all(scope) if e.call is after), None)
        return any(
            optimizers.same_module_tree(m.owner, owner) and (seq is None or m.seq > seq) for m in self.moves(scope)
        )

    def _all(self, scope: cst.CSTNode) -> list:
        found = self._scopes.get(id(scope))
        return [*found.moves, *found.optimizers] if found else []


def _unwrapped(ctx: "Context", receiver: cst.BaseExpression) -> cst.BaseExpression:
    """`nn.DataParallel(model).cuda()` moves `model`: the wrapper holds it."""
    if (
        isinstance(receiver, cst.Call)
        and receiver.args
        and receiver.args[0].keyword is None
        and ctx.qualify(receiver.func) in torchapi.DATA_PARALLEL
    ):
        return receiver.args[0].value
    return receiver


def _placed_when_bound(ctx: "Context", name: cst.Name) -> bool:
    """`model = Net().to(device)` / `.cuda()`: placed by the assignment that is
    certain to be in effect, even when `Net` is a class from another file."""
    source = bindings.certain_source(ctx, name)
    return (
        isinstance(source, cst.Call)
        and isinstance(source.func, cst.Attribute)
        and source.func.attr.value in ("to", "cuda", "xpu", "mps")
        and bool(source.args or source.func.attr.value != "to")
    )


def scope_node(ctx: "Context") -> cst.CSTNode:
    """The function body (or module) whose statements run in order with the current node."""
    for scope in reversed(ctx.scopes):
        if scope.kind in ("function", "module"):
            return scope.node
    return ctx.scopes[0].node


def _names_in(expr: cst.CSTNode) -> list[str]:
    out: list[str] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.append(node.value)
        elif not isinstance(node, (cst.Attribute, cst.Lambda)):
            stack.extend(children(node))
    return out


def _collecting_name(ctx: "Context") -> Optional[str]:
    """The name the current statement stores into: `params = ...`, `params += ...`,
    `params.extend(...)` / `params.append(...)`."""
    for node in reversed(ctx.stack[:-1]):
        if isinstance(node, cst.Assign):
            if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
                return node.targets[0].target.value
            return None
        if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            return node.target.value if isinstance(node.target, cst.Name) else None
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("extend", "append")
            and isinstance(node.func.value, cst.Name)
        ):
            return node.func.value.value
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement, cst.Lambda)):
            return None
    return None
