from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics import torchapi
from ..semantics.truthiness import TESTED, AssignedTo, truth_use


class IsAvailableNotCalled(Rule):
    """
    ## What it does
    Flags `torch.cuda.is_available`, `torch.backends.mps.is_available`,
    `torch.cuda.is_bf16_supported` and the other availability probes used as
    a truth value without being called: `if torch.cuda.is_available:`,
    `"cuda" if torch.cuda.is_available else "cpu"`, `not ...`, `... and ...`,
    `assert ...`, or a name assigned the function and then tested.

    ## Why is this bad?
    A function object is always true. The "GPU present" branch is taken on
    every machine, and the CUDA code in it crashes where there is no GPU:
    `AssertionError: Torch not compiled with CUDA enabled`.

    Passing the function itself somewhere (`lru_cache(torch.cuda.is_available)`,
    `filter(...)`, a callback argument) is correct and not flagged.

    ## Example
    ```python
    device = "cuda" if torch.cuda.is_available else "cpu"
    ```

    ## Use instead
    ```python
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ```

    ## Fix safety
    Safe: the fix adds the missing `()`, which is what the test meant.
    """

    code = "DEV105"
    name = "is-available-not-called"
    message = "`{probe}` is not called: a function is always true, so the accelerator branch is always taken"
    assigned_message = (
        "`{name}` holds the function `{probe}`, not its result: it is always true, "
        "so the accelerator branch is always taken"
    )
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("no-accel",),
        summary="the guarded accelerator code runs and crashes: AssertionError: Torch not compiled with CUDA enabled",
        raises="AssertionError|RuntimeError|NotImplementedError",
        match=(
            r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available"
            r"|PyTorch is not linked with support for mps devices|with arguments from the 'MPS' backend"
        ),
    )
    triggers = tuple(sorted({q.rsplit(".", 1)[-1] for q in torchapi.UNCALLED_PROBES}))

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        # Per scope (id of its node): name -> the uncalled probe assigned to it
        # (None once the name is bound to anything else).
        self._held: dict[int, dict[str, Optional[cst.BaseExpression]]] = {}
        self._reported: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._check_probe(node)

    def visit_Name(self, node: cst.Name) -> None:
        if self._check_probe(node):
            return
        if truth_use(self.ctx.stack) == TESTED:
            self._check_holder(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        # Any rebinding forgets what the name held; an uncalled probe is recorded
        # again by `_check_probe` when the walk reaches the value.
        scope = self._held.setdefault(id(self.ctx.scopes[-1].node), {})
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                scope[target.target.value] = None

    def _check_probe(self, node: cst.BaseExpression) -> bool:
        """`torch.cuda.is_available` itself (not called). True if it is one."""
        probe = self.ctx.qualify(node)
        if probe not in torchapi.UNCALLED_PROBES or self._is_called_or_part(node):
            return False
        use = truth_use(self.ctx.stack)
        if use == TESTED:
            self.report(node, self.message.format(probe=probe), fix=self._add_call(node))
        elif isinstance(use, AssignedTo):
            self._held.setdefault(id(self.ctx.scopes[-1].node), {})[use.name] = node
        return True

    def _is_called_or_part(self, node: cst.BaseExpression) -> bool:
        parent = self.ctx.parent()
        if isinstance(parent, cst.Call) and parent.func is node:
            return True
        # `torch.cuda.is_available.cache_clear` / the `is_available` in `x.is_available`.
        return isinstance(parent, cst.Attribute) and (parent.value is node or parent.attr is node)

    def _check_holder(self, node: cst.Name) -> None:
        probe_node = self._holder(node.value)
        if probe_node is None or id(probe_node) in self._reported:
            return
        self._reported.add(id(probe_node))  # one finding per assignment
        message = self.assigned_message.format(name=node.value, probe=self.ctx.qualify(probe_node))
        self.report(node, message, fix=self._add_call(probe_node))

    def _holder(self, name: str) -> Optional[cst.BaseExpression]:
        """The uncalled probe `name` holds where it is read, if it holds one."""
        for i, scope in enumerate(reversed(self.ctx.scopes)):
            if scope.kind == "class" and i > 0:
                continue
            held = self._held.get(id(scope.node), {})
            if name in held:
                return held[name]
            if name in scope.names or name in scope.params:
                return None
        return None

    def _add_call(self, node: cst.BaseExpression):
        return self.fix("Call it: add `()`", [(node, cst.Call(func=node))])

