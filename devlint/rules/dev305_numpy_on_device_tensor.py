from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics import guards, residence

# NumPy functions that turn their first argument into an array (`Tensor.__array__`,
# which calls `.numpy()`): the converters, and those that copy its shape and dtype.
_NUMPY_CONVERTERS = frozenset(
    {
        "numpy.array", "numpy.asarray", "numpy.asanyarray", "numpy.ascontiguousarray", "numpy.copy",
        "numpy.zeros_like", "numpy.ones_like", "numpy.empty_like", "numpy.full_like",
    }
)
# Savers that convert their array argument the same way: (position, keyword).
_NUMPY_SAVERS = {"numpy.save": (1, "arr"), "numpy.savetxt": (1, "X")}
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


class NumpyOnDeviceTensor(Rule):
    """
    ## What it does
    Flags `.numpy()`, `np.array(t)`, `np.asarray(t)`, `np.copy(t)`,
    `np.zeros_like(t)` (and `ones_like`, `empty_like`, `full_like`), and
    `np.save(path, t)` / `np.savetxt(path, t)` (which convert `t` the same
    way) on a tensor that may
    live on an accelerator: one moved with `.cuda()` / `.to(device)`, or the
    output of a model that was moved, without a `.cpu()` in between.

    ## Why is this bad?
    NumPy arrays live in host memory. A tensor on a GPU cannot be viewed as
    one, so the call raises
    `TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.`
    The code works on a CPU-only machine and fails as soon as it meets a GPU.

    Only flagged when the tensor is known to have been placed with a device
    that may be an accelerator; tensors that never left the host, and
    `.numpy(force=True)`, stay silent.

    ## Example
    ```python
    logits = model.to(device)(batch.to(device))
    preds = logits.argmax(-1).numpy()
    ```

    ## Use instead
    ```python
    logits = model.to(device)(batch.to(device))
    preds = logits.argmax(-1).cpu().numpy()
    ```

    ## Fix safety
    Safe: `.cpu()` returns the tensor itself when it already is on the host,
    and a host copy otherwise, which is what `.numpy()` needs.
    """

    code = "DEV305"
    name = "numpy-on-device-tensor"
    message = "`.numpy()` of a tensor that may be on an accelerator raises `TypeError`; call `.cpu()` first"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cuda",),
        summary="TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
        raises="TypeError",
        match=r"can't convert \w+(:\d+)? device type tensor to numpy",
    )
    triggers = (".numpy(", "array(", "copy(", "_like(", "save(", "savetxt(")

    def visit_Call(self, node: cst.Call) -> None:
        tensor = self._converted(node)
        if tensor is None:
            return
        if not residence.may_be_accelerator(residence.data_device(self.ctx, tensor)):
            return
        if guards.on_host_path(self.ctx):
            return  # `if device == "cpu": pred.numpy()`: only reached on the CPU
        self.report(node, fix=self.fix("Copy to the host with `.cpu()` first", [(tensor, _cpu(tensor))]))

    def _converted(self, node: cst.Call) -> Optional[cst.BaseExpression]:
        """The tensor this call converts to a NumPy array, if it is such a call."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy":
            if any(a.keyword is not None and a.keyword.value == "force" for a in node.args):
                return None
            if self.ctx.defines_own(func.value, "numpy"):
                return None
            return func.value
        qual = self.ctx.qualify(func)
        if qual in _NUMPY_CONVERTERS and node.args:
            first = node.args[0]
            if first.keyword is None and not first.star:
                return first.value
        if qual in _NUMPY_SAVERS and not any(a.star for a in node.args):
            index, name = _NUMPY_SAVERS[qual]
            positional = [a.value for a in node.args if a.keyword is None]
            named = [a.value for a in node.args if a.keyword is not None and a.keyword.value == name]
            return positional[index] if len(positional) > index else (named[0] if named else None)
        return None


def _cpu(expr: cst.BaseExpression) -> cst.Call:
    """`expr.cpu()`, parenthesising `expr` where the attribute access needs it."""
    if not isinstance(expr, _ATOMS) and not expr.lpar:
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("cpu")))
