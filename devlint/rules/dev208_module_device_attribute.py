from __future__ import annotations

import re
from typing import Callable, Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics.bindings import certain_value
from ..semantics.devices import class_lacks_device, lacks_device_attribute
from ..semantics.scopes import ClassInfo
from ..semantics.values import UNKNOWN


class ModuleDeviceAttribute(Rule):
    """
    ## What it does
    Flags `.device` read from an `nn.Module` that has no such attribute: a
    plain `torch.nn` layer (`nn.Linear(...).device`), or an instance (or
    `self`) of a local `nn.Module` subclass that neither defines nor assigns
    `device` and inherits only from such classes.

    ## Why is this bad?
    Tensors have a `.device`; `nn.Module` does not — its parameters may even
    live on several devices. Reading it raises
    `AttributeError: 'Linear' object has no attribute 'device'`.

    Hugging Face models, Lightning modules and any class that defines or
    assigns `device` do have it, so a module with a base class from another
    library is never flagged.

    ## Example
    ```python
    model = nn.Linear(16, 4)
    x = torch.randn(8, 16, device=model.device)
    ```

    ## Use instead
    ```python
    model = nn.Linear(16, 4)
    x = torch.randn(8, 16, device=next(model.parameters()).device)
    ```

    ## Fix safety
    Unsafe: `next(model.parameters()).device` is the device of the first
    parameter. A module without parameters raises `StopIteration` instead,
    and one spread over several devices has no single answer.
    """

    code = "DEV208"
    name = "module-device-attribute"
    message = "`nn.Module` has no `.device` attribute: use `next(module.parameters()).device`"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("cpu",),
        summary="AttributeError: 'Linear' object has no attribute 'device'",
        raises="AttributeError",
        match=r"'\w+' object has no attribute 'device'",
    )
    triggers = ("device",)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value != "device" or self._is_target(node):
            return
        receiver = node.value
        condition = self._self_lacks_device(receiver) if _is_self(receiver) else self._lacks_device(receiver)
        if condition is None:
            return
        call = cst.Call(
            func=cst.Name("next"),
            args=[cst.Arg(cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("parameters"))))],
        )
        fix = self.fix("Use the device of the first parameter", [(node, node.with_changes(value=call))])
        self.report(node, fix=fix, condition=condition)

    def _is_target(self, node: cst.Attribute) -> bool:
        parent = self.ctx.parent()
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)) and parent.target is node:
            return True
        return isinstance(parent, cst.Del)

    def _lacks_device(self, receiver: cst.BaseExpression) -> Optional[Callable[[], bool]]:
        if isinstance(receiver, cst.Attribute) and _is_self(receiver.value):
            cls, attr = self.ctx.current_class(), receiver.attr.value
            if cls is None or attr in cls.members:
                return None
            if not lacks_device_attribute(self.ctx, cls.attrs.get(attr, UNKNOWN)):
                return None
            return lambda: lacks_device_attribute(self.ctx, cls.attrs.get(attr, UNKNOWN))
        if not isinstance(receiver, (cst.Name, cst.Call)):
            return None
        value = certain_value(self.ctx, receiver)
        if not lacks_device_attribute(self.ctx, value):
            return None
        if isinstance(receiver, cst.Name):
            # `model.device = ...` anywhere gives the instance the attribute.
            assigned = re.compile(rf"\b{re.escape(receiver.value)}\.device\s*=[^=]")
            if assigned.search(self.ctx.source):
                return None
        return lambda: lacks_device_attribute(self.ctx, value)

    def _self_lacks_device(self, receiver: cst.BaseExpression) -> Optional[Callable[[], bool]]:
        """`self.device` in a method of a module class that has none — and no
        subclass in this file that adds one."""
        cls = self.ctx.current_class()
        function = self.ctx.current_function()
        if cls is None or function is None or not _is_method_of_self(function):
            return None
        if not class_lacks_device(self.ctx, cls):
            return None

        def later() -> bool:
            return class_lacks_device(self.ctx, cls) and not any(
                not class_lacks_device(self.ctx, sub) for sub in _subclasses(self.ctx.classes, cls)
            )

        return later


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _is_method_of_self(function: cst.FunctionDef) -> bool:
    params = function.params
    first = (params.posonly_params or params.params or (None,))[0]
    if first is None or first.name.value != "self":
        return False
    names = {(d.decorator.value if isinstance(d.decorator, cst.Name) else "") for d in function.decorators}
    return not names & {"staticmethod", "classmethod"}


def _subclasses(classes: dict[str, ClassInfo], cls: ClassInfo) -> list[ClassInfo]:
    out, frontier = [], {cls.name}
    changed = True
    while changed:
        changed = False
        for info in classes.values():
            if info.name not in frontier and frontier & set(info.bases):
                out.append(info)
                frontier.add(info.name)
                changed = True
    return out
