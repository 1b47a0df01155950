from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import cuda_init
from ..semantics.context import string_value

VARIABLE = "CUDA_VISIBLE_DEVICES"


class VisibleDevicesAfterInit(Rule):
    """
    ## What it does
    Flags `os.environ["CUDA_VISIBLE_DEVICES"] = ...` (also
    `os.environ.setdefault`, `os.environ.update`, `os.putenv`) that runs after
    the same process has initialised CUDA: after `torch.cuda.is_available()`,
    a tensor or model placed on CUDA, `torch.cuda.set_device(...)` and the
    like — earlier in the function, in the module code that runs before it,
    or before a call of the function in the same file.

    ## Why is this bad?
    CUDA reads `CUDA_VISIBLE_DEVICES` once, when the driver initialises. Set
    later, it changes nothing for this process: the same GPUs stay visible,
    `torch.cuda.is_available()` and the devices used are unchanged, and the
    job runs on GPU 0 instead of the GPU it asked for (or on a GPU it was
    meant to leave alone). `torch.cuda.device_count()` even disagrees with
    the devices really used until CUDA is fully initialised.

    Setting the variable before the first CUDA call — at the top of the
    script, before importing torch, or before anything touches CUDA — is
    fine, and so is setting it for child processes the function launches
    (`subprocess`, `multiprocessing`, `torch.multiprocessing.spawn`).
    `torch.cuda.manual_seed(...)` does not initialise CUDA;
    `torch.cuda.device_count()` may (where NVML cannot answer), so it counts.

    ## Example
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu
    model = Net().to(device)
    ```

    ## Use instead
    ```python
    os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    ```
    or select the device in code: `torch.device(f"cuda:{args.gpu}")`.

    ## Fix safety
    No fix: the assignment has to move before the first CUDA call.
    """

    code = "DEV401"
    name = "visible-devices-after-init"
    message = (
        "`CUDA_VISIBLE_DEVICES` is set after this process initialised CUDA: it has no effect here; "
        "set it before the first CUDA call"
    )
    claim = Claim(
        backends=("cuda",),
        summary="no effect: the GPUs stay visible (torch.cuda.is_available() / the devices used are unchanged)",
        postcondition=True,
    )
    triggers = (VARIABLE,)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and self._is_environ(t.value) and self._subscript_key(t) == VARIABLE:
                self._check(t)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        qual = self.ctx.qualify(func)
        first = node.args[0].value if node.args and node.args[0].keyword is None else None
        if qual == "os.putenv" and first is not None and string_value(first) == VARIABLE:
            self._check(node)
        elif isinstance(func, cst.Attribute) and self._is_environ(func.value):
            if func.attr.value == "setdefault" and first is not None and string_value(first) == VARIABLE:
                self._check(node)
            elif func.attr.value == "update" and self._update_sets(node):
                self._check(node)

    def _check(self, node: cst.CSTNode) -> None:
        scope = self.ctx.current_function() or self.ctx.stack[0]
        if cuda_init.launches_processes(self.ctx, scope):
            return  # the variable is for the processes it starts
        chain = list(self.ctx.stack)
        if node is not chain[-1]:
            chain.append(node)
        self.report(node, condition=lambda: cuda_init.touched_before(self.ctx, chain) is not None)

    def _is_environ(self, expr: cst.BaseExpression) -> bool:
        return self.ctx.qualify(expr) == "os.environ"

    @staticmethod
    def _subscript_key(node: cst.Subscript) -> Optional[str]:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return None
        return string_value(node.slice[0].slice.value)

    @staticmethod
    def _update_sets(call: cst.Call) -> bool:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == VARIABLE:
                return True
            if arg.keyword is None and isinstance(arg.value, cst.Dict):
                if any(isinstance(e, cst.DictElement) and string_value(e.key) == VARIABLE for e in arg.value.elements):
                    return True
        return False
