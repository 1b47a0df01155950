"""DataLoaders and the code their worker processes run.

With `num_workers > 0` a `torch.utils.data.DataLoader` forks worker processes
that call the dataset's `__getitem__` / `__getitems__` (or iterate its
`__iter__`) and the `collate_fn` / `worker_init_fn` it was given. Questions:

- `is_dataloader(ctx, call)`: does this call build a torch DataLoader (also a
  local subclass of one)?
- `worker_code(ctx)`: does the current node run in a worker — inside a
  `__getitem__`/`__getitems__`/`__iter__` of a Dataset class, or inside a
  function (or lambda) this file passes as `collate_fn=` / `worker_init_fn=`
  to a DataLoader whose `num_workers` is not `0`? Answers with a `WorkerCode`
  whose `condition` is to be re-checked once the whole file is known (the
  DataLoader call may come after the function).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from .names import dotted
from .tree import children

if TYPE_CHECKING:
    from .context import Context

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# Dataset methods a worker calls.
WORKER_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__"})
# DataLoader arguments that are called in the workers.
WORKER_ARGUMENTS = frozenset({"collate_fn", "worker_init_fn"})


@dataclass(frozen=True)
class WorkerCode:
    what: str  # "`__getitem__` of a Dataset", "a `collate_fn`"
    condition: Callable[[], bool]  # true once the file is known: it does run in a worker


def is_dataloader(ctx: "Context", call: cst.Call) -> bool:
    qual = ctx.qualify(call.func)
    if qual is not None:
        return qual in DATALOADERS
    if isinstance(call.func, cst.Name):
        info = ctx.classes.get(call.func.value)
        return info is not None and ctx.lookup(call.func.value) is None and any(b in DATALOADERS for b in info.bases)
    return False


def worker_code(ctx: "Context") -> Optional[WorkerCode]:
    method = _enclosing_method(ctx)
    if method is not None:
        cls, func = method
        if cls.is_dataset and func.name.value in WORKER_METHODS:
            return WorkerCode(f"`{func.name.value}` of a Dataset", lambda: True)
    names = [s.node.name.value for s in ctx.scopes if s.kind == "function"]  # type: ignore[attr-defined]
    lambdas = [n for n in ctx.stack if isinstance(n, cst.Lambda)]
    if not names and not lambdas:
        return None
    module = ctx.stack[0]

    def runs_in_worker() -> bool:
        passed = _worker_arguments(ctx, module)
        return any(n in passed.get("names", {}) and passed["names"][n] for n in names) or any(
            id(lam) in passed.get("lambdas", {}) and passed["lambdas"][id(lam)] for lam in lambdas
        )

    return WorkerCode("a `collate_fn` / `worker_init_fn`", runs_in_worker)


def _enclosing_method(ctx: "Context"):
    """(ClassInfo, FunctionDef) of the method around the current node, through
    nested functions; None outside methods."""
    for scope in reversed(ctx.scopes):
        if scope.kind == "function" and scope.cls is not None:
            return scope.cls, scope.node
        if scope.kind == "class":
            return None
    return None


_CACHE_ATTR = "_dataloading_worker_arguments"


def _worker_arguments(ctx: "Context", module: cst.CSTNode) -> dict:
    """{"names": {function name: may run in a worker}, "lambdas": {id: ...}} over
    every DataLoader call in the file. Computed once, when first asked (after the walk)."""
    cached = getattr(ctx, _CACHE_ATTR, None)
    if cached is not None and cached[0] is module:
        return cached[1]
    names: dict[str, bool] = {}
    lambdas: dict[int, bool] = {}
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        if not isinstance(node, cst.Call) or not is_dataloader(ctx, node):
            continue
        workers = _may_have_workers(node)
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in WORKER_ARGUMENTS:
                continue
            value = _unwrap_partial(ctx, arg.value)
            if isinstance(value, cst.Lambda):
                lambdas[id(value)] = lambdas.get(id(value), False) or workers
                continue
            name = dotted(value)
            if name is not None:
                key = name.rsplit(".", 1)[-1]
                names[key] = names.get(key, False) or workers
    result = {"names": names, "lambdas": lambdas}
    setattr(ctx, _CACHE_ATTR, (module, result))
    return result


def _unwrap_partial(ctx: "Context", expr: cst.BaseExpression) -> cst.BaseExpression:
    """`functools.partial(collate, pad=0)` -> `collate`."""
    if isinstance(expr, cst.Call) and ctx.qualify(expr.func) == "functools.partial" and expr.args:
        return expr.args[0].value
    return expr


def _may_have_workers(call: cst.Call) -> bool:
    """False only when `num_workers` is certainly 0: absent (and no `**kwargs`), or a literal 0."""
    for arg in call.args:
        if arg.star == "**":
            return True
        if arg.keyword is not None and arg.keyword.value == "num_workers":
            return not (isinstance(arg.value, cst.Integer) and int(arg.value.value) == 0)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)
    if len(positional) > 5:
        value = positional[5].value
        return not (isinstance(value, cst.Integer) and int(value.value) == 0)
    return any(a.star == "*" for a in call.args)
