from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Report, Rule
from ..semantics.context import Context
from ..semantics import bindings, guards, helper_reads, loops, residence
from ..semantics.names import dotted
from ..semantics.tree import iter_subtree
from ..semantics.values import Kind

# Tensor methods that copy device data to the host, and so wait for the GPU;
# builtins that convert one value (`float(t)`): one table with helper_reads.
SYNC_METHODS = helper_reads.SYNC_METHODS
_CONVERSIONS = helper_reads.CONVERSIONS
# Builtins that read a tensor's value on the host.
SYNC_BUILTINS = _CONVERSIONS | {"print"}
# Kinds that are certainly no tensor data.
_NOT_DATA = frozenset(
    {Kind.MODULE, Kind.OPTIMIZER, Kind.DEVICE, Kind.DEVICE_STRING, Kind.AVAILABILITY, Kind.DTYPE, Kind.OBJECT}
)


class HostSyncInLoop(Rule):
    """
    ## What it does
    Flags `.item()`, `.cpu()` (also spelled `.to("cpu")`), `.numpy()`, `.tolist()`, `float(t)`, `int(t)`,
    `bool(t)`, `print(t)`, `f"{t}"`, `"{}".format(t)` and `"%f" % t` of device tensors on every step of a training loop — a `for` or
    `while` whose body calls `.backward()` or `optimizer.step()` — when they
    are not under a condition such as `if step % 100 == 0:`.

    ## Why is this bad?
    CUDA runs asynchronously: the Python loop queues kernels and moves on. Reading a
    value on the host waits until the GPU has finished everything queued
    so far, so the next step cannot be queued while this one runs and the GPU
    idles between steps. Once per step, that stall is paid on every step. With
    `torch.cuda.set_sync_debug_mode("error")` the loop raises
    `RuntimeError: called a synchronizing CUDA operation`.

    Only flagged where the value is a tensor that may live on an accelerator
    (`.item()` of anything not known to be on the host; the others of a
    tensor or a module's output), where the code around the loop places
    anything on an accelerator (`.to(device)`, `.cuda()`,
    `accelerator.prepare(...)`; for a loop in a method, any method of its
    class counts, such as `self.model.cuda()` in `__init__`: a loop that
    trains on the CPU waits for nothing), in the loop's body (loops nested in it included), not in a check (`assert ...`,
    `self.assertEqual(...)`), not in the test of an `if` that leaves the loop
    (`if loss.item() < tol: break` must read the value now, as must
    `value = loss.item()` followed by `if math.isnan(value): raise ...`) or in a
    branch that leaves it (`if diverged: print(loss.item()); break` runs once), and not under a
    condition that may skip steps:
    a comparison, a `%`, a call, or a flag named for logging (`if verbose:`,
    `if args.with_tensorboard:`, `if writer is not None:`).
    A flag that holds on every step alike (`if use_amp:`, `if config["kd"]:`),
    or a type check (`x.item() if torch.is_tensor(x) else x`), is no such
    condition, nor is one whose other branch reads as well
    (`if split == "min": a = loss.item() else: b = loss.item()`), and neither is picking the main process (`if rank == 0:`,
    `if args.local_rank in [-1, 0]:`, `if is_main_process():`): that process
    reads on every one of its steps; nor is a branch that back-propagates
    itself (`if mode == "sacn": ... loss.backward()`): it picks how to train,
    not how often (unless its test is a cadence: `np.mod(step, 5) == 0`). What the loop calls `.backward()` on is
    a tensor, whatever made it (a helper, a hub model's `outputs.loss`), and
    what a callable of unknown class (a model passed in as a parameter)
    computes from device data is on the device: `.cpu()` and `.numpy()` of it
    are reads.

    A step function — one that trains on its own (`def train_step(...)`
    calling `loss.backward()` and `optimizer.step()`) — counts as the body of
    a training loop when the same file calls it on every step of a loop
    (`for batch in loader: self.train_step(batch)`); called once, or only
    under a condition, it does not. The other way round, a helper of the
    file that reads its argument on every call (`def accuracy(logits, y):
    return (logits.argmax(1) == y).float().mean().item()`) reads on every
    step when a training loop calls it with device data: the call is flagged,
    also for a method reached through an instance of a class of the file
    (`replay.add(x, y)` after `replay = ReplayBuffer(...)`, where `add` copies
    `x.cpu()`). So does a helper that reads each tensor of a list it is given (`for t in
    tensors: t.max().item()`) and one that passes its argument on to such a
    helper (`evaluate_batch(batch)` calling `accuracy(preds, labels)`).

    ## Example
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running_loss += loss.item()
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running_loss += loss.detach()
        if step % 100 == 0:
            print(running_loss.item() / (step + 1))
    ```

    ## Fix safety
    No fix: where to accumulate and how often to log is the author's choice.
    A performance rule: `--ignore DEV5` turns the family off.
    """

    code = "DEV501"
    name = "host-sync-in-loop"
    message = "{what} on every step of a training loop waits for the GPU (a host sync); keep the value on the device or read it every N steps"
    claim = Claim(
        backends=("cuda",),
        summary='with torch.cuda.set_sync_debug_mode("error"): RuntimeError: called a synchronizing CUDA operation',
        raises="RuntimeError",
        match=r"called a synchronizing CUDA operation",
    )
    # An f-string always has its `f` right before the opening quote (`rf"`, `f"""` too).
    # `"%f" % t` needs a `%` somewhere (the string and the operator may be lines apart).
    # `cpu` for `.cpu()` and for `.to("cpu")` / `.to(torch.device("cpu"))`.
    triggers = (
        ".item(", "cpu", ".numpy(", ".tolist(", "float(", "int(", "bool(", "print(", ".format(",
        'f"', "f'", 'F"', "F'", "%",
    )

    def __init__(self, ctx: Context, sink: list[Report]) -> None:
        super().__init__(ctx, sink)
        # Functions of this file called on every step of a loop (`loops.step_call`
        # names): does one such loop's function use an accelerator?
        self._called_per_step: dict[str, bool] = {}

    def visit_Call(self, node: cst.Call) -> None:
        per_step = loops.step_call(self.ctx, node)
        if per_step is not None:
            name, loop = per_step
            if not self._called_per_step.get(name):
                self._called_per_step[name] = loops.uses_accelerator(self.ctx, loop)
        what = self._sync(node) or self._helper_read(node)
        if what is not None:
            self._report_if_every_step(node, what)

    def _helper_read(self, call: cst.Call) -> Optional[str]:
        """`compute_metrics(logits, y)`, a function of this file that reads its
        argument on the host (`.item()`), called with device data in a training
        loop (or a step function): the read happens there on every step."""
        found = helper_reads.callee(self.ctx, call)  # cheap: most calls are not of this file
        if found is None:
            return None
        if loops.training_loop(self.ctx) is None and loops.step_function(self.ctx) is None:
            return None
        name, func = found
        if func in self.ctx.stack or loops.trains_on_its_own(self.ctx, func):
            return None  # recursion; a step function's reads are reported inside it
        reads = helper_reads.parameter_reads(self.ctx, func)
        if not reads:
            return None
        args = helper_reads.bind(call, func, method="." in name)
        for param, what in reads.items():
            if param.endswith("[]"):  # read element by element: `for t in tensors: t.item()`
                arg = args.get(param[:-2])
                if arg is not None and self._holds_device_data(arg):
                    return _located(what, name)
                continue
            arg = args.get(param)
            if arg is None or self._is_sync_call(arg) or self._is_host_value(arg) or _is_constant(arg):
                continue
            # As inline: `.item()` of anything not known to be elsewhere, the others of device data.
            if self._may_be_device_data(arg, lenient=what.startswith("`.item()`")) or self._differentiated(arg):
                return _located(what, name)
        return None

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        # `f"loss {loss:.4f}"` (in a print, a progress bar, a log call) formats
        # the tensor: `Tensor.__format__` reads its value on the host.
        expr = node.expression
        if self._is_sync_call(expr) or not self._may_be_device_data(expr, lenient=False):
            return
        self._report_if_every_step(node, "`f\"{tensor}\"`")

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        # `"loss %.4f" % loss`, `"%d %f" % (step, loss)`: `%f` reads the value on the host.
        if not isinstance(node.operator, cst.Modulo) or not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if any(not self._is_sync_call(v) and self._may_be_device_data(v, lenient=False) for v in values):
            self._report_if_every_step(node, '`"%f" % tensor`')

    def _report_if_every_step(self, node: cst.CSTNode, what: str) -> None:
        """Report a host read that runs on every step of a training loop that uses an
        accelerator, and is no check. In a step function (`def train_step(...)`,
        which trains on its own), only once the file is known to call it on every
        step of a loop."""
        message = self.message.format(what=what)
        loop = loops.training_loop(self.ctx)
        if loop is not None:
            if not loops.periodic(self.ctx, loop, self._reads) and loops.uses_accelerator(self.ctx, loop):
                if not self._checks_a_value(loop):
                    self.report(node, message)
            return
        step = loops.step_function(self.ctx)
        if step is None or loops.periodic(self.ctx, step, self._reads) or self._checks_a_value(step):
            return
        name = loops.step_name(self.ctx, step)
        places = loops.uses_accelerator(self.ctx, step)
        called = self._called_per_step

        def called_on_every_step() -> bool:
            return name in called and (places or called[name])

        self.report(node, message, condition=called_on_every_step)

    def _reads(self, branch: cst.CSTNode) -> bool:
        """Does this branch of a conditional (expression or `else:` block) read device data too?"""
        return any(type(n) is cst.Call and self._sync(n) is not None for n in iter_subtree(branch))

    def _checks_a_value(self, loop: cst.CSTNode) -> bool:
        """Inside `assert ...` or `self.assertEqual(...)`/`assert_close(...)`: a
        test reads the value on purpose, to check it. Or in the test of an `if`
        that leaves the loop (`if token.item() == EOS: break`): the value
        decides whether to go on, so it must be read now. Or in a branch that
        leaves the loop (`if bad: print(loss.item()); break`): it runs once."""
        stack = self.ctx.stack
        # Loop bodies between `loop` and the node: a `break` there stays inside them.
        start = next((k for k, n in enumerate(stack) if n is loop), len(stack))
        inner = [k for k in range(start + 1, len(stack) - 1) if type(stack[k]) in (cst.For, cst.While)
                 and stack[k + 1] is stack[k].body]  # type: ignore[attr-defined]
        for i in range(len(stack) - 1, -1, -1):
            node = stack[i]
            if node is loop:
                return False
            if isinstance(node, cst.If) and i + 1 < len(stack) and stack[i + 1] is node.test:
                if guards.exits(node.body):
                    return True
            if type(node) is cst.SimpleStatementLine and _read_for_an_exit_test(stack, i):
                return True
            if isinstance(node, (cst.If, cst.Else)) and i + 1 < len(stack) and stack[i + 1] is node.body:
                leaves = _leaves(node.body)
                if leaves == "all" or (leaves == "loop" and not any(k < i for k in inner)):
                    return True
            if isinstance(node, cst.Assert):
                return True
            if isinstance(node, cst.Call):
                name = dotted(node.func) or ""
                if name.rsplit(".", 1)[-1].lower().startswith("assert"):
                    return True
        return False

    def _sync(self, call: cst.Call) -> Optional[str]:
        """What host read this call is, if it reads device data."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in SYNC_METHODS:
            method = func.attr.value
            receiver = func.value
            if self._is_sync_call(receiver) or self.ctx.defines_own(receiver, method):
                return None  # `x.cpu().numpy()`: the `.cpu()` is the sync
            if method == "item" and call.args:
                return None
            if method == "item" and self._may_be_device_data(receiver, lenient=True):
                return "`.item()`"
            if method != "item" and self._may_be_device_data(receiver, lenient=False):
                return f"`.{method}()`"
            if method in _TENSOR_ONLY_READS and _computed_on_device(self.ctx, receiver):
                return f"`.{method}()`"
            return None
        if isinstance(func, cst.Attribute) and func.attr.value == "to" and self._to_the_host(call):
            # `loss.to("cpu")`: the same copy to the host as `loss.cpu()`.
            receiver = func.value
            if self._is_sync_call(receiver) or self.ctx.defines_own(receiver, "to"):
                return None
            if self._may_be_device_data(receiver, lenient=False) or _computed_on_device(self.ctx, receiver):
                return '`.to("cpu")`'
            return None
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
        ):
            # `"{:.4f}".format(loss)`: `Tensor.__format__` reads the value, like an f-string.
            if any(not a.star and not self._is_sync_call(a.value) and self._may_be_device_data(a.value, lenient=False) for a in call.args):
                return '`"{}".format(tensor)`'
            return None
        if isinstance(func, cst.Name) and func.value in SYNC_BUILTINS and self.ctx.lookup(func.value) is None:
            args = [a.value for a in call.args if a.keyword is None and not a.star]
            if func.value in _CONVERSIONS and len(args) != 1:
                return None
            if any(not self._is_sync_call(a) and self._may_be_device_data(a, lenient=False) for a in args):
                return f"`{func.value}(tensor)`"
        return None

    def _to_the_host(self, call: cst.Call) -> bool:
        """`.to("cpu")`, `.to(torch.device("cpu"))`, `.to(device="cpu")`: a device
        written as the CPU (not a name that may be chosen at run time)."""
        target = residence.to_target(call)
        if target is None:
            return False
        device = self.ctx.device_of(target)
        return device is not None and device.type == "cpu" and device.literal

    def _is_sync_call(self, expr: cst.BaseExpression) -> bool:
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value in SYNC_METHODS
        )

    def _may_be_device_data(self, expr: cst.BaseExpression, lenient: bool) -> bool:
        """Tensor data that may be on an accelerator. `lenient`: anything not known
        to be elsewhere (`.item()` exists on tensors, and hardly anything else)."""
        value = self.ctx.value_of(expr)
        if value.kind in _NOT_DATA or residence.numpy_value(self.ctx, expr):
            return False
        device = residence.data_device(self.ctx, expr)
        if device is not None:
            return residence.may_be_accelerator(device)
        return lenient or self._tensor_like(expr) or self._differentiated(expr)

    def _holds_device_data(self, expr: cst.BaseExpression) -> bool:
        """`[out, loss]`, `(logits, labels)` with device data in it, or device
        data itself (a model's outputs): what a helper iterates element by element."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return any(
                self._may_be_device_data(e.value, lenient=False) or self._differentiated(e.value)
                for e in expr.elements
                if not isinstance(e, cst.StarredElement)
            )
        return self._may_be_device_data(expr, lenient=False) or _computed_on_device(self.ctx, expr)

    def _differentiated(self, expr: cst.BaseExpression) -> bool:
        """`loss`, `loss.data` or `loss.detach()`, where the loop calls `loss.backward()`:
        a tensor, whatever it came from. Not once the loop rebinds the name to
        a host value (`loss = loss.item()`)."""
        expr = loops.tensor_root(expr)  # `loss.detach().cpu()`, `loss.data`, `outputs.loss.mean()`
        while isinstance(expr, cst.Subscript):  # `errD.data[0]`: an element is a tensor too
            expr = loops.tensor_root(expr.value)
        name = dotted(expr)
        if name is None or self.ctx.value_of(expr).kind is not Kind.UNKNOWN:
            return False
        loop = loops.training_loop(self.ctx) or loops.step_function(self.ctx)
        if loop is None or name not in loops.backward_targets(self.ctx, loop):
            return False
        if not isinstance(expr, cst.Name):
            return True  # `outputs.loss`
        # `loss = 0`, then `loss += criterion(...)`: the number only starts the sum.
        accumulated = any(
            type(n) is cst.AugAssign and type(n.target) is cst.Name and n.target.value == name  # type: ignore[attr-defined]
            for n in iter_subtree(loop)
        )
        return not any(
            self._is_host_value(v) and not (accumulated and isinstance(v, (cst.Integer, cst.Float)))
            for v in bindings.assigned_expressions(self.ctx, expr)
        )

    def _is_host_value(self, expr: cst.BaseExpression) -> bool:
        """`x.item()`, `float(x)`, `x.cpu().numpy()`, a literal: a value on the host."""
        if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString, cst.FormattedString)):
            return True
        if not isinstance(expr, cst.Call):
            return False
        if self._is_sync_call(expr):
            return True
        return isinstance(expr.func, cst.Name) and expr.func.value in ("float", "int", "round", "sum", "len")

    def _tensor_like(self, expr: cst.BaseExpression) -> bool:
        """A tensor or module output, or a tensor method's result, an item or a
        data attribute of one (`loss.detach()`, `out.logits[0]`)."""
        return any(
            self.ctx.value_of(e).kind in (Kind.TENSOR, Kind.MODULE_OUTPUT) for e in residence.data_chain(self.ctx, expr)
        )


