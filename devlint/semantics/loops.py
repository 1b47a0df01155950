"""Loops that train, and what runs on every step of one.

- `trains(ctx, loop)`: a `for`/`while` whose body — itself, not only a loop
  nested in it — computes gradients or steps an optimizer: `loss.backward()`,
  `scaler.scale(loss).backward()`, `accelerator.backward(loss)`,
  `self.manual_backward(loss)`, `torch.autograd.backward(...)`,
  `optimizer.step()`, `scaler.step(optimizer)`.
- `training_loop(ctx)`: the innermost loop around the current node, inside
  the current function, that trains (loops nested in between run on every
  step too).
- `periodic(ctx, loop)`: is the current node, inside `loop`, under a condition
  that does not hold on every step — `if step % 100 == 0:`, `if i == 0:`,
  `if verbose:`, `if torch.isnan(loss):`, anything that compares, calls or
  indexes? Only tests made of plain flags (`if use_amp:`, `if scaler is not
  None:`, `if accelerator.is_main_process:`) are taken to hold on every step.
- `step_function(ctx)`: the function around the current node when it is one
  step of training — its own body calls `.backward()` or `optimizer.step()`,
  outside any loop — and the node is in no loop inside it. Called on every
  step of a loop (`for batch in loader: loss = self.train_step(batch)`), each
  of its lines runs on every step. `step_call(ctx, call)` names such a call
  for matching (`"self.train_step"`, `"train_step"`), `step_name(ctx, func)`
  names the function the same way.
- `uses_accelerator(ctx, loop)`: does the function around the loop, the
  module's own code, or (for a loop in a method) another method of the same
  class, put anything on a device that may be an accelerator (`.to(device)`,
  `.cuda()`, `device=...`) or hand its objects to a library that does
  (`accelerator.prepare(...)`, `fabric.setup(...)`)? A loop that trains on
  the CPU only waits for nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Optional, Union

import libcst as cst

from . import bindings, classes
from .names import dotted, string_key
from .values import Kind
from .tree import children, iter_subtree

if TYPE_CHECKING:
    from .context import Context

Loop = Union[cst.For, cst.While]

_BACKWARD_METHODS = frozenset({"backward", "manual_backward"})
# A receiver of `.step()` that is an optimizer by its name: `optimizer`, `opt`,
# `self.optim`, `d_optimizer`, `optimizer_g`, `optimizers[0]`.
_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimi[sz]er)s?(_|\d|$)", re.I)
# Flags in a condition that mean "only now and then": logging, evaluating, saving.
_CADENCE_WORDS = re.compile(
    r"log|print|verbose|debug|display|report|interval|every|freq|period|eval|valid|save|checkpoint|"
    r"sync_gradients|should|time|first|last|profil|visual|plot|monitor|"
    r"tensorboard|wandb|mlflow|neptune|comet|writer",
    re.I,
)

_STOP = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


def trains(ctx: "Context", loop: Loop) -> bool:
    cache: dict[int, bool] = ctx.__dict__.setdefault("_loops_trains", {})
    key = id(loop)
    if key not in cache:
        cache[key] = _body_trains(ctx, loop.body)
    return cache[key]


def training_loop(ctx: "Context") -> Optional[Loop]:
    """The innermost loop around the current node (in its function) that trains,
    with the node in the loop's body (not its `else:`, iterable or test)."""
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        node = stack[i]
        if isinstance(node, _STOP):
            return None
        if isinstance(node, (cst.For, cst.While)) and stack[i + 1] is node.body and trains(ctx, node):
            return node
    return None


