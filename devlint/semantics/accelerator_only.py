"""Code that cannot run without an accelerator: a function (or the module)
that places on a hardcoded accelerator unguarded, or hands CUDA to a function
of the file that places with it (`train(model, loader, "cuda")`), and a
script whose module code calls such a function of the file (`main()`,
`train(loader)`). What only goes wrong without an accelerator (a pinning
warning, autocast switching itself off) adds nothing there: DEV101/DEV102
already report the crash that comes first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import libcst as cst

from . import device_parameters, helper_reads, torchapi
from .placements import placement

if TYPE_CHECKING:
    from .context import Context


class AcceleratorOnly:
    """Per function (or the module), the "unguarded" conditions of its
    hardcoded accelerator placements, filled while the file is walked and
    asked once it is known. A rule keeps one and shows it every call."""

    def __init__(self, ctx: "Context") -> None:
        self.ctx = ctx
        self._needs: dict[int, list[Callable[[], bool]]] = {}
        self._parameters = device_parameters.ParameterPlacements()

    def note(self, call: cst.Call) -> bool:
        """Record `call`; True if it places on a hardcoded accelerator."""
        ctx = self.ctx
        needs = self._needs.setdefault(id(ctx.scopes[-1].node), [])
        found = placement(ctx, call)
        if found is not None and any(found.hardcoded(t) for t in torchapi.ACCELERATOR_TYPES):
            needs.append(ctx.unguarded())
            return True
        if found is not None:
            self._parameters.record(ctx, found.target)
        # A call of the file's function that gives CUDA to a parameter it places with.
        needs.extend(condition for *_, condition in self._parameters.cuda_chosen_by(ctx, call))
        if len(ctx.scopes) == 1:
            self._note_script_call(call)
        return False

    def here(self) -> Callable[[], bool]:
        """A condition: the current function, or the script's own module code
        (its main block included), cannot run without an accelerator."""
        needs = self._needs.setdefault(id(self.ctx.scopes[-1].node), [])
        script_needs = self._needs.setdefault(id(self.ctx.scopes[0].node), [])
        return lambda: any(crashes() for crashes in (*needs, *script_needs))

    def _note_script_call(self, call: cst.Call) -> None:
        """Module code calling a function of the file: the script needs an
        accelerator when the call is unguarded and the function places on one
        unguarded."""
        found = helper_reads.callee(self.ctx, call)
        if found is None:
            return
        called, unguarded = self._needs.setdefault(id(found[1]), []), self.ctx.unguarded()
        self._needs.setdefault(id(self.ctx.scopes[0].node), []).append(
            lambda: unguarded() and any(crashes() for crashes in called)
        )