# Reads that only a tensor has (numpy arrays have `.tolist()` and `.item()`):
# what they are called on is a tensor, whatever made it.
_TENSOR_ONLY_READS = frozenset({"cpu", "numpy"})
# Calls that never return device data computed from their arguments.
_HOST_CALLS = frozenset({"len", "float", "int", "bool", "str", "round", "sum", "list", "tuple", "dict", "print"})


def _computed_on_device(ctx: Context, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """A tensor that a model (or any callable not known to torch) computed from
    device data: `model(x).cpu()`, `preds = net(x); preds.detach().cpu()` with
    `x = x.to(device)`. Whatever `model` is (a parameter, an imported class),
    what it computes from device inputs is on the device."""
    known = residence.data_device(ctx, expr)  # `x.cuda()`, `x.to(device)`
    if known is not None:
        return residence.may_be_accelerator(known)
    if depth > 3:
        return False
    # `out[0].detach()`, `outputs.logits.argmax(-1)`: the same data; `x.cpu()` is
    # on the host and an unknown method is left to the call check below.
    *_, expr = residence.data_chain(ctx, expr, stop=SYNC_METHODS)
    if isinstance(expr, cst.Name):
        device = residence.data_device(ctx, expr)
        if device is not None:
            return residence.may_be_accelerator(device)
        source = bindings.certain_source(ctx, expr) or bindings.unpacked_source(ctx, expr)
        if source is not None:
            return _computed_on_device(ctx, source, depth + 1)
        # Bound in more than one place (`if use_gpu: x = x.cuda()`): any of them.
        return any(_computed_on_device(ctx, e, depth + 1) for e in bindings.assigned_expressions(ctx, expr))
    if isinstance(expr, cst.BinaryOperation):
        # `fake_score - real_score`, `2 * dist`: computed where the device operand is
        return any(_on_device_operand(ctx, side, depth) for side in (expr.left, expr.right))
    if not isinstance(expr, cst.Call):
        return False
    if ctx.qualify(expr.func) is not None:
        # `torch.dist(net(y), x)`: torch's functions compute where their inputs are.
        return any(_on_device_operand(ctx, e, depth) for e in residence.kept_inputs(ctx, expr))
    if isinstance(expr.func, cst.Name) and expr.func.value in _HOST_CALLS:
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SYNC_METHODS:
        return False
    return any(not arg.star and _on_device_operand(ctx, arg.value, depth) for arg in expr.args)


def _read_for_an_exit_test(stack: list[cst.CSTNode], i: int) -> bool:
    """`value = loss.item()` (the statement at `stack[i]`, the read its whole
    value) followed in the same block by `if math.isnan(value): raise ...`:
    the value decides whether to go on, as if read in the test itself."""
    if i < 1 or i + 2 >= len(stack) or type(stack[i - 1]) is not cst.IndentedBlock:
        return False
    assign = stack[i + 1]
    if type(assign) is not cst.Assign or stack[i + 2] is not assign.value or len(assign.targets) != 1:  # type: ignore[attr-defined]
        return False
    target = assign.targets[0].target  # type: ignore[attr-defined]
    if type(target) is not cst.Name:
        return False
    block = stack[i - 1].body  # type: ignore[attr-defined]
    later = block[next(k for k, s in enumerate(block) if s is stack[i]) + 1:]
    return any(
        type(s) is cst.If and guards.exits(s.body)  # type: ignore[attr-defined]
        and any(type(n) is cst.Name and n.value == target.value for n in iter_subtree(s.test))  # type: ignore[attr-defined]
        for s in later
    )


def _leaves(block: cst.BaseSuite) -> Optional[str]:
    """How this block ends the loop around it: "loop" (`break`: the innermost
    loop only), "all" (`return`, `raise`, an exit); None when it does not
    (`continue` ends only the step)."""
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = statements[-1] if statements else None
    if not isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) or not last.body:
        return None
    small = last.body[-1]
    if isinstance(small, cst.Break):
        return "loop"
    if isinstance(small, (cst.Return, cst.Raise)) or (isinstance(small, cst.Expr) and guards.exits(last)):
        return "all"
    return None


def _on_device_operand(ctx: Context, expr: cst.BaseExpression, depth: int) -> bool:
    device = residence.data_device(ctx, expr)
    return residence.may_be_accelerator(device) or (device is None and _computed_on_device(ctx, expr, depth + 1))


def _located(what: str, helper: str) -> str:
    """`.item()` in `accuracy()`; `.item()` in `accuracy()` via `evaluate_batch()`."""
    return f"{what} via `{helper}()`" if " in `" in what else f"{what} in `{helper}()`"


def _is_constant(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")
