"""Which functions of this file read a tensor argument on the host?

`def compute_metrics(logits, y): return (logits.argmax(1) == y).float().mean().item()`
reads `logits` on the host: called on every step of a training loop with the
model's output, it waits for the GPU as an inline `.item()` would. The answer
is one summary per function (parameter -> the read it suffers), computed from
the function's syntax tree on first question and kept for the file.

Only reads that run on every call count: not under an `if` (or in a
conditional expression, a nested function, a lambda, an `except`), and only
of data derived from the parameter through tensor operations (`x.argmax(1)`,
`x == y`, `torch.softmax(x, -1)`, `x[0]`), never through metadata
(`x.shape[0]`, `len(x)`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from . import bindings, classes, loops, torchapi
from .residence import NOT_DATA_ATTRS
from .tree import children

if TYPE_CHECKING:
    from .context import Context

# Tensor methods that copy the data to the host.
SYNC_METHODS = frozenset({"item", "cpu", "numpy", "tolist"})
# Builtins that convert one tensor to a Python number.
CONVERSIONS = frozenset({"float", "int", "bool"})
# Where a read may not run on every call.
_MAYBE = (cst.If, cst.IfExp, cst.ExceptHandler, cst.FunctionDef, cst.ClassDef, cst.Lambda, cst.While)
_NO_READS: dict[str, str] = {}
_NONE: frozenset[str] = frozenset()


def callee(ctx: "Context", call: cst.Call) -> Optional[tuple[str, cst.FunctionDef]]:
    """The function of this file a call runs, with its display name:
    `helper(...)` for a module-level `def helper`, `self.helper(...)` for a
    method of the class around the call, `buffer.add(...)` for a method of an
    instance of a class of this file."""
    func = call.func
    if isinstance(func, cst.Name):
        found = module_functions(ctx).get(func.value)
        if found is None or ctx.lookup(func.value) is not None:
            return None  # not a def of this module, or rebound
        return func.value, found
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        info = ctx.current_class()
        if info is None:
            return None
        found = classes.methods(info).get(func.attr.value)
        return (f"self.{func.attr.value}", found) if found is not None else None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        # `replay.add_batch(x, y)` after `replay = ReplayBuffer(...)`, a class of this file.
        owner = loops.method_owner(ctx, func)
        found = classes.methods(ctx.classes[owner]).get(func.attr.value) if owner is not None else None
        return (f"{func.value.value}.{func.attr.value}", found) if found is not None else None
    return None


def module_functions(ctx: "Context") -> dict[str, cst.FunctionDef]:
    found = ctx.memo.get("module-functions")
    if found is None:
        module = ctx.stack[0] if ctx.stack else None
        body = module.body if isinstance(module, cst.Module) else ()
        found = ctx.memo["module-functions"] = {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}
    return found  # type: ignore[return-value]


def parameter_reads(ctx: "Context", func: cst.FunctionDef) -> dict[str, str]:
    """Parameter name -> the host read (`.item()`, `float(tensor)`) every call
    of `func` makes of data derived from it. A name ending in `[]` (`tensors[]`)
    is read element by element: `for t in tensors: t.max().item()`."""
    key = f"parameter-reads:{id(func)}"
    cached = ctx.memo.get(key)
    if cached is None:
        ctx.memo[key] = _NO_READS  # a recursive call reads nothing more
        cached = ctx.memo[key] = _scan(ctx, func)
    return cached  # type: ignore[return-value]


def bind(call: cst.Call, func: cst.FunctionDef, method: bool) -> dict[str, cst.BaseExpression]:
    """The call's arguments by the parameter they bind (positional and keyword;
    nothing for `*args`/`**kwargs`)."""
    params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
    static = any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in func.decorators)
    if method and params and not static:
        params = params[1:]  # `self`
    bound: dict[str, cst.BaseExpression] = {}
    position = 0
    for arg in call.args:
        if arg.star:
            break
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        elif position < len(params):
            bound[params[position]] = arg.value
            position += 1
    return bound


def _scan(ctx: "Context", func: cst.FunctionDef) -> dict[str, str]:
    params = {p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    params.discard("self")
    if not params:
        return _NO_READS
    # Which local names hold data derived from which parameters (two passes reach
    # names assigned from names assigned from a parameter).
    origin = {p: frozenset({p}) for p in params}
    nodes = _every_call_nodes(func.body)
    assigns = [n for n in nodes if isinstance(n, cst.Assign)]
    # `criterion = nn.CrossEntropyLoss()` made here: what it computes comes from its inputs.
    modules = _torch_modules_made(ctx, func, params)
    if modules:
        origin.update({m: _A_MODULE for m in modules})
    loops = [n for n in nodes if isinstance(n, cst.For)]
    for _ in range(2):
        for node in assigns:
            for target in node.targets:
                for name, value in _unpacked(target.target, node.value):
                    sources = _roots(ctx, value, origin)
                    if sources and name not in params:
                        origin[name] = origin.get(name, _NONE) | sources
        for loop in loops:
            for name, iterable in _loop_bindings(loop):
                sources = _roots(ctx, iterable, origin)
                if sources and name not in params:
                    elements = frozenset(s if s.endswith("[]") else f"{s}[]" for s in sources)
                    origin[name] = origin.get(name, _NONE) | elements
    reads: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, cst.Call):
            sources, what = _read(ctx, node, origin)
            for source in sources:
                reads.setdefault(source, what)
            for source, what in _passed_on(ctx, node, origin, params):
                reads.setdefault(source, what)
    return reads


# In `origin`, what marks a local name bound to a torch module (no parameter is named so).
_MODULE = "<module>"
_A_MODULE = frozenset({_MODULE})


def _torch_modules_made(ctx: "Context", func: cst.FunctionDef, params: set[str]) -> list[str]:
    """Local names every binding of which, in this function, builds a torch.nn
    module (`criterion = nn.CrossEntropyLoss()`)."""
    made = []
    for name, sites in bindings.scan(ctx, func).sites.items():
        if name in params or not sites:
            continue
        if all(site.kind == "assign" and _builds_torch_module(ctx, site.value) for site in sites):
            made.append(name)
    return made


def _builds_torch_module(ctx: "Context", value: Optional[cst.BaseExpression]) -> bool:
    qual = ctx.qualify(value.func) if isinstance(value, cst.Call) else None
    return qual is not None and qual.startswith("torch.nn.") and qual.rsplit(".", 1)[-1][:1].isupper()


def _passed_on(
    ctx: "Context", call: cst.Call, origin: dict[str, frozenset[str]], params: set[str]
) -> list[tuple[str, str]]:
    """`accuracy(logits, y)` inside a helper, where `accuracy` (a function of this
    file) reads its argument: the helper reads what it passes on."""
    func = call.func
    if not isinstance(func, cst.Name) or func.value in params or func.value in origin:
        return []
    inner = module_functions(ctx).get(func.value)
    if inner is None:
        return []
    found = []
    bound = bind(call, inner, method=False)
    for param, what in parameter_reads(ctx, inner).items():
        arg = bound.get(param)
        if arg is not None:  # element-wise reads (`tensors[]`) are left to the outer call
            where = what if " in `" in what else f"{what} in `{func.value}()`"
            found.extend((source, where) for source in _roots(ctx, arg, origin))
    return found


def _unpacked(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, cst.BaseExpression]]:
    """The names an assignment binds and what each is computed from:
    `x = v` -> (x, v); `x, y = x.to(d), y.to(d)` pairwise; `data, labels = batch`
    -> each from `batch`."""
    if isinstance(target, cst.Name):
        return [(target.value, value)]
    if not isinstance(target, (cst.Tuple, cst.List)):
        return []
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    if bindings.pairwise(target, value):
        return [(n, e.value) for n, e in zip(names, value.elements) if n]  # type: ignore[attr-defined]
    return [(n, value) for n in names if n]


def _loop_bindings(loop: cst.For) -> list[tuple[str, cst.BaseExpression]]:
    """The loop's names and what each iterates over: `for t in ts` -> (t, ts);
    `for i, t in enumerate(ts)` -> (t, ts); `for a, b in zip(xs, ys)` -> (a, xs), (b, ys)."""
    target, iterable = loop.target, loop.iter
    if isinstance(target, cst.Name):
        return [(target.value, iterable)]
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(iterable, cst.Call)):
        return []
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    func = iterable.func
    args = [a.value for a in iterable.args if a.keyword is None and not a.star]
    if isinstance(func, cst.Name) and func.value == "enumerate" and len(names) == 2 and len(args) == 1:
        return [(names[1], args[0])] if names[1] else []
    if isinstance(func, cst.Name) and func.value == "zip" and len(names) == len(args):
        return [(n, a) for n, a in zip(names, args) if n]
    return []


def _every_call_nodes(body: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes of a function's body that run on every call, in order."""
    out: list[cst.CSTNode] = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, _MAYBE):
            continue
        out.append(node)
        stack.extend(reversed(list(children(node))))
    return out


