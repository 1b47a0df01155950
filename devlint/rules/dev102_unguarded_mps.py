from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics.placements import Placement, placement


class UnguardedMps(Rule):
    """
    ## What it does
    Flags placement on Apple's MPS device — `.to("mps")`, `device="mps"`, a
    `torch.device("mps")` then used for placement, `map_location="mps"`,
    `torch.set_default_device("mps")` — that no
    `torch.backends.mps.is_available()` check guards.

    ## Why is this bad?
    The code runs only on Apple silicon. Everywhere else — Linux and Windows
    machines, CI runners, machines with an NVIDIA GPU — it crashes with
    `RuntimeError: PyTorch is not linked with support for mps devices`
    (`NotImplementedError: Could not run '...' with arguments from the 'MPS'
    backend` for a factory such as `torch.zeros(..., device="mps")`).

    The same guards as for CUDA silence the rule: an `if`, an early exit, a
    conditional expression, a flag assigned from `is_available()`, a device
    the caller supplies, `torch.accelerator.is_available()`. A check of
    another backend is no guard for MPS: in `"cuda" if
    torch.cuda.is_available() else "mps"` the `else` branch is taken wherever
    CUDA is missing, on Apple silicon or not. A `torch.device("mps")` that is
    never used to place anything allocates nothing and is not flagged.

    ## Example
    ```python
    model = Net().to("mps")
    ```

    ## Use instead
    ```python
    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")
    model = Net().to(device)
    ```

    ## Fix safety
    Unsafe: the fix replaces a literal `"mps"` with
    `"mps" if torch.backends.mps.is_available() else "cpu"`, so the code runs
    on the CPU where it used to crash — behaviour changes, and choosing the
    device once at the top is still the better shape.
    """

    code = "DEV102"
    name = "unguarded-mps"
    message = "MPS placement without a `torch.backends.mps.is_available()` guard crashes on every machine but Apple silicon"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("no-accel",),
        summary="RuntimeError: PyTorch is not linked with support for mps devices",
        raises="RuntimeError|NotImplementedError",
        match=(
            r"PyTorch is not linked with support for mps devices|with arguments from the 'MPS' backend"
            r"|Storage device not recognized: mps"
        ),
    )
    triggers = ("mps",)

    def visit_Call(self, node: cst.Call) -> None:
        found = placement(self.ctx, node)
        if found is None or not found.hardcoded("mps"):
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "mps" and self.ctx.qualify(func) is None:
            # Neither Tensor nor Module has an `.mps()` method: someone else's API.
            return
        self.report(node, fix=self._fix(found), condition=self.ctx.unguarded())

    def _fix(self, found: Placement) -> Optional[NodeFix]:
        torch = self.ctx.torch_alias()
        target = found.target
        if torch is None or not isinstance(target, cst.SimpleString) or target.evaluated_value != "mps":
            return None
        choice = cst.parse_expression(f'"mps" if {torch}.backends.mps.is_available() else "cpu"')
        sole = len(found.call.args) == 1 and found.call.args[0].value is target
        if found.how != "method" and not sole:
            choice = choice.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return self.fix("Fall back to the CPU when MPS is unavailable", [(target, choice)])
