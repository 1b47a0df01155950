from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics.bindings import certain_value
from ..semantics.values import Kind


class CudaWithNonCudaDevice(Rule):
    """
    ## What it does
    Flags `.cuda(device)` where `device` is not a CUDA device: a CPU (or MPS,
    meta, ...) device literal, or a device chosen by an availability check
    that falls back to the CPU.

    ## Why is this bad?
    `Tensor.cuda` and `nn.Module.cuda` only move to a CUDA device; any other
    device is rejected with `RuntimeError: Invalid device, must be cuda device`.
    With `device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`
    the call works on a GPU machine and crashes on every other one — exactly
    where the fallback was meant to help.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.cuda(device)
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    ```

    ## Fix safety
    Safe: `.to(device)` moves to any device, and to the same CUDA device
    `.cuda(device)` would have used; keyword arguments such as
    `non_blocking=` carry over unchanged.
    """

    code = "DEV202"
    name = "cuda-with-non-cuda-device"
    message = "`.cuda()` takes only a CUDA device; this device may be the CPU: use `.to(device)`"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="RuntimeError: Invalid device, must be cuda device",
        raises="RuntimeError",
        match=r"Invalid device, must be cuda device",
    )
    triggers = ("cuda",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "cuda":
            return
        if self.ctx.qualify(func) is not None or self.ctx.defines_own(func.value, "cuda"):
            return  # `torch.cuda` the module, or a class with its own `.cuda`
        target = _device_argument(node)
        if target is None or isinstance(target, cst.Integer):
            return
        device = self.ctx.device_of(target)
        if device is None or device.type == "cuda":
            return
        # Assigned in branches (`if available: d = "cuda" else: d = "cpu"`): a choice.
        certain = not isinstance(target, cst.Name) or certain_value(self.ctx, target).kind is not Kind.UNKNOWN
        fix = None
        if sum(a.keyword is None for a in node.args) <= 1:
            # `.cuda(d, True)` would become `.to(d, True)`: True is no dtype.
            fix = self.fix("Use `.to(device)`", [(func, func.with_changes(attr=cst.Name("to")))])
        if device.type is not None and certain:
            self.report(node, fix=fix)  # a literal non-CUDA device: wrong everywhere
        elif device.type is not None or (device.guarded and not device.literal):
            # Chosen by an availability check: wrong where CUDA is missing,
            # unless this very call only runs where it is present.
            self.report(node, fix=fix, condition=self.ctx.unguarded())


def _device_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "device":
            return arg.value
    return None

