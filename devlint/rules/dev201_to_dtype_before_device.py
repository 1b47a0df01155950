from __future__ import annotations

import re

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule

_DEVICE_NAME = re.compile(r"(^|_)(device|dev)s?$", re.I)


class ToDtypeBeforeDevice(Rule):
    """
    ## What it does
    Flags `x.to(dtype, device)`: a call to `.to` whose first argument is a torch
    dtype and whose second is a device.

    ## Why is this bad?
    `Tensor.to` and `nn.Module.to` have a dtype-first overload,
    `to(dtype, non_blocking=False, copy=False)`. A device in second place does
    not match any overload and the call raises
    `TypeError: to() received an invalid combination of arguments - got (torch.dtype, str)`.

    ## Example
    ```python
    x = x.to(torch.float16, "cuda")
    ```

    ## Use instead
    ```python
    x = x.to("cuda", torch.float16)
    ```

    ## Fix safety
    Safe: swapping the two arguments selects the `to(device, dtype)` overload,
    which is what the code meant. Only flagged when the first argument is a
    torch dtype and the receiver's class does not define its own `to`.
    """

    code = "DEV201"
    name = "to-dtype-before-device"
    message = "`.to(dtype, device)`: the dtype-first overload takes no device; pass the device first"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="TypeError: to() received an invalid combination of arguments",
        raises="TypeError",
        match=r"to\(\) received an invalid combination of arguments",
    )
    triggers = (".to(",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "to":
            return
        if len(node.args) < 2 or any(a.keyword is not None or a.star for a in node.args[:2]):
            return
        first, second = node.args[0], node.args[1]
        if not self.ctx.is_dtype(first.value) or not self._is_device(second.value):
            return
        if self.ctx.defines_own(func.value, "to"):
            return
        swapped = [first.with_changes(value=second.value), second.with_changes(value=first.value)]
        new_args = [*swapped, *node.args[2:]]
        self.report(node, fix=self.fix("Pass the device first", [(node, node.with_changes(args=new_args))]))

    def _is_device(self, expr: cst.BaseExpression) -> bool:
        if self.ctx.device_of(expr) is not None:
            return True
        # `x.to(torch.half, device)` / `self.device` / `args.device`: named as a device.
        leaf = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
        return bool(_DEVICE_NAME.search(leaf))
