from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import keyword
from ..semantics.names import dotted, is_variable_use

# Reading a host tensor's values.
_READ_METHODS = frozenset({"tolist", "item"})
# Views of the host tensor's memory: they read nothing, so what is done with
# the view decides (`return x.to("cpu", non_blocking=True).numpy()` hands the
# copy on; `....numpy().tolist()` reads it).
_VIEW_METHODS = frozenset({"numpy"})
_READ_BUILTINS = frozenset({"bool", "int", "float", "print", "list", "str", "repr", "sum", "max", "min"})
_READ_FUNCTIONS = frozenset({"numpy.array", "numpy.asarray"})
# Calls that wait for the device (explicitly, or by copying device data to the host).
_SYNC_METHODS = frozenset({"synchronize", "query", "item", "tolist", "cpu", "numpy"})


class NonblockingCopyReadBeforeSync(Rule):
    """
    ## What it does
    Flags a device-to-host copy with `non_blocking=True` —
    `t.to("cpu", non_blocking=True)`, `host.copy_(t, non_blocking=True)`,
    `t.cpu(non_blocking=True)` — whose result is read (`.tolist()`,
    `.item()`, indexing, `if`/`while`, `float(...)`, also through a
    `.numpy()` view of it) before anything synchronizes with the device.

    ## Why is this bad?
    A non-blocking copy to the host only enqueues the copy and returns at
    once, into pinned memory. Until the stream reaches it, the host tensor
    holds whatever was there: reading it is a data race that yields stale or
    zero values, silently, and only on a GPU.

    Not flagged when `torch.cuda.synchronize()`, `event.synchronize()`,
    `stream.synchronize()`, or a blocking copy (`.item()`, `.cpu()`, ...)
    comes between the copy and the read, or when the copy is only handed on
    (returned, passed to another function, copied back to the device) --
    also as a NumPy array: `.numpy()` shares the host memory and reads nothing.
    `Tensor.cpu()` takes no `non_blocking` at all: the call raises `TypeError`.

    ## Example
    ```python
    flags = flags_gpu.to("cpu", non_blocking=True)
    if flags[0]:
        ...
    ```

    ## Use instead
    ```python
    flags = flags_gpu.to("cpu")
    if flags[0]:
        ...
    ```

    ## Fix safety
    Safe: dropping `non_blocking=True` makes the copy wait for the data,
    which the read needs anyway; only the overlap is lost. (Or keep it and
    call `torch.cuda.synchronize()` before the read.)
    """

    code = "DEV309"
    name = "nonblocking-copy-read-before-sync"
    message = "Non-blocking copy to the host is read before any synchronize: the values may not have arrived yet"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cuda",),
        summary="a data race: the host tensor holds stale or zero values when it is read",
        postcondition=True,
    )
    triggers = ("non_blocking",)

    def __init__(self, *args) -> None:
        super().__init__(*args)
        # Per function: dotted names holding an unfinished copy -> the copy call.
        self._pending: dict[int, dict[str, cst.Call]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if self._copies_to_host(node):
            self._after_copy(node)
            return
        if self._synchronizes(node):
            self._pending.clear()

    def visit_Assign(self, node: cst.Assign) -> None:
        pending = self._here()
        if pending:
            for target in node.targets:
                name = dotted(target.target)
                if name is not None:
                    pending.pop(name, None)

    def visit_Name(self, node: cst.Name) -> None:
        self._maybe_read(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._maybe_read(node)

    # -- the copy ------------------------------------------------------------
    def _copies_to_host(self, call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        flag = keyword(call, "non_blocking")
        if not (isinstance(flag, cst.Name) and flag.value == "True"):
            return False
        method = func.attr.value
        if method == "cpu":
            return True
        if method == "to":
            target = keyword(call, "device")
            if target is None and call.args and call.args[0].keyword is None:
                target = call.args[0].value
            device = self.ctx.device_of(target) if target is not None else None
            return device is not None and device.type == "cpu"
        if method == "copy_":
            dest = self.ctx.value_of(func.value)
            return dest.is_tensor and dest.device is not None and dest.device.type == "cpu"
        return False

    def _after_copy(self, call: cst.Call) -> None:
        func = call.func
        assert isinstance(func, cst.Attribute)
        if self._read_here(call):
            self.report(call, fix=self._fix(call))
            return
        stack = self.ctx.stack
        top = self._through_views(len(stack) - 1)
        outer, parent = stack[top], stack[top - 1] if top >= 1 else None
        target: Optional[str] = None
        if func.attr.value == "copy_" and isinstance(parent, cst.Expr) and outer is call:
            target = dotted(func.value)  # the destination now waits for the copy
        elif isinstance(parent, cst.Assign) and parent.value is outer and len(parent.targets) == 1:
            target = dotted(parent.targets[0].target)  # `host = x.to("cpu", non_blocking=True)[.numpy()]`
        if target is not None:
            self._pending.setdefault(id(self.ctx.current_function()), {})[target] = call

    # -- reads and synchronization ---------------------------------------------
    def _maybe_read(self, node: cst.BaseExpression) -> None:
        pending = self._here()
        if not pending:
            return
        name = dotted(node)
        if name is None or name not in pending:
            return
        if not is_variable_use(self.ctx.parent(), node):
            return  # `x.host`, `f(host=...)`: another thing than `host`
        if self._read_here(node):
            call = pending.pop(name)
            self.report(call, fix=self._fix(call))

    def _read_here(self, node: cst.BaseExpression) -> bool:
        """Is the value of `node` (at the top of the walk's stack) read right
        here, directly or through a view of it (`.numpy()`)?"""
        stack = self.ctx.stack
        top = self._through_views(len(stack) - 1)
        node = stack[top]
        parent = stack[top - 1] if top >= 1 else None
        grand = stack[top - 2] if top >= 2 else None
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return parent.attr.value in _READ_METHODS and isinstance(grand, cst.Call) and grand.func is parent
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return True
        if isinstance(parent, (cst.If, cst.While)) and parent.test is node:
            return True
        if isinstance(parent, cst.Arg) and isinstance(grand, cst.Call):
            func = grand.func
            if isinstance(func, cst.Name) and func.value in _READ_BUILTINS and self.ctx.lookup(func.value) is None:
                return True
            return self.ctx.qualify(func) in _READ_FUNCTIONS
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.UnaryOperation, cst.BooleanOperation)):
            # `if host > 0:`, `if not host:` — a condition of control flow.
            for ancestor in reversed(stack[: top - 1]):
                if isinstance(ancestor, (cst.If, cst.While, cst.IfExp)):
                    return True
                if not isinstance(ancestor, (cst.Comparison, cst.ComparisonTarget, cst.UnaryOperation, cst.BooleanOperation)):
                    return False
        return False

    def _through_views(self, index: int) -> int:
        """The stack index of the outermost `.numpy()` view of the expression at `index`."""
        stack = self.ctx.stack
        while index >= 2:
            attribute, call = stack[index - 1], stack[index - 2]
            if not (
                isinstance(attribute, cst.Attribute) and attribute.value is stack[index]
                and attribute.attr.value in _VIEW_METHODS
                and isinstance(call, cst.Call) and call.func is attribute and not call.args
            ):
                break
            index -= 2
        return index

    def _synchronizes(self, call: cst.Call) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute):
            root = _root(func.value)
            if root is not None and any(root in names for names in self._pending.values()):
                return False  # `host[0].item()` reads the host tensor; it waits for nothing
            if func.attr.value in _SYNC_METHODS:
                return True
            if func.attr.value == "to" and keyword(call, "non_blocking") is None:
                return True  # a blocking copy waits for the stream
        name = dotted(func) or ""
        return name.endswith("synchronize")

    def _here(self) -> dict[str, cst.Call]:
        return self._pending.get(id(self.ctx.current_function()), {})

    def _fix(self, call: cst.Call) -> Optional[NodeFix]:
        args = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "non_blocking")]
        if args:
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return self.fix("Copy synchronously: drop `non_blocking=True`", [(call, call.with_changes(args=args))])


def _root(expr: cst.BaseExpression) -> Optional[str]:
    """`host` for `host`, `host[0]`, `host.sum()`; `self.buf` for `self.buf[:n]`."""
    while True:
        name = dotted(expr)
        if name is not None:
            return name
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        else:
            return None
