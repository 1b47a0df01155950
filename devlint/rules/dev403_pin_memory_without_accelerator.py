from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import bindings, dataloading
from ..semantics.accelerator_only import AcceleratorOnly
from ..semantics.context import string_value
from ..semantics.tree import iter_subtree


class PinMemoryWithoutAccelerator(Rule):
    """
    ## What it does
    Flags a literal `pin_memory=True` (or a name certainly bound to `True`,
    such as `use_gpu = True` a few lines up; or a `"pin_memory": True` entry
    of a dict literal spread into the call, `DataLoader(ds, **params)`) passed to a
    `torch.utils.data.DataLoader` that is not tied to accelerator availability: not under a
    `torch.cuda.is_available()` check (or any other guard devlint
    recognises), and not computed from one.

    ## Why is this bad?
    Pinned (page-locked) host memory only helps copies to an accelerator. On
    a machine without one, iterating the loader warns
    `UserWarning: 'pin_memory' argument is set as true but no accelerator is
    found, then device pinned memory won't be used.` — the flag does nothing
    but print noise, and it says the code was only thought through for a GPU.

    Traps that are not flagged: `pin_memory=torch.cuda.is_available()`,
    `pin_memory=use_cuda`, `pin_memory=args.pin_memory`, a keyword dict built
    under `if use_cuda:`, and any DataLoader inside a guarded branch. Nor is a
    loader in a function that places data on an accelerator unguarded (CUDA:
    DEV101, MPS: DEV102, as in `"cuda" if torch.cuda.is_available() else
    "mps"`) or hands CUDA to a function of the file that places with it, or
    in a file whose own module code (its `__main__` block included) does,
    itself or through a function of the file it calls (`main()`,
    `train(loader)`): it cannot run without one, and the pinning warning
    would only repeat that.

    ## Example
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=torch.cuda.is_available())
    ```

    ## Fix safety
    Unsafe: `pin_memory=torch.cuda.is_available()` keeps pinning wherever CUDA
    is, but turns it off on other accelerators (Apple MPS, Intel XPU) that
    torch may pin for; on torch 2.6+ `torch.accelerator.is_available()` may be
    the better test.
    """

    code = "DEV403"
    name = "pin-memory-without-accelerator"
    message = "`pin_memory=True` regardless of accelerator availability: without one it only warns; use `pin_memory=torch.cuda.is_available()`"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("no-accel",),
        summary="UserWarning: 'pin_memory' argument is set as true but no accelerator is found",
        warns="UserWarning",
        match=r"'pin_memory' argument is set as true but no accelerator is found",
    )
    triggers = ("pin_memory",)

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        # Code that cannot run without an accelerator gains nothing from a
        # pinning warning; a helper beside it in the file still may.
        self._accelerator_only = AcceleratorOnly(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        if self._accelerator_only.note(node):
            return
        if not dataloading.is_dataloader(self.ctx, node):
            return
        for arg in node.args:
            if arg.star == "**":
                value = _spread_pin_memory(self.ctx, arg)
            elif arg.keyword is not None and arg.keyword.value == "pin_memory":
                value = arg.value
            else:
                continue
            if value is not None and _always_true(self.ctx, value):
                unguarded, crashes_first = self.ctx.unguarded(), self._accelerator_only.here()
                self.report(
                    value if arg.star else arg,
                    fix=self._fix(value) if value.value == "True" else None,
                    condition=lambda: unguarded() and not crashes_first(),
                )

    def _fix(self, value: cst.Name) -> Optional[NodeFix]:
        torch = self.ctx.torch_alias()
        if torch is None:
            return None
        return self.fix("Pin memory only when CUDA is available", [(value, cst.parse_expression(f"{torch}.cuda.is_available()"))])


def _spread_pin_memory(ctx, arg: cst.Arg) -> Optional[cst.BaseExpression]:
    """`DataLoader(ds, **params)` after `params = {"batch_size": 8, "pin_memory":
    True}`: the value the dict literal gives `pin_memory`, when that literal is
    certain to be `params` here and nothing in the file touches `params`
    (`params.update(...)`, `params["pin_memory"] = ...`, a dict built under
    `if use_cuda:` and spread outside it)."""
    if type(arg.value) is not cst.Name:
        return None
    name = arg.value.value
    source = bindings.certain_source(ctx, arg.value)
    if type(source) is not cst.Dict:
        return None
    value = next((e.value for e in source.elements if type(e) is cst.DictElement and string_value(e.key) == "pin_memory"), None)
    if value is None:
        return None
    # Every mention of the name in the file is an assignment or a `**` spread:
    # nothing changes the dict (wherever it was bound: module or function).
    mentions = spreads = assigned = 0
    for node in iter_subtree(ctx.stack[0]):
        kind = type(node)
        if kind is cst.Name and node.value == name:  # type: ignore[attr-defined]
            mentions += 1
        elif kind is cst.Arg and node.star == "**" and type(node.value) is cst.Name and node.value.value == name:  # type: ignore[attr-defined]
            spreads += 1
        elif kind is cst.Assign:
            assigned += sum(type(t.target) is cst.Name and t.target.value == name for t in node.targets)  # type: ignore[attr-defined]
    return value if mentions == spreads + assigned else None


def _always_true(ctx, value: cst.BaseExpression) -> bool:
    """`True`, or a name certain to hold it here (`use_gpu = True` a few lines up)."""
    if not isinstance(value, cst.Name):
        return False
    if value.value != "True":
        value = bindings.certain_source(ctx, value)  # type: ignore[assignment]
    return isinstance(value, cst.Name) and value.value == "True"
