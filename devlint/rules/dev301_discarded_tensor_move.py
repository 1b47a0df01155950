from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics import torchapi


class DiscardedTensorMove(Rule):
    """
    ## What it does
    Flags `t.to(...)`, `t.cuda()`, `t.cpu()`, `t.half()` and the other
    moving/converting methods used as a statement when `t` is a tensor: made
    by a torch function, annotated `torch.Tensor`, a buffer or parameter the
    module registered (`self.register_buffer("pe", pe)`, then
    `self.pe.to(x.device)`), or a part of a batch
    unpacked from a `DataLoader` built in the file (`for x, y in loader:`,
    `for i, (x, y) in enumerate(loader):`). A whole batch (`for batch in
    loader:`) may be a dict-like encoding whose `.to()` works in place, and is
    not flagged.

    ## Why is this bad?
    Unlike `nn.Module.to`, which moves the module in place, `Tensor.to` returns
    a new tensor and leaves `t` where it was. As a statement, the call does
    nothing: `t` is still on the CPU afterwards, and the next operation that
    meets a CUDA tensor fails with "Expected all tensors to be on the same
    device".

    Only flagged when the receiver is known to be a tensor (a factory result,
    a `torch.Tensor` annotation, ...): `model.to(device)` and other libraries'
    in-place `.to` stay silent.

    ## Example
    ```python
    x = torch.randn(8, 3)
    x.to(device)
    ```

    ## Use instead
    ```python
    x = torch.randn(8, 3)
    x = x.to(device)
    ```

    ## Fix safety
    Safe for a plain name: rebinding it to the moved tensor is what the
    statement meant. Not offered for attributes or subscripts.
    """

    code = "DEV301"
    name = "discarded-tensor-move"
    message = "`Tensor.{method}()` is not in-place: the result is discarded and the tensor stays where it was"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cuda",),
        summary="the tensor is still on the CPU afterwards",
        postcondition=True,
    )
    triggers = tuple(f".{m}(" for m in torchapi.MOVE_METHODS)

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return
        method = call.func.attr.value
        if method not in torchapi.MOVE_METHODS or (method == "type" and not call.args):
            return
        receiver = call.func.value
        if not self.ctx.is_tensor(receiver):
            return
        fix = None
        if isinstance(receiver, cst.Name):
            assign = cst.Assign(targets=[cst.AssignTarget(target=cst.Name(receiver.value))], value=call)
            fix = self.fix(f"Assign the result back to `{receiver.value}`", [(node, assign)])
        self.report(call, self.message.format(method=method), fix=fix)
