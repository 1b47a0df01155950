from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import bindings
from ..semantics.devices import device_arguments, device_string_error, device_texts


class InvalidDeviceString(Rule):
    """
    ## What it does
    Flags a device string that torch rejects — `"gpu"`, `"cuda0"`, `"CUDA"`,
    `"cuda:-1"`, `"cuda:"`, `" cuda"` — where torch expects a device:
    `torch.device(...)`, `device=` of a torch function, `map_location=`,
    `.cuda(...)`, and `.to(...)` on a known tensor or module, written there
    or assigned to the name given there (`device = "gpu" if ... else "cpu"`,
    reported where the name is used: that is where torch raises). Also a
    string built at run time whose text around the index is wrong whatever
    the index (`"cuda: {}".format(i)`, `f"gpu:{rank}"`).

    ## Why is this bad?
    torch parses device strings strictly: a lowercase type it knows, then
    optionally `:` and a non-negative index, nothing else. Anything else
    raises on every machine, e.g.
    `RuntimeError: Expected one of cpu, cuda, ... device type at start of device string: gpu`
    or `RuntimeError: Invalid device string: 'cuda0'` (`torch.load` with such a
    `map_location` says `don't know how to restore data location`).

    Lowercase names torch does not know (`"npu"`) are not flagged: an
    out-of-tree backend may register them at run time.

    ## Example
    ```python
    device = torch.device("gpu")
    x = torch.zeros(3, device="cuda0")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda")
    x = torch.zeros(3, device="cuda:0")
    ```

    ## Fix safety
    No fix: which device was meant is a guess.
    """

    code = "DEV203"
    name = "invalid-device-string"
    message = "Invalid device string {text}: torch raises RuntimeError ({why})"
    claim = Claim(
        backends=("cpu",),
        summary="RuntimeError: Expected one of cpu, cuda, ... device type at start of device string: gpu",
        raises="RuntimeError",
        match=(
            r"device type at start of device string|Invalid device string|Device string must not be empty"
            r"|don't know how to restore data location"  # torch.load's map_location
        ),
    )
    triggers = ("device", "map_location", ".to", ".cuda", ".mps", ".xpu")

    def visit_Call(self, node: cst.Call) -> None:
        for arg in device_arguments(self.ctx, node):
            where: cst.CSTNode | None = None
            if isinstance(arg, cst.Name):
                # `device = "mps" if ... else "gpu"` and then `.to(device)`: it
                # raises here, where the name is used.
                source = bindings.certain_source(self.ctx, arg)
                if source is None:
                    continue
                where, arg = arg, source
            for literal, value in device_texts(arg):
                why = device_string_error(value)
                if why is not None:
                    text = repr(value)
                    if not isinstance(literal, (cst.SimpleString, cst.ConcatenatedString)):
                        text += " (as built at run time, whatever the index)"
                    if where is not None:
                        text += f" (in `{where.value}`)"  # type: ignore[attr-defined]
                    self.report(where or literal, self.message.format(text=text, why=why))
                    break
