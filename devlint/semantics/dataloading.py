"""DataLoaders and the code their worker processes run.

With `num_workers > 0` a `torch.utils.data.DataLoader` forks worker processes
that call the dataset's `__getitem__` / `__getitems__` (or iterate its
`__iter__`) and the `collate_fn` / `worker_init_fn` it was given. Questions:

- `is_dataloader(ctx, call)`: does this call build a torch DataLoader (also a
  local subclass of one)?
- `worker_code(ctx)`: does the current node run in a worker — inside a
  `__getitem__`/`__getitems__`/`__iter__` of a Dataset class (unless every
  DataLoader in the file that may take it has no workers), or inside a
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
            module = ctx.stack[0]
            name = cls.name
            return WorkerCode(
                f"`{func.name.value}` of a Dataset", lambda: _dataset_may_run_in_worker(ctx, module, name)
            )
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
    """{"names": {function name: may run in a worker}, "lambdas": {id: ...},
    "datasets": {local Dataset class or "*": ...}} over every DataLoader call in
    the file. Computed once, when first asked (after the walk)."""
    cached = getattr(ctx, _CACHE_ATTR, None)
    if cached is not None and cached[0] is module:
        return cached[1]
    names: dict[str, bool] = {}
    lambdas: dict[int, bool] = {}
    assigned: dict[str, list[cst.BaseExpression]] = {}  # every value assigned to a name, anywhere
    loaders: list[cst.Call] = []
    iterated: list[cst.BaseExpression] = []  # what `for` loops go over
    mentions: dict[str, int] = {}  # how often each name occurs at all
    plain: dict[str, int] = {}  # ... as an assignment target or a `**name` spread
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        stack.extend(children(node))
        kind = type(node)
        if kind is cst.Name:
            mentions[node.value] = mentions.get(node.value, 0) + 1  # type: ignore[attr-defined]
        elif kind is cst.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                if type(target.target) is cst.Name:
                    assigned.setdefault(target.target.value, []).append(node.value)  # type: ignore[attr-defined]
                    plain[target.target.value] = plain.get(target.target.value, 0) + 1
        elif kind is cst.Arg and node.star == "**" and type(node.value) is cst.Name:  # type: ignore[attr-defined]
            plain[node.value.value] = plain.get(node.value.value, 0) + 1  # type: ignore[attr-defined]
        elif kind is cst.Call and is_dataloader(ctx, node):  # type: ignore[arg-type]
            loaders.append(node)  # type: ignore[arg-type]
        elif kind is cst.For:
            iterated.append(unwrap_iteration(ctx, node.iter)[0])  # type: ignore[attr-defined]
    # A dict name used any other way (`kwargs.update(...)`, `kwargs["num_workers"] = 4`,
    # passed to a function) may gain workers: only untouched ones are followed.
    untouched = {name: values for name, values in assigned.items() if mentions.get(name) == plain.get(name)}
    datasets: dict[str, bool] = {}  # local Dataset class (or "*": unknown) -> may run in a worker
    for node in loaders:
        workers = _may_have_workers(node, untouched)
        for cls in _dataset_classes(ctx, _dataset_argument(node), assigned):
            datasets[cls] = datasets.get(cls, False) or workers
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
    # No DataLoader at all, and the file loops over a Dataset of its own
    # (`for sample in tqdm(dataset):`): it reads the items in this process.
    by_hand: set[str] = set()
    if not loaders:
        for expr in iterated:
            by_hand |= _dataset_classes(ctx, expr, assigned) - {"*"}
    result = {"names": names, "lambdas": lambdas, "datasets": datasets, "by_hand": by_hand}
    setattr(ctx, _CACHE_ATTR, (module, result))
    return result


def _unwrap_partial(ctx: "Context", expr: cst.BaseExpression) -> cst.BaseExpression:
    """`functools.partial(collate, pad=0)` -> `collate`."""
    if isinstance(expr, cst.Call) and ctx.qualify(expr.func) == "functools.partial" and expr.args:
        return expr.args[0].value
    return expr


def _dataset_may_run_in_worker(ctx: "Context", module: cst.CSTNode, name: str) -> bool:
    """Does a DataLoader with workers take the Dataset class `name`? Yes when the
    file shows no DataLoader that may take it (it is used elsewhere), unless the
    file has no DataLoader and loops over the dataset itself; no when every
    DataLoader here that may take it has no workers."""
    found = _worker_arguments(ctx, module)
    datasets = found["datasets"]
    seen = [datasets[key] for key in (name, "*") if key in datasets]
    if not seen:
        return name not in found["by_hand"]
    return any(seen)


_ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm", "iter"})


def unwrap_iteration(ctx: "Context", expr: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """`ds` of `ds`, `enumerate(ds)`, `tqdm(ds)`, `iter(ds)`, `tqdm(enumerate(ds))`,
    and whether an `enumerate` counts the items."""
    counted = False
    while isinstance(expr, cst.Call) and expr.args and expr.args[0].keyword is None:
        name = ctx.qualify(expr.func) or dotted(expr.func)
        if name not in _ITERATION_WRAPPERS:
            break
        counted = counted or name == "enumerate"
        expr = expr.args[0].value
    return expr, counted


def _dataset_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dataset":
            return arg.value
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def _dataset_classes(
    ctx: "Context", expr: Optional[cst.BaseExpression], assigned: dict[str, list[cst.BaseExpression]], depth: int = 0
) -> set[str]:
    """The local classes (and their local bases) `expr` may be an instance of;
    "*" for anything that cannot be told (`Subset(...)`, a parameter)."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value in ctx.classes:
        found, todo = set(), [expr.func.value]
        while todo:
            cls = todo.pop()
            if cls not in found:
                found.add(cls)
                info = ctx.classes.get(cls)
                todo.extend(b for b in (info.bases if info is not None else ()) if b in ctx.classes)
        return found
    if isinstance(expr, cst.Name) and depth < 3 and expr.value in assigned:
        return set().union(*(_dataset_classes(ctx, v, assigned, depth + 1) for v in assigned[expr.value]))
    return {"*"}


