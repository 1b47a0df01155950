from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import keyword, torchapi
from ..semantics.accelerator_only import AcceleratorOnly
from ..semantics.compat import is_version_fallback


class HardcodedAmpDevice(Rule):
    """
    ## What it does
    Flags mixed precision tied to CUDA: the deprecated
    `torch.cuda.amp.autocast()` / `torch.cuda.amp.GradScaler()`, and
    `torch.autocast("cuda")` / `torch.amp.GradScaler("cuda")` with a literal
    device — or `torch.amp.GradScaler()` with none, whose device defaults to
    `"cuda"` — that no `torch.cuda.is_available()` check guards.

    ## Why is this bad?
    Without a GPU, autocast and the gradient scaler switch themselves off
    with nothing more than a warning — `UserWarning: CUDA is not available or
    torch_xla is imported. Disabling autocast.` — so the code trains in full
    precision there, silently, and never uses the CPU's own autocast. The
    `torch.cuda.amp` spellings also emit a `FutureWarning` on every machine:
    they are deprecated in favour of `torch.amp.autocast("cuda", ...)`.

    An explicit `enabled=` other than `True` (`enabled=use_amp`) is the
    author's switch and silences the literal-device case. The deprecated
    spelling as a fallback for old releases (in a branch chosen by the torch
    version, or in an `except AttributeError:` after trying the new one) is
    what those releases need and is not flagged.

    Nor is a literal CUDA autocast or scaler in a function that places on a
    hardcoded CUDA device unguarded (or hands one to a function of the file
    that places with it), or in a script whose own module code does (itself
    or through a function of the file it calls, `main()`): it crashes before
    mixed precision could switch off, and DEV101 reports that. The
    deprecated spelling is flagged there too: it warns on every machine.

    Not flagged: `device_type=str(device)`. Old PyTorch releases rejected a
    device type with an index (`'cuda:0'`); torch 2.13 accepts it.

    ## Example
    ```python
    scaler = torch.cuda.amp.GradScaler()
    with torch.autocast("cuda"):
        loss = model(x)
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler(device.type)
    with torch.autocast(device.type):
        loss = model(x)
    ```

    ## Fix safety
    No fix. The device to use is the author's choice (`device.type` of the
    chosen device). `torch.amp.autocast("cuda", ...)` is the drop-in
    replacement for the deprecated spelling, but it keeps the hardcoded
    device, and with it the problem.
    """

    code = "DEV107"
    name = "hardcoded-amp-device"
    message = "`{what}` is hardcoded to CUDA: without a GPU mixed precision silently switches off"
    default_message = "`{what}` defaults to CUDA: without a GPU the scaler silently switches off; pass `device.type`"
    deprecated_message = "`{what}` is deprecated and hardcoded to CUDA: use `torch.amp.{cls}(device.type, ...)`"
    claim = Claim(
        backends=("no-accel",),
        summary="UserWarning: CUDA is not available ... Disabling — mixed precision silently off",
        warns="UserWarning",
        match=r"CUDA is not available.*Disabling",
    )
    triggers = ("amp", "autocast")

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        self._accelerator_only = AcceleratorOnly(ctx)

    def visit_Call(self, node: cst.Call) -> None:
        if self._accelerator_only.note(node):
            return
        qual = self.ctx.qualify(node.func)
        if qual is None:
            return
        if qual in torchapi.DEPRECATED_CUDA_AMP:
            if is_version_fallback(self.ctx.stack):
                return  # what old releases need, beside the new spelling
            cls = torchapi.DEPRECATED_CUDA_AMP[qual].rsplit(".", 1)[-1]
            what = f"torch.cuda.amp.{cls}()"
            self.report(node, self.deprecated_message.format(what=what, cls=cls))
            return
        device_keyword = torchapi.AMP_DEVICE_KEYWORD.get(qual)
        if device_keyword is None:
            return
        target = keyword(node, device_keyword) or _first(node)
        if target is None:
            # `torch.amp.GradScaler()`: its device defaults to "cuda" (autocast has no default).
            if device_keyword != "device" or any(a.star for a in node.args):
                return
            message, what = self.default_message, f"{_public_name(qual)}()"
        else:
            device = self.ctx.device_of(target)
            if device is None or not device.hardcoded("cuda"):
                return
            message, what = self.message, f'{_public_name(qual)}("cuda")'
        if _enabled_by_default(node):
            unguarded, crashes_first = self.ctx.unguarded(), self._accelerator_only.here()
            self.report(node, message.format(what=what), condition=lambda: unguarded() and not crashes_first())


def _first(call: cst.Call) -> Optional[cst.BaseExpression]:
    if call.args and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _public_name(qual: str) -> str:
    """The spelling the author used, without the private submodule
    (`torch.amp.autocast_mode.autocast` is `torch.amp.autocast`)."""
    for private in (".autocast_mode.", ".grad_scaler."):
        qual = qual.replace(private, ".")
    return qual


def _enabled_by_default(call: cst.Call) -> bool:
    """No `enabled=`, or `enabled=True`: the author left no switch."""
    enabled = keyword(call, "enabled")
    return enabled is None or (isinstance(enabled, cst.Name) and enabled.value == "True")
