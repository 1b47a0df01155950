from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import torchapi


class DeprecatedDeviceProbe(Rule):
    """
    ## What it does
    Flags the deprecated build flags `torch.has_cuda`, `torch.has_mps` and
    `torch.has_cudnn` used as device checks, also read as
    `getattr(torch, "has_mps", False)`.

    ## Why is this bad?
    They say how PyTorch was built, not what the machine has: `torch.has_cuda`
    is true on every machine with a CUDA build of PyTorch, GPU or not, so
    `if torch.has_cuda: model.cuda()` still crashes on a GPU-less machine
    with the standard wheel. Reading them also emits
    `UserWarning: 'has_cuda' is deprecated, please use
    'torch.backends.cuda.is_built()'`.

    ## Example
    ```python
    device = "cuda" if torch.has_cuda else "cpu"
    ```

    ## Use instead
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ```

    ## Fix safety
    Safe: `torch.has_cuda` becomes `torch.cuda.is_available()` and
    `torch.has_mps` becomes `torch.backends.mps.is_available()` — what a
    device check means; they differ only where the old flag was wrong (a
    build with the backend, a machine without the device).
    `torch.has_cudnn` becomes `torch.backends.cudnn.is_available()`, its
    documented replacement with the same value. The `getattr` spelling gets
    no fix: it is there for old releases, which may lack the replacement too.
    """

    code = "DEV108"
    name = "deprecated-device-probe"
    message = "`{flag}` is a deprecated build flag, true without a device on {backend} build: use `{instead}`"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="UserWarning: 'has_cuda' is deprecated (and true on GPU-less machines with a CUDA build)",
        warns="UserWarning",
        match=r"'has_(cuda|mps|cudnn)' is deprecated",
    )
    triggers = ("has_cud", "has_mps")

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check(node)

    def visit_Name(self, node: cst.Name) -> None:
        parent = self.ctx.parent()
        if isinstance(parent, (cst.Attribute, cst.ImportAlias)):
            return  # part of a longer chain (seen as the Attribute), or the import itself
        self._check(node)

    def visit_Call(self, node: cst.Call) -> None:
        # `getattr(torch, "has_mps", False)`: the same flag, read so that old
        # releases without it do not raise. No fix: those releases may lack
        # the replacement too.
        if not (isinstance(node.func, cst.Name) and node.func.value == "getattr" and len(node.args) >= 2):
            return
        name = node.args[1].value
        if self.ctx.qualify(node.args[0].value) == "torch" and isinstance(name, cst.SimpleString):
            attr = name.evaluated_value
            if isinstance(attr, str):
                self._check(node, flag=f"torch.{attr}", fixable=False)

    def _check(self, node: cst.BaseExpression, flag: Optional[str] = None, fixable: bool = True) -> None:
        flag = flag or self.ctx.qualify(node)
        instead = torchapi.DEPRECATED_DEVICE_FLAGS.get(flag or "")
        if instead is None or _is_assigned(self.ctx.parent(), node):
            return
        backend = {"torch.has_cuda": "a CUDA", "torch.has_mps": "an MPS", "torch.has_cudnn": "a cuDNN"}[flag]
        message = self.message.format(flag=flag, backend=backend, instead=instead)
        self.report(node, message, fix=self._fix(node, instead) if fixable else None)

    def _fix(self, node: cst.BaseExpression, instead: str) -> Optional[NodeFix]:
        torch = self.ctx.torch_alias()
        if torch is None:
            return None
        new = cst.parse_expression(torch + instead[len("torch"):])
        if node.lpar:
            new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
        return self.fix(f"Use `{instead}`", [(node, new)])


def _is_assigned(parent: Optional[cst.CSTNode], node: cst.BaseExpression) -> bool:
    """`torch.has_cuda = ...` (a monkeypatch in a test) is no use of the flag."""
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign)) or (
        isinstance(parent, cst.Del)
    )
