from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import bindings, keyword, string_value, torchapi


class LegacyCudaTensorType(Rule):
    """
    ## What it does
    Flags the legacy CUDA tensor types used to make or convert tensors:
    `torch.cuda.FloatTensor(...)` and the other `torch.cuda.<Dtype>Tensor`
    constructors (also called through a name certain to hold one, `Tensor =
    torch.cuda.FloatTensor`), `.type(torch.cuda.FloatTensor)`,
    `.type("torch.cuda.FloatTensor")` and
    `torch.set_default_tensor_type("torch.cuda.FloatTensor")`, when no
    `torch.cuda.is_available()` check guards them.

    ## Why is this bad?
    They exist only where CUDA does. Without a GPU they crash —
    `TypeError: type torch.cuda.FloatTensor not available. Torch not compiled
    with CUDA enabled.` from the constructors, a `RuntimeError` from
    `.type(...)` — and the API is legacy: `set_default_tensor_type` is
    deprecated, and the typed constructors mix up size and data arguments.

    `isinstance(x, torch.cuda.FloatTensor)` and
    `x.type() == "torch.cuda.FloatTensor"` only ask, and are not flagged; nor
    is `Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor`.

    ## Example
    ```python
    mask = torch.cuda.FloatTensor(batch, 1).fill_(1.0)
    x = x.type(torch.cuda.FloatTensor)
    ```

    ## Use instead
    ```python
    mask = torch.ones(batch, 1, device=device)
    x = x.to(device, torch.float32)
    ```

    ## Fix safety
    No fix: a legacy constructor's arguments are a size or data depending on
    their types, which the linter cannot always tell.
    """

    code = "DEV106"
    name = "legacy-cuda-tensor-type"
    message = "Legacy `{what}` exists only where CUDA does and crashes without a GPU; use `dtype=` and `device=`"
    claim = Claim(
        backends=("no-accel",),
        summary="TypeError: type torch.cuda.FloatTensor not available. Torch not compiled with CUDA enabled.",
        raises="TypeError|RuntimeError|AssertionError",
        match=(
            r"type torch\.cuda\.\w+ not available|Torch not compiled with CUDA enabled"
            r"|Cannot initialize CUDA without ATen_cuda library|Found no NVIDIA driver|No CUDA GPUs are available"
        ),
    )
    triggers = ("cuda",)

    def visit_Call(self, node: cst.Call) -> None:
        what = self._legacy(node)
        if what is not None:
            self.report(node, self.message.format(what=what), condition=self.ctx.unguarded())

    def _legacy(self, node: cst.Call) -> Optional[str]:
        qual = self.ctx.qualify(node.func)
        if qual in torchapi.LEGACY_CUDA_TENSOR_TYPES:
            return f"{qual}(...)"
        if qual is None and isinstance(node.func, cst.Name):
            # `Tensor = torch.cuda.FloatTensor`, then `Tensor(1, 3, 64, 64)`: an alias
            # certain to hold the CUDA type (not `... if cuda else torch.FloatTensor`).
            aliased = self._cuda_type(node.func)
            if aliased is not None and not aliased.startswith("'"):
                return f"{aliased}(...)"
        if qual == "torch.set_default_tensor_type":
            arg = _first(node) or keyword(node, "t")
            name = self._cuda_type(arg)
            return f"torch.set_default_tensor_type({name})" if name else None
        func = node.func
        if qual is None and isinstance(func, cst.Attribute) and func.attr.value == "type":
            if self.ctx.defines_own(func.value, "type"):
                return None
            arg = _first(node) or keyword(node, "dtype")
            name = self._cuda_type(arg)
            return f".type({name})" if name else None
        return None

    def _cuda_type(self, arg: Optional[cst.BaseExpression], depth: int = 0) -> Optional[str]:
        """`torch.cuda.FloatTensor` or the string `'torch.cuda.FloatTensor'`, also
        through a name certain to hold one (`tt = torch.cuda.FloatTensor`) and a
        choice between two of them (`torch.cuda.HalfTensor if half else
        torch.cuda.FloatTensor`); not a choice with a CPU type in it."""
        if arg is None or depth > 3:
            return None
        qual = self.ctx.qualify(arg)
        if qual in torchapi.LEGACY_CUDA_TENSOR_TYPES:
            return qual
        text = string_value(arg)
        if text in torchapi.LEGACY_CUDA_TENSOR_TYPES:
            return repr(text)
        if isinstance(arg, cst.IfExp):
            chosen = self._cuda_type(arg.body, depth + 1)
            return chosen if chosen is not None and self._cuda_type(arg.orelse, depth + 1) is not None else None
        if qual is None and isinstance(arg, cst.Name):
            return self._cuda_type(bindings.certain_source(self.ctx, arg), depth + 1)
        return None


def _first(call: cst.Call) -> Optional[cst.BaseExpression]:
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None
