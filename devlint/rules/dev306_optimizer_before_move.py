from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import events, optimizers
from ..semantics.names import dotted
from ..semantics.tree import exclusive_branches

# torch.optim classes that create their state at the first `step()`.
_LAZY_STATE = frozenset(
    "SGD Adam AdamW RMSprop Adadelta Adamax NAdam RAdam ASGD Rprop LBFGS SparseAdam".split()
)


class OptimizerBeforeMove(Rule):
    """
    ## What it does
    Flags an optimizer built from `model.parameters()` before `model.to(device)`
    / `model.cuda()` moves that model, in the same function (or module body).

    ## Why is this bad?
    `model.to()` moves the parameters in place, so SGD and Adam, which create
    their state lazily at the first `step()`, happen to work. Optimizers with
    eager state (`Adagrad`, many custom ones) and any optimizer whose state was
    loaded from a checkpoint keep that state on the CPU while the parameters
    and gradients move to the GPU, and `step()` fails with
    `RuntimeError: Expected all tensors to be on the same device` (or, with
    the foreach implementation, `Tensors of the same index must be on the same device`).
    PyTorch's documentation asks to move the model before building its
    optimizer.

    Only flagged when the optimizer holds state the move leaves behind —
    eager state (`Adagrad`, or an optimizer torch does not ship, whose state
    devlint cannot see), or state loaded with `optimizer.load_state_dict(...)`
    before the move and not moved by hand (a loop over `optimizer.state`) —
    when the model was not already on a device when the
    optimizer was built, and when the move may target an accelerator
    (`model.cpu()`, `model.to(torch.float16)` stay silent). torch's lazy
    optimizers (SGD, Adam, AdamW, ...) with nothing loaded are not flagged:
    their state is made at the first `step()`, on the moved parameters.

    ## Example
    ```python
    model = Net()
    optimizer = torch.optim.Adagrad(model.parameters())
    model.to(device)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    optimizer = torch.optim.Adagrad(model.parameters())
    ```

    ## Fix safety
    No fix: reordering statements may change what runs in between.
    """

    code = "DEV306"
    name = "optimizer-before-move"
    message = "Optimizer built before its model is moved to the device: eager or loaded optimizer state stays on the CPU; move the model first"
    claim = Claim(
        backends=("cuda",),
        summary="the optimizer state stays on the CPU while the parameters move "
        "(with Adagrad, step() then raises `Expected all tensors to be on the same device`)",
        postcondition=True,
    )
    triggers = ("parameters(",)

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        # optimizer call -> the name it is stored in, and the statement's ancestors
        self._bound: dict[int, tuple[str, tuple[cst.CSTNode, ...]]] = {}
        # names whose `load_state_dict` ran so far -> the ancestors of each load
        self._loaded: dict[str, list[tuple[cst.CSTNode, ...]]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and len(node.targets) == 1:
            name = dotted(node.targets[0].target)
            if name is not None:
                self._bound[id(node.value)] = (name, tuple(self.ctx.stack))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `for state in optimizer.state.values(): ... v.cuda()`: the author
        # moves the loaded state by hand.
        if node.attr.value == "state" and self._loaded:
            self._loaded.pop(dotted(node.value) or "", None)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict":
            receiver = dotted(func.value)
            if receiver is not None:
                self._loaded.setdefault(receiver, []).append(tuple(self.ctx.stack))
        scope = events.scope_node(self.ctx)
        moves = self.ctx.events.moves(scope)
        if not moves or moves[-1].call is not node or not moves[-1].may_accelerate:
            return
        move = moves[-1]
        for built in self.ctx.events.optimizers(scope):
            if built.seq > move.seq or not self._state_stays(built.call):
                continue
            if any(
                optimizers.same_module_tree(owner, move.owner) and owner not in built.placed for owner in built.owners
            ):
                self.report(built.call)

    def _state_stays(self, call: cst.Call) -> bool:
        """Does this optimizer hold state the move leaves behind: eager state
        (Adagrad, an optimizer torch does not ship), or state loaded into it
        before the move, on a path that built it? torch's lazy optimizers (SGD, Adam, ...) with nothing
        loaded create their state at the first `step()`, on the moved parameters."""
        qual = self.ctx.qualify(call.func)
        if qual is None or not qual.startswith("torch.optim.") or qual.rsplit(".", 1)[-1] not in _LAZY_STATE:
            return True
        bound = self._bound.get(id(call))
        if bound is None:
            return False
        name, built_in = bound
        # A load in the other branch of an `if` never follows this build.
        return any(not exclusive_branches(built_in, loaded_in) for loaded_in in self._loaded.get(name, ()))
