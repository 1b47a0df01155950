"""Device parameters: where a function places with the device its caller gives.

`def embed(x, device="cuda"): return x.to(device)` places where its caller
says, and a device the caller supplies is a guard — until the caller supplies
CUDA. That happens two ways: a call leaves out a parameter whose default is
CUDA (`embed(batch)`), or it passes CUDA itself (`embed(batch, "cuda")`,
`make_input(n, device)` after `device = torch.device("cuda:0")`). Either way
the finding belongs at that call: it is where the device is chosen, and a
function whose every caller passes a guarded device has no bug at all.

The walk records, per function of the file, the placements on each of its
parameters (`ParameterPlacements`: their "unguarded" conditions); a call of that function (a
module-level function, a method through `self` or an instance, a class of
the file through its `__init__`) that picks CUDA for such a parameter is
reported when the call itself is unguarded and one of the recorded
placements is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from . import bindings, classes, helper_reads

if TYPE_CHECKING:
    from .context import Context


def placing_parameter(ctx: "Context", target: Optional[cst.BaseExpression]) -> Optional[tuple[cst.FunctionDef, str]]:
    """(function, parameter) when a placement's `target` is a parameter of the
    function around it, never rebound (`def embed(x, device): x.to(device)`),
    or `self.device` kept from a parameter of `__init__`."""
    if type(target) is cst.Attribute:
        return _kept_from_parameter(ctx, target)  # type: ignore[arg-type]
    if type(target) is not cst.Name:
        return None
    scope = ctx.scopes[-1] if ctx.scopes else None
    if scope is None or scope.kind != "function" or type(scope.node) is not cst.FunctionDef:
        return None
    name = target.value  # type: ignore[attr-defined]
    if name not in scope.params:
        return None
    sites = bindings.scan(ctx, scope.node).sites.get(name, [])
    if not sites or any(site.kind != "param" for site in sites):
        return None
    return scope.node, name  # type: ignore[return-value]


def _kept_from_parameter(ctx: "Context", target: cst.Attribute) -> Optional[tuple[cst.FunctionDef, str]]:
    """`self.device`, assigned once, in `__init__`, from its parameter `device`
    (`def __init__(self, device): self.device = device`)."""
    if not (type(target.value) is cst.Name and target.value.value == "self"):  # type: ignore[attr-defined]
        return None
    info = ctx.current_class()
    if info is None:
        return None
    facts = classes.attributes(info).attrs.get(target.attr.value)
    if facts is None or len(facts.assigned_in) != 1:
        return None
    method_name, value = facts.assigned_in[0]
    init = classes.methods(info).get("__init__")
    if method_name != "__init__" or init is None or type(value) is not cst.Name:
        return None
    param = next((p for p in init.params.params if p.name.value == value.value), None)  # type: ignore[attr-defined]
    if param is None:
        return None
    sites = bindings.scan(ctx, init).sites.get(param.name.value, [])
    return (init, param.name.value) if all(site.kind == "param" for site in sites) else None


def omitted_defaults(ctx: "Context", call: cst.Call, device_type: str) -> list[tuple[str, cst.FunctionDef, str]]:
    """(display name, function, parameter) for each parameter with a literal
    `device_type` default that this call of a function of the file leaves out."""
    if any(arg.star for arg in call.args) or not _defaulting_functions(ctx, device_type):
        return []  # `f(*args, **kwargs)` may pass it; no function of the file has such a default
    found = _callee(ctx, call)
    if found is None or id(found[1]) not in _defaulting_functions(ctx, device_type):
        return []
    display, func, method = found
    given = helper_reads.bind(call, func, method)
    out = []
    for param in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params):
        name = param.name.value
        if param.default is not None and name not in given and _is_literal_device(ctx, param.default, device_type):
            out.append((display, func, name))
    return out


def passed_devices(ctx: "Context", call: cst.Call, device_type: str) -> list[tuple[str, cst.FunctionDef, str]]:
    """(display name, function, parameter) for each argument of this call of a
    function of the file that is a literal `device_type` device, unguarded
    (`make_input(n, "cuda")`, or a name bound to `torch.device("cuda:0")`)."""
    if not call.args:
        return []
    found = _callee(ctx, call)
    if found is None:
        return []
    display, func, method = found
    return [
        (display, func, name)
        for name, value in helper_reads.bind(call, func, method).items()
        if _is_literal_device(ctx, value, device_type)
    ]


class ParameterPlacements:
    """Filled while a file is walked: the placements on each parameter of the
    file's functions (their "unguarded" conditions), and so which calls give
    CUDA to a parameter that is placed with, unguarded."""

    def __init__(self) -> None:
        self._uses: dict[tuple[int, str], list[Callable[[], bool]]] = {}

    def record(self, ctx: "Context", target: Optional[cst.BaseExpression]) -> None:
        """A placement on `target`: kept if `target` is a parameter it places with."""
        placing = placing_parameter(ctx, target)
        if placing is not None:
            self._uses.setdefault((id(placing[0]), placing[1]), []).append(ctx.unguarded())

    def cuda_chosen_by(self, ctx: "Context", call: cst.Call) -> list[tuple[str, str, bool, Callable[[], bool]]]:
        """(callee, parameter, whether its CUDA default is left out, condition)
        for each parameter this call gives CUDA; the condition holds once the
        file is known if the call is unguarded and a placement with the parameter is."""
        chosen = [(*found, True) for found in omitted_defaults(ctx, call, "cuda")]
        chosen += [(*found, False) for found in passed_devices(ctx, call, "cuda")]
        out = []
        for callee, func, param, omitted in chosen:
            unguarded, uses = ctx.unguarded(), self._uses.setdefault((id(func), param), [])
            out.append((callee, param, omitted, lambda u=unguarded, d=uses: u() and any(c() for c in d)))
        return out


def _defaulting_functions(ctx: "Context", device_type: str) -> frozenset[int]:
    """The functions and methods of the file (by id) with a parameter whose
    default is a literal `device_type` device: found once per file."""
    key = f"defaults-{device_type}"
    found = ctx.memo.get(key)
    if found is None:
        module = ctx.stack[0] if ctx.stack else None
        defs = list(helper_reads.module_functions(ctx).values())
        for statement in module.body if isinstance(module, cst.Module) else ():
            if type(statement) is cst.ClassDef and isinstance(statement.body, cst.IndentedBlock):
                defs.extend(s for s in statement.body.body if type(s) is cst.FunctionDef)
        found = ctx.memo[key] = frozenset(
            id(d) for d in defs
            if any(
                p.default is not None and _is_literal_device(ctx, p.default, device_type)
                for p in (*d.params.posonly_params, *d.params.params, *d.params.kwonly_params)
            )
        )
    return found  # type: ignore[return-value]


def _callee(ctx: "Context", call: cst.Call) -> Optional[tuple[str, cst.FunctionDef, bool]]:
    """The function of this file a call runs, its display name, and whether it
    is a method (its first parameter is bound already)."""
    func = call.func
    if type(func) is cst.Name and func.value in ctx.classes and ctx.lookup(func.value) is None:  # type: ignore[attr-defined]
        init = classes.methods(ctx.classes[func.value]).get("__init__")  # type: ignore[attr-defined]
        return (func.value, init, True) if init is not None else None  # type: ignore[attr-defined]
    found = helper_reads.callee(ctx, call)
    if found is None:
        return None
    display, definition = found
    return display, definition, type(func) is not cst.Name


def _is_literal_device(ctx: "Context", expr: cst.BaseExpression, device_type: str) -> bool:
    device = ctx.device_of(expr)
    return device is not None and device.type == device_type and device.literal and not device.guarded