def _read(ctx: "Context", call: cst.Call, origin: dict[str, frozenset[str]]) -> tuple[frozenset[str], str]:
    """The parameters a host read reads data of, and what the read is."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in SYNC_METHODS and not call.args:
        return _roots(ctx, func.value, origin), f"`.{func.attr.value}()`"
    if isinstance(func, cst.Name) and func.value in CONVERSIONS and ctx.lookup(func.value) is None:
        if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
            return _roots(ctx, call.args[0].value, origin), f"`{func.value}(tensor)`"
    return _NONE, ""


def _roots(ctx: "Context", expr: cst.BaseExpression, origin: dict[str, frozenset[str]]) -> frozenset[str]:
    """The parameters whose data `expr` is computed from by tensor operations."""
    while True:
        if isinstance(expr, cst.Name):
            found = origin.get(expr.value, _NONE)
            return _NONE if _MODULE in found else found
        if isinstance(expr, cst.Attribute):
            if expr.attr.value in NOT_DATA_ATTRS:
                return _NONE
            expr = expr.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.UnaryOperation):
            expr = expr.expression
        elif isinstance(expr, cst.BinaryOperation):
            return _roots(ctx, expr.left, origin) | _roots(ctx, expr.right, origin)
        elif isinstance(expr, cst.Comparison):
            found = _roots(ctx, expr.left, origin)
            for c in expr.comparisons:
                found |= _roots(ctx, c.comparator, origin)
            return found
        elif isinstance(expr, cst.Call):
            func = expr.func
            qual = ctx.qualify(func)
            if qual is not None:  # `torch.softmax(x, -1)`: computed from its first argument
                first = expr.args[0] if expr.args else None
                if qual not in torchapi.TENSOR_FUNCTIONS or qual in torchapi.FACTORIES or first is None:
                    return _NONE
                if first.keyword is not None or first.star:
                    return _NONE
                expr = first.value
            elif isinstance(func, cst.Attribute) and func.attr.value in torchapi.TENSOR_RETURNING_METHODS:
                if func.attr.value in SYNC_METHODS:
                    return _NONE  # already on the host
                expr = func.value
            elif isinstance(func, cst.Name) and _MODULE in origin.get(func.value, _NONE):
                # `criterion(pred, target)`: a torch module computes from all its inputs.
                found = _NONE
                for arg in expr.args:
                    if not arg.star:
                        found |= _roots(ctx, arg.value, origin)
                return found
            else:
                return _NONE
        else:
            return _NONE
