from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import events, optimizers


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

    Only flagged when the model was not already on a device when the
    optimizer was built, and the move may target an accelerator
    (`model.cpu()`, `model.to(torch.float16)` stay silent).

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

    def visit_Call(self, node: cst.Call) -> None:
        scope = events.scope_node(self.ctx)
        moves = self.ctx.events.moves(scope)
        if not moves or moves[-1].call is not node or not moves[-1].may_accelerate:
            return
        move = moves[-1]
        for built in self.ctx.events.optimizers(scope):
            if built.seq > move.seq:
                continue
            if any(
                optimizers.same_module_tree(owner, move.owner) and owner not in built.placed for owner in built.owners
            ):
                self.report(built.call)