def step_function(ctx: "Context") -> Optional[cst.FunctionDef]:
    """The function around the current node, if it trains on its own (outside
    loops) and the node is in its body, in no loop or nested scope inside it."""
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        node = stack[i]
        if isinstance(node, (cst.For, cst.While, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(node, cst.FunctionDef):
            if stack[i + 1] is not node.body:
                return None  # a default value or a decorator
            return node if trains_on_its_own(ctx, node) else None
    return None


def trains_on_its_own(ctx: "Context", func: cst.FunctionDef) -> bool:
    """Does `func` call `.backward()` or `optimizer.step()` outside its loops (a step function)?"""
    cache: dict[int, bool] = ctx.__dict__.setdefault("_loops_step_functions", {})
    if id(func) not in cache:
        cache[id(func)] = _body_trains(ctx, func.body)
    return cache[id(func)]


def step_name(ctx: "Context", func: cst.FunctionDef) -> str:
    """How a call inside the same file reaches `func`: `self.<name>` for a
    method of the current class, the plain name otherwise."""
    cls = ctx.current_class()
    if cls is not None and any(s is func for s in cls.node.body.body):
        return f"{cls.name}.self.{func.name.value}"
    return func.name.value


def step_call(ctx: "Context", call: cst.Call) -> Optional[tuple[str, Loop]]:
    """A call of a function of this file (`self.train_step(batch)`,
    `train_one_batch(...)`, `trainer.update(batch)` on an instance of a class of
    this file) on every step of a loop, with that loop; named as `step_name`
    names functions."""
    func = call.func
    if isinstance(func, cst.Name):
        name = func.value
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        cls = ctx.current_class()
        if cls is None:
            return None
        name = f"{cls.name}.self.{func.attr.value}"
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        # `trainer.update(batch)` after `trainer = Trainer(model)`, a class of this file
        owner = method_owner(ctx, func)
        if owner is None:
            return None
        name = f"{owner}.self.{func.attr.value}"
    else:
        return None
    if name.rsplit(".", 1)[-1] not in defined_function_names(ctx):
        return None  # not a function of this file (cheap: most calls are not)
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        node = stack[i]
        if isinstance(node, _STOP):
            return None
        if isinstance(node, (cst.For, cst.While)) and stack[i + 1] is node.body:
            return None if periodic(ctx, node) else (name, node)
    return None


def method_owner(ctx: "Context", func: cst.Attribute) -> Optional[str]:
    """The class of this file whose method `obj.method` is, `obj` being certainly
    an instance of it (`trainer = Trainer(model)`). Cheap first: most method
    names are not defined in the file."""
    if not isinstance(func.value, cst.Name) or func.attr.value not in defined_function_names(ctx):
        return None
    return instance_class(ctx, func.value)


def instance_class(ctx: "Context", name: cst.Name) -> Optional[str]:
    """The class of this file that `name` is certainly an instance of (`Trainer(...)`)."""
    source = bindings.certain_source(ctx, name)
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in ctx.classes:
        return source.func.value
    return None


_DEF = re.compile(r"\bdef\s+(\w+)\s*\(")


def defined_function_names(ctx: "Context") -> frozenset[str]:
    """The names the file's text defines functions under, read once per file."""
    names = ctx.memo.get("defined-function-names")
    if names is None:
        names = ctx.memo["defined-function-names"] = frozenset(_DEF.findall(ctx.source))
    return names  # type: ignore[return-value]


def periodic(
    ctx: "Context",
    loop: Union[Loop, cst.FunctionDef],
    does_it_too: Optional[Callable[[cst.CSTNode], bool]] = None,
) -> bool:
    """Is the current node under a condition, inside `loop` (or a step
    function), that may skip steps? Not the first branch of a conditional
    expression or an `if` whose other branch `does_it_too` (`a.item() if c
    else b.item()`: either way, a read on every step)."""
    stack = ctx.stack
    start = next(i for i, n in enumerate(stack) if n is loop)
    inner: set[str] = set()  # the targets of loops inside `loop` around the node
    for i in range(start + 1, len(stack) - 1):
        node, child = stack[i], stack[i + 1]
        if type(node) is cst.For and child is node.body:
            inner |= {n.value for n in iter_subtree(node.target) if type(n) is cst.Name}  # type: ignore[attr-defined]
        if isinstance(node, cst.If) and inner and _picks_items(ctx, node.test, inner):
            continue  # `for name, p in model.named_parameters(): if "weight" in name:` some, every step
        if isinstance(node, cst.If) and child is not node.test and not _every_step(ctx, node.test):
            # `if split == "min": total += loss.item() else: total -= loss.item()`:
            # either way a read, on every step; the first branch's stands for both.
            both = (
                child is node.body and type(node.orelse) is cst.Else and does_it_too is not None
                and any(does_it_too(s) for s in _plain_statements(node.orelse.body))  # type: ignore[union-attr]
            )
            if not both and not _selects_how_to_train(ctx, node.test, child):
                return True
        if isinstance(node, cst.IfExp) and child is not node.test and not _every_step(ctx, node.test):
            # The read in the first branch stands for both: one of them runs.
            if child is not node.body or does_it_too is None or not does_it_too(node.orelse):
                return True
        if isinstance(node, cst.BooleanOperation) and child is node.right and not _every_step(ctx, node.left):
            return True
        if isinstance(node, cst.Else) and i > 0 and isinstance(stack[i - 1], cst.If):
            if not _every_step(ctx, stack[i - 1].test) and not _selects_how_to_train(ctx, stack[i - 1].test, node):
                return True
    return False


def _picks_items(ctx: "Context", test: cst.BaseExpression, inner: set[str]) -> bool:
    """A test of an inner loop's items only (`"weight" in name`,
    `isinstance(m, nn.Conv2d)`): it picks which items, on every step alike."""
    names = set()
    for node in iter_subtree(test, prune=lambda n: type(n) is cst.Attribute):
        if type(node) is cst.Attribute:
            node = node.value  # type: ignore[attr-defined]
            while type(node) is cst.Attribute:
                node = node.value  # type: ignore[attr-defined]
        if type(node) is cst.Name and node.value not in _TYPE_CHECKS and ctx.qualify(node) is None:  # type: ignore[attr-defined]
            names.add(node.value)  # type: ignore[attr-defined]
    return bool(names) and names <= inner


def _plain_statements(block: cst.BaseSuite) -> list[cst.CSTNode]:
    """The simple statements right in a block (not under a nested `if` or loop)."""
    if isinstance(block, cst.IndentedBlock):
        return [s for s in block.body if isinstance(s, cst.SimpleStatementLine)]
    return [block]


def _selects_how_to_train(ctx: "Context", test: cst.BaseExpression, branch: cst.CSTNode) -> bool:
    """`if training_mode == "sacn": ... loss.backward()`: a branch that
    back-propagates itself runs on every step it trains, whatever picks it,
    unless the test is a cadence (`i % 10 == 0`, `log_now`)."""
    for node in iter_subtree(test):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
            return False
        if isinstance(node, cst.Call) and (dotted(node.func) or "").rsplit(".", 1)[-1] in _MODULO_FUNCTIONS:
            return False  # `np.mod(critic, 5) == 0`: every fifth step (a WGAN's generator update)
        if isinstance(node, (cst.Name, cst.Attribute)) and _CADENCE_WORDS.search(dotted(node) or ""):
            return False
    return _calls_in_body(ctx, branch, _backpropagates)


_MODULO_FUNCTIONS = frozenset({"mod", "fmod", "remainder", "divmod"})
_TYPE_CHECKS = frozenset({"isinstance", "hasattr", "callable", "is_tensor"})


def _backpropagates(ctx: "Context", call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value in _BACKWARD_METHODS
    return ctx.qualify(func) == "torch.autograd.backward"


def _every_step(ctx: "Context", test: cst.BaseExpression) -> bool:
    """A condition made of plain flags, which holds (or not) on every step alike."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _every_step(ctx, test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _every_step(ctx, test.left) and _every_step(ctx, test.right)
    if main_process(test):
        return True
    if isinstance(test, cst.Comparison):
        # `scaler is not None`
        return all(
            isinstance(c.operator, (cst.Is, cst.IsNot)) and isinstance(c.comparator, cst.Name)
            and c.comparator.value == "None"
            for c in test.comparisons
        ) and _every_step(ctx, test.left)
    if isinstance(test, (cst.Name, cst.Attribute)):
        name = dotted(test)
        if name is None or _CADENCE_WORDS.search(name):
            return False
        return not ctx.value_of(test).is_tensor
    if isinstance(test, cst.Call):
        # `x.item() if torch.is_tensor(x) else x`: a type check picks what to read, not when
        return (dotted(test.func) or "").rsplit(".", 1)[-1] in _TYPE_CHECKS
    if isinstance(test, cst.Subscript) and isinstance(test.value, (cst.Name, cst.Attribute)):
        # `config["kd"]`: a run-wide option of a config dict (Ray Tune, W&B sweeps)
        key = string_key(test)
        return key is not None and not _CADENCE_WORDS.search(key) and _every_step(ctx, test.value)
    return False



# `is_main_process()`, `dist.get_rank()`, `args.local_rank`: which process this is.
_PROCESS_WORDS = re.compile(r"(^|_)(rank|local_rank|global_rank|main_process|local_main_process|master|rank_zero)$", re.I)


def main_process(test: cst.BaseExpression, strict: bool = False) -> bool:
    """`rank == 0`, `args.local_rank in [-1, 0]`, `dist.get_rank() == 0`,
    `is_main_process()`: it picks a process, and holds on every one of its
    steps (the main process logs every step). `strict`: the main one only,
    not `local_rank == -1` (which asks whether the run is distributed)."""
    if isinstance(test, cst.Call):
        name = dotted(test.func)
        return name is not None and not test.args and bool(_PROCESS_WORDS.search(name.rsplit(".", 1)[-1].removeprefix("is_")))
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, comparator = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.Call) and not left.args:
        left = left.func  # `dist.get_rank() == 0`
    name = dotted(left)
    if name is None or not _PROCESS_WORDS.search(name.rsplit(".", 1)[-1].removeprefix("get_")):
        return False
    if strict:
        values = [e.value for e in comparator.elements] if isinstance(comparator, (cst.List, cst.Tuple, cst.Set)) else [comparator]
        ints = [_int_value(v) for v in values]
        return 0 in ints and all(i in (0, -1) for i in ints)
    if isinstance(comparator, (cst.List, cst.Tuple, cst.Set)):
        return all(_small_int(e.value) for e in comparator.elements)
    return _small_int(comparator)


def _int_value(expr: cst.BaseExpression) -> Optional[int]:
    """`0`, `-1`: the literal's value."""
    sign = 1
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr, sign = expr.expression, -1
    return sign * int(expr.value) if isinstance(expr, cst.Integer) and expr.value.isdigit() else None


def _small_int(expr: cst.BaseExpression) -> bool:
    """`0`, `-1`: a rank literal."""
    return _int_value(expr) is not None


def _body_trains(ctx: "Context", body: cst.BaseSuite) -> bool:
    return _calls_in_body(ctx, body, _trains_call)


def _calls_in_body(ctx: "Context", body: cst.CSTNode, test: Callable[["Context", cst.Call], bool]) -> bool:
    """Does a call in `body` (not in a nested loop or scope) pass `test`?"""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (*_STOP, cst.For, cst.While)):
            continue
        if isinstance(node, cst.Call) and test(ctx, node):
            return True
        stack.extend(children(node))
    return False


def _trains_call(ctx: "Context", call: cst.Call) -> bool:
    if _backpropagates(ctx, call):
        return True
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    method = func.attr.value
    if method == "step":
        if is_optimizer(ctx, func.value):
            return True
        # `scaler.step(optimizer)`
        return bool(call.args) and call.args[0].keyword is None and is_optimizer(ctx, call.args[0].value)
    return False


def backward_targets(ctx: "Context", loop: Union[Loop, cst.FunctionDef]) -> frozenset[str]:
    """The names the loop's body differentiates (dotted): `loss` in `loss.backward()`,
    `outputs.loss` in `(outputs.loss / n).backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)`,
    `self.manual_backward(loss)`, `torch.autograd.backward(loss)`. Whatever
    its source (`outputs.loss` of a model loaded from a hub), it is a tensor."""
    cache: dict[int, frozenset[str]] = ctx.__dict__.setdefault("_loops_backward", {})
    key = id(loop)
    if key not in cache:
        names: set[str] = set()
        stack: list[cst.CSTNode] = [loop.body]
        while stack:
            node = stack.pop()
            if isinstance(node, _STOP):
                continue
            if isinstance(node, cst.Call):
                target = _differentiated(ctx, node)
                name = dotted(tensor_root(target)) if target is not None else None
                if name is not None:
                    names.add(name)
            stack.extend(children(node))
        cache[key] = frozenset(names)
    return cache[key]


def tensor_root(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The data an expression computes from: `outputs.loss` in
    `outputs.loss.mean() / accumulation_steps`, `loss` in `loss.detach().cpu()`."""
    from . import torchapi

    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value not in torchapi.TENSOR_RETURNING_METHODS:
                return expr
            expr = expr.func.value
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Divide, cst.Multiply)):
            if not isinstance(expr.right, (cst.Name, cst.Integer, cst.Float, cst.Attribute)):
                return expr
            expr = expr.left  # `loss / accumulation_steps`
        elif isinstance(expr, cst.Attribute) and expr.attr.value == "data":
            expr = expr.value
        else:
            return expr


def _differentiated(ctx: "Context", call: cst.Call) -> Optional[cst.BaseExpression]:
    func = call.func
    first = call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None
    if ctx.qualify(func) == "torch.autograd.backward" or (
        isinstance(func, cst.Attribute) and func.attr.value in ("backward", "manual_backward") and _is_trainer(func.value)
    ):
        return first  # accelerator.backward(loss), self.manual_backward(loss)
    if isinstance(func, cst.Attribute) and func.attr.value == "backward" and _tensor_backward_args(call):
        receiver = func.value
        # scaler.scale(loss).backward()
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and receiver.func.attr.value == "scale":
            inner = receiver.args[0].value if len(receiver.args) == 1 and receiver.args[0].keyword is None else None
            return inner
        return receiver
    return None


# `Tensor.backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)`.
_TENSOR_BACKWARD_KEYWORDS = frozenset({"gradient", "retain_graph", "create_graph", "inputs"})


def _tensor_backward_args(call: cst.Call) -> bool:
    """`loss.backward()`, `loss.backward(retain_graph=True)`, `errD.backward(mone)`:
    Tensor.backward's own arguments (a positional one is the gradient). Not
    `helper.backward(loss)`, a wrapper handed the loss (DeepSpeed's
    `model_engine.backward(loss)`): its receiver is no tensor."""
    for arg in call.args:
        if arg.star:
            return False
        if arg.keyword is not None and arg.keyword.value not in _TENSOR_BACKWARD_KEYWORDS:
            return False
    positional = [a for a in call.args if a.keyword is None]
    if not positional:
        return True
    gradient = dotted(positional[0].value) if len(positional) == 1 else None
    return gradient is not None and "loss" not in gradient.lower()


def _is_trainer(expr: cst.BaseExpression) -> bool:
    """`self`, `accelerator`, `fabric`, `self.accelerator`: what takes the loss as an argument."""
    name = dotted(expr)
    return name is not None and name.rsplit(".", 1)[-1] in ("self", "accelerator", "fabric", "engine", "trainer")


def is_optimizer(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """An optimizer, by what built it or by its name."""
    if ctx.value_of(expr).kind is Kind.OPTIMIZER:
        return True
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    name = dotted(expr)
    return name is not None and bool(_OPTIMIZER_NAME.search(name.rsplit(".", 1)[-1]))


# Calls that hand models and data to a library that places them on the accelerator.
_PLACING_LIBRARY_CALLS = re.compile(r"(^|\.)(prepare|prepare_model|setup|setup_dataloaders)$")


def uses_accelerator(ctx: "Context", loop: Union[Loop, cst.FunctionDef]) -> bool:
    scope = _scope_of(ctx, loop)
    if scope is ctx.stack[0]:
        # A script's loop: only what the script placed before it, or places in
        # it, counts (a model moved to the GPU after a CPU warm-up loop waits for nothing).
        return _module_places_by(ctx, ctx.stack[1])
    if _scope_places(ctx, scope) or any(_module_flags(ctx)):
        return True
    # A method's loop trains what the object set up: `self.model.cuda()` in
    # `__init__`, the batch moved in a `self._step(x)` helper.
    # Only what the object keeps counts there (`self.model`, `self.device`):
    # a helper's own `device` parameter says nothing about this loop.
    info = ctx.current_class()
    return info is not None and any(
        method is not scope and _scope_places(ctx, method, of_self=True) for method in classes.methods(info).values()
    )


def _scope_places(ctx: "Context", scope: cst.CSTNode, of_self: bool = False) -> bool:
    """Does the code of `scope` itself (not the functions it defines) place anything on an accelerator?
    `of_self`: only the object's own things, or anything onto the object's device."""
    cache: dict[tuple[int, bool], bool] = ctx.__dict__.setdefault("_loops_accelerator", {})
    key = (id(scope), of_self)
    if key not in cache:
        cache[key] = any(
            isinstance(node, cst.Call) and (not of_self or _of_self(node)) and _places_on_accelerator(ctx, node)
            for node in iter_subtree(scope, lambda n: isinstance(n, _STOP) and n is not scope)
        )
    return cache[key]


def _module_places_by(ctx: "Context", statement: cst.CSTNode) -> bool:
    """Does the module's own code place anything on an accelerator up to and in
    `statement` (one of its top-level statements)?"""
    for stmt, places in zip(ctx.stack[0].body, _module_flags(ctx)):  # type: ignore[attr-defined]
        if places:
            return True
        if stmt is statement:
            return False
    return False


def _module_flags(ctx: "Context") -> list[bool]:
    """For each top-level statement: does its own code (not the functions it
    defines) place anything on an accelerator? One walk of the module per file."""
    flags: Optional[list[bool]] = ctx.memo.get("module-places-by-statement")  # type: ignore[assignment]
    if flags is None:
        flags = [
            any(
                isinstance(node, cst.Call) and _places_on_accelerator(ctx, node)
                for node in iter_subtree(stmt, lambda n: isinstance(n, _STOP))
            )
            for stmt in ctx.stack[0].body  # type: ignore[attr-defined]
        ]
        ctx.memo["module-places-by-statement"] = flags
    return flags


_ACCELERATOR_WORDS = re.compile(r"cuda|gpu|mps|xpu|accelerat|device_map|nccl", re.I)


def file_may_use_accelerator(ctx: "Context") -> bool:
    """Could this file's code run anything on an accelerator? No, only when its
    text never names one (`cuda`, `gpu`, `mps`, `accelerator`...), no call
    anywhere in it places data on a device that may be one (`.to(device)`),
    and no function takes a device from its caller and hands it on (`def
    __init__(self, device): super().__init__(device)`): it may be a GPU."""
    memo = ctx.memo.get("file-may-use-accelerator")
    if memo is None:
        module = ctx.stack[0] if ctx.stack else None
        memo = bool(_ACCELERATOR_WORDS.search(ctx.source)) or module is None or any(
            (type(node) is cst.Call and _places_on_accelerator(ctx, node))
            or (type(node) is cst.FunctionDef and _hands_on_a_device(node))  # type: ignore[arg-type]
            for node in iter_subtree(module)
        )
        ctx.memo["file-may-use-accelerator"] = memo
    return bool(memo)


# Calls that only show a value: a device handed to them places nothing.
_SHOWS = frozenset("print str repr format info debug warning write add_text log".split())


def _hands_on_a_device(func: cst.FunctionDef) -> bool:
    """Does `func` take a device from its caller and hand it to another call
    (`def __init__(self, device): super().__init__(device)`), not only show
    it (`print(f"on {device}")`)?"""
    params = {
        p.name.value for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)
        if p.name.value.endswith("device")
    }
    if not params:
        return False
    for node in iter_subtree(func.body):
        if type(node) is not cst.Call:
            continue
        callee = node.func.attr.value if type(node.func) is cst.Attribute else dotted(node.func)  # type: ignore[attr-defined]
        if callee in _SHOWS:
            continue
        if any(type(a.value) is cst.Name and a.value.value in params for a in node.args):  # type: ignore[attr-defined]
            return True
    return False


def _of_self(call: cst.Call) -> bool:
    """`self.model.cuda()`, `self.net.to(device)`, `x.to(self.device)`, `x.cuda()`."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return any((dotted(a.value) or "").startswith("self.") for a in call.args)
    if func.attr.value == "cuda":
        return True
    root = func.value
    while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
        root = root.func if isinstance(root, cst.Call) else root.value
    if isinstance(root, cst.Name) and root.value == "self":
        return True
    return any((dotted(a.value) or "").startswith("self.") for a in call.args)


def _scope_of(ctx: "Context", loop: Union[Loop, cst.FunctionDef]) -> cst.CSTNode:
    """The function around `loop` (or the module); a step function is its own."""
    if isinstance(loop, cst.FunctionDef):
        return loop
    stack = ctx.stack
    index = next(i for i, n in enumerate(stack) if n is loop)
    for node in reversed(stack[:index]):
        if isinstance(node, cst.FunctionDef):
            return node
    return stack[0]


def _may_be_assigned_accelerator(ctx: "Context", name: cst.Name, depth: int = 0) -> bool:
    """`name` holds the CPU where the walk is, but may another of its
    assignments give an accelerator? Directly (`device = "cuda"` in the other
    branch), or through the name it was made from: `device_str =
    conf["device"]`, then `if not torch.cuda.is_available(): device_str =
    "cpu"`, then `device = torch.device(device_str)` — the configured device is
    chosen at run time, so it may be a GPU."""
    from . import residence

    for expr in bindings.assigned_expressions(ctx, name):
        value = ctx.value_of(expr)
        if residence.may_be_accelerator(value.device):
            return True
        source = _device_source(ctx, expr)
        if source is not None:
            if depth < 3 and _may_be_assigned_accelerator(ctx, source, depth + 1):
                return True
        elif depth > 0 and value.kind is Kind.UNKNOWN and _chosen_at_run_time(expr):
            return True
    return False


def _device_source(ctx: "Context", expr: cst.BaseExpression) -> Optional[cst.Name]:
    """The name a device is made from: `other`, `torch.device(other)`, `str(other)`."""
    if isinstance(expr, cst.Name):
        return None if expr.value in ("None", "True", "False") else expr
    if isinstance(expr, cst.Call) and len(expr.args) == 1 and expr.args[0].keyword is None:
        made = ctx.qualify(expr.func) == "torch.device" or dotted(expr.func) == "str"
        if made and isinstance(expr.args[0].value, cst.Name):
            return _device_source(ctx, expr.args[0].value)
    return None


def _chosen_at_run_time(expr: cst.BaseExpression) -> bool:
    """`conf["device"]`, `args.device`, `get_device()`, `os.environ[...]`: a
    value read from configuration, not a literal of the code."""
    return isinstance(expr, (cst.Subscript, cst.Attribute, cst.Call))


def _places_on_accelerator(ctx: "Context", call: cst.Call) -> bool:
    from . import residence
    from .placements import placement  # placements imports the context

    found = placement(ctx, call)
    if found is not None and found.how in ("method", "device-kwarg"):
        if found.device is not None:
            if residence.may_be_accelerator(found.device):
                return True
            # `device` holds the CPU here, but another branch may assign the GPU.
            return isinstance(found.target, cst.Name) and _may_be_assigned_accelerator(ctx, found.target)
        return residence.target_may_be_accelerator(ctx, found.target)
    name = dotted(call.func)
    return name is not None and "." in name and bool(_PLACING_LIBRARY_CALLS.search(name)) and (
        "accelerator" in name or "fabric" in name
    )