def _may_have_workers(call: cst.Call, assigned: dict[str, list[cst.BaseExpression]]) -> bool:
    """False only when `num_workers` is certainly 0: absent, a literal 0, or
    spread from dicts that only ever hold a 0 (`**kwargs`)."""
    for arg in call.args:
        if arg.star == "**":
            if not _zero_worker_kwargs(arg.value, assigned):
                return True
            continue
        if arg.keyword is not None and arg.keyword.value == "num_workers":
            return not (isinstance(arg.value, cst.Integer) and int(arg.value.value) == 0)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, ...)
    if len(positional) > 5:
        value = positional[5].value
        return not (isinstance(value, cst.Integer) and int(value.value) == 0)
    return any(a.star == "*" for a in call.args)


def _zero_worker_kwargs(expr: cst.BaseExpression, assigned: dict[str, list[cst.BaseExpression]], depth: int = 0) -> bool:
    """`{'num_workers': 0, 'pin_memory': True} if use_cuda else {}`: a dict (or a
    name only ever assigned such dicts) with no `num_workers` other than 0."""
    if isinstance(expr, cst.IfExp):
        return _zero_worker_kwargs(expr.body, assigned, depth) and _zero_worker_kwargs(expr.orelse, assigned, depth)
    if isinstance(expr, cst.Name):
        values = assigned.get(expr.value)
        return bool(values) and depth < 3 and all(_zero_worker_kwargs(v, assigned, depth + 1) for v in values)
    if isinstance(expr, cst.Dict):
        for el in expr.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return False
            if el.key.evaluated_value == "num_workers" and not _is_zero(el.value):
                return False
        return True
    return False


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and int(expr.value) == 0
