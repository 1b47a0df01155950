from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import events, keyword
from ..semantics.names import dotted

_DATA_PARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
)
_DISTRIBUTED = frozenset(
    {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
)
_MOVES = frozenset({"to", "cuda", "xpu"})


class DataparallelModuleNotOnDevice(Rule):
    """
    ## What it does
    Flags `nn.DataParallel(model)` and `DistributedDataParallel(model, device_ids=[...])`
    wrapping a module that was built in this scope and never moved to a
    device, when the wrapper is not moved either.

    ## Why is this bad?
    `DataParallel` expects its module on `device_ids[0]`. With several GPUs,
    its forward raises
    `RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu`.
    (With one GPU, DataParallel moves the module itself; the code breaks on
    the first multi-GPU machine.) `DistributedDataParallel` with `device_ids`
    rejects a CPU module at once:
    `ValueError: DistributedDataParallel device_ids and output_device arguments only work with single-device/multiple-device GPU modules or CPU modules`.

    Not flagged: modules moved before wrapping, wrappers moved right after
    (`nn.DataParallel(model).to(device)`), `device_ids` with one entry, and
    DistributedDataParallel without `device_ids` (CPU training).

    ## Example
    ```python
    model = Net()
    model = nn.DataParallel(model)
    ```

    ## Use instead
    ```python
    model = Net().to(device)
    model = nn.DataParallel(model)
    ```

    ## Fix safety
    No fix: the device to move to is the caller's choice.
    """

    code = "DEV307"
    name = "dataparallel-module-not-on-device"
    message = "`{wrapper}` of a module that is not on a device: move the module to `device_ids[0]` first"
    claim = Claim(
        backends=("multi-gpu",),
        summary="the wrapped module stays on the CPU; forward raises `module must have its parameters and buffers on device cuda:0 (device_ids[0])`",
        postcondition=True,
    )
    triggers = ("DataParallel",)

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualify(node.func)
        if qual in _DATA_PARALLEL:
            if not _all_gpus_or_several(keyword(node, "device_ids") or _positional(node, 1)):
                return
        elif qual in _DISTRIBUTED:
            ids = keyword(node, "device_ids") or _positional(node, 1)
            if ids is None or (isinstance(ids, cst.Name) and ids.value == "None"):
                return
        else:
            return
        module = keyword(node, "module") or _positional(node, 0)
        if module is None:
            return
        if not self._built_here_unmoved(module):
            return
        owner = dotted(module)
        scope = events.scope_node(self.ctx)
        if owner is not None and any(
            m.owner == owner or m.owner.startswith(owner + ".") for m in self.ctx.events.moves(scope)
        ):
            return
        target = self._wrapper_target(node)
        if target is None:
            return
        wrapper = qual.rsplit(".", 1)[-1]
        message = self.message.format(wrapper=wrapper)
        if target == "":
            self.report(node, message)
            return
        log = self.ctx.events
        self.report(node, message, condition=lambda: not log.moved_after(scope, target, node))

    def _built_here_unmoved(self, module: cst.BaseExpression) -> bool:
        """A module constructed right there, or bound to a local name from a
        constructor in this scope, and not moved since. Parameters and
        attributes may have been moved anywhere: unknown."""
        value = self.ctx.value_of(module)
        if not value.is_module or value.device is not None or value.cls is None:
            return False
        if isinstance(module, cst.Call):
            return True
        if not isinstance(module, cst.Name):
            return False
        scope = self.ctx.scopes[-1] if self.ctx.scopes else None
        return scope is not None and module.value in scope.names and module.value not in scope.params

    def _wrapper_target(self, node: cst.Call) -> Optional[str]:
        """The name the wrapper is stored in ("" for an expression statement), or
        None when the wrapper is moved right away or goes somewhere we cannot follow."""
        parent = self.ctx.parent()
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _MOVES:
            return None  # `nn.DataParallel(model).to(device)`
        if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
            return dotted(parent.targets[0].target)
        if isinstance(parent, cst.Expr):
            return ""
        return None


def _positional(call: cst.Call, index: int) -> Optional[cst.BaseExpression]:
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > index and not positional[index].star:
        return positional[index].value
    return None


def _all_gpus_or_several(ids: Optional[cst.BaseExpression]) -> bool:
    """`device_ids` left out (every GPU) or a literal list of two or more."""
    if ids is None or (isinstance(ids, cst.Name) and ids.value == "None"):
        return True
    if isinstance(ids, (cst.List, cst.Tuple)):
        return len(ids.elements) >= 2
    return False
