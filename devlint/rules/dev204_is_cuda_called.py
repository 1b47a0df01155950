from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics import torchapi
from ..semantics.bindings import certain_value


class IsCudaCalled(Rule):
    """
    ## What it does
    Flags `t.is_cuda()` — and the other device-type properties of a tensor
    (`is_cpu`, `is_mps`, `is_xpu`, `is_meta`, ...) — called like a method on a
    value known to be a tensor.

    ## Why is this bad?
    `Tensor.is_cuda` is a property: it already is a `bool`, and calling it
    raises `TypeError: 'bool' object is not callable` on every machine.

    Only values known to be tensors are flagged: other classes may define an
    `is_cuda()` method of their own.

    ## Example
    ```python
    if x.is_cuda():
        x = x.cpu()
    ```

    ## Use instead
    ```python
    if x.is_cuda:
        x = x.cpu()
    ```

    ## Fix safety
    Safe: dropping the `()` reads the property the call meant to ask.
    """

    code = "DEV204"
    name = "is-cuda-called"
    message = "`Tensor.{prop}` is a property, not a method: calling it raises TypeError"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="TypeError: 'bool' object is not callable",
        raises="TypeError",
        match=r"'bool' object is not callable",
    )
    triggers = tuple(sorted(torchapi.TENSOR_DEVICE_PROPERTIES))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in torchapi.TENSOR_DEVICE_PROPERTIES:
            return
        if node.args or not certain_value(self.ctx, func.value).is_tensor:
            return
        if self.ctx.defines_own(func.value, func.attr.value):
            return
        fix = self.fix("Read the property: drop the `()`", [(node, func.with_changes(lpar=node.lpar, rpar=node.rpar))])
        self.report(node, self.message.format(prop=func.attr.value), fix=fix)
