"""Is this statement reached only when an accelerator is there?

A guard is anything that ties the code to accelerator availability: an `if` /
`while` / conditional expression / `and` whose test probes it, an earlier early
exit (`if not torch.cuda.is_available(): return`, `assert ...`), a skip
decorator, a `try` that catches the failure, or a function or class that is
CUDA-specific by its very name. Precision first: when a condition plausibly
means "is there an accelerator", it counts as a guard. The one exception the
catalogue names: a flag whose default is True (`use_gpu=True`, an argparse
`--cuda` with `default=True`) is not a guard.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, AbstractSet, Callable, Iterator, Optional, Sequence

import libcst as cst

from . import bindings, classes, loops, torchapi
from .libraries import imports_cuda_only_library
from .names import dotted, string_key
from .values import Kind
from .tree import children, ends_by_raising, iter_subtree

if TYPE_CHECKING:
    from .context import Context

# Calls that never return. A warning is no exit: the code after it still runs.
_EXIT_CALLS = frozenset(
    "sys.exit exit quit os._exit os.abort pytest.skip pytest.fail pytest.exit self.skipTest self.fail "
    "unittest.skip ctx.fail ctx.abort".split()
)
_BROAD_EXCEPTIONS = frozenset(
    {"Exception", "BaseException", "RuntimeError", "AssertionError", "AttributeError",
     "torch.cuda.CudaError", "ImportError", "OSError"}
)


def _identifiers(expr: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """Every Name/Attribute chain (outermost first), flag read by key
    (`cfg["use_gpu"]`) and legacy CUDA type test (`x.type() == "torch.cuda.FloatTensor"`)
    in an expression."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)  # exact types: libcst's classes are ABCs, slow to isinstance
        if kind is cst.Name or kind is cst.Attribute:
            yield node  # type: ignore[misc]
            if kind is cst.Attribute:
                stack.append(node.value)  # type: ignore[attr-defined]
            continue
        if kind is cst.Subscript and string_key(node) is not None:  # type: ignore[arg-type]
            yield node  # type: ignore[misc]  # `config["USE_CUDA"]`: a flag under its key
        if kind is cst.Lambda or kind is cst.FunctionDef or kind is cst.ClassDef:
            continue
        if kind is cst.Comparison:
            if loops.main_process(node, strict=True):  # type: ignore[arg-type]
                continue  # `rank == 0` picks the main process; every machine has one
            if _legacy_cuda_type_test(node):  # type: ignore[arg-type]
                yield node  # type: ignore[misc]
                continue
        stack.extend(children(node))


def _legacy_cuda_type_test(test: cst.Comparison) -> bool:
    """`x.type() == "torch.cuda.HalfTensor"`, `x.type() in ("torch.cuda.FloatTensor", ...)`:
    true only for a tensor on a GPU (the `else` of `==` may hold anywhere)."""
    if len(test.comparisons) != 1:
        return False
    op = type(test.comparisons[0].operator)
    if op is not cst.Equal and op is not cst.In:
        return False
    left, right = test.left, test.comparisons[0].comparator
    call = left if type(left) is cst.Call else right
    other = right if call is left else left
    if type(call) is not cst.Call or call.args:  # type: ignore[attr-defined]
        return False
    func = call.func  # type: ignore[attr-defined]
    if type(func) is not cst.Attribute or func.attr.value != "type":  # type: ignore[attr-defined]
        return False
    texts = [other] if type(other) is cst.SimpleString else [
        e.value for e in getattr(other, "elements", ()) if type(e) is cst.Element
    ]
    values = [t.evaluated_value if type(t) is cst.SimpleString else None for t in texts]  # type: ignore[attr-defined]
    return bool(values) and all(v in torchapi.LEGACY_CUDA_TENSOR_TYPES for v in values)


def _word(ident: cst.BaseExpression) -> str:
    """The word a flag's name says: `use_gpu`, `args.cuda` -> `cuda`, `cfg["USE_CUDA"]` -> `USE_CUDA`."""
    if isinstance(ident, cst.Name):
        return ident.value
    if isinstance(ident, cst.Attribute):
        return ident.attr.value
    return (string_key(ident) or "") if type(ident) is cst.Subscript else ""  # type: ignore[arg-type]


def mentions_availability(ctx: "Context", expr: cst.CSTNode, loose: bool = True) -> bool:
    """Does this condition depend on whether an accelerator is present?

    `loose` also accepts names that only sound like it (`args.cuda`, `use_gpu`);
    strict asks for a real probe (`torch.cuda.is_available()`) or a flag made from one."""
    for ident in _identifiers(expr):
        if type(ident) is cst.Comparison:
            return True  # `x.type() == "torch.cuda.HalfTensor"`: x is on a GPU
        qual = ctx.imports.qualify(ident)
        if qual in torchapi.AVAILABILITY_PROBES:
            return True
        if isinstance(ident, cst.Name):
            value = ctx.lookup(ident.value)
            if value is not None and value.kind in (Kind.AVAILABILITY, Kind.DEVICE_COUNT):
                return True
            if loose and value is not None and value.kind in (Kind.DEVICE, Kind.DEVICE_STRING):
                return True  # `dev.type == "cuda"`: a device, whatever its name says
        word = _word(ident)
        if loose and torchapi.GUARD_WORDS.search(word) and not _true_default_flag(ctx, ident):
            return True
    return False


def mentions_device_count(ctx: "Context", expr: cst.CSTNode, loose: bool = True) -> bool:
    """Does this condition depend on how many GPUs there are?

    `torch.cuda.device_count()`, a name assigned from it, and (`loose`) names
    that mean it: `n_gpu`, `world_size`, `require_torch_multi_gpu`, `min_cuda_gpus`."""
    for ident in _identifiers(expr):
        if ctx.imports.qualify(ident) in torchapi.DEVICE_COUNT_PROBES:
            return True
        if isinstance(ident, cst.Name):
            value = ctx.lookup(ident.value)
            if value is not None and value.kind is Kind.DEVICE_COUNT:
                return True
        word = _word(ident)
        if loose and torchapi.COUNT_WORDS.search(word):
            return True
    return False


@dataclass(frozen=True)
class GuardKind:
    """What a guard must check: `mentions` a condition's dependence on it,
    `words` in a function's or class' name that imply it, and whether any
    skip/require decorator counts (a test that may be skipped), whether
    a function or class that imports a CUDA-only library counts, and whether
    availability probes decide which branch runs without an accelerator."""

    mentions: Callable[["Context", cst.CSTNode], bool]
    words: "re.Pattern[str]"
    any_skip: bool
    cuda_only_code: bool = False
    probes: bool = False


# Code reached only where an accelerator is: the guard of `.cuda()`.
AVAILABILITY = GuardKind(mentions_availability, torchapi.CUDA_NAME_WORDS, True, cuda_only_code=True, probes=True)
# The same, proven by a real probe (`torch.cuda.is_available()`, a name bound to one),
# never by a name's words: what a call site must show to guard the function it calls.
PROBED = GuardKind(
    lambda ctx, expr: mentions_availability(ctx, expr, loose=False), re.compile(r"(?!)"), False, probes=True
)
# Code reached only where enough GPUs are: the guard of `'cuda:1'`.
DEVICE_COUNT = GuardKind(mentions_device_count, torchapi.COUNT_WORDS, False)


def true_by_default(ctx: "Context", test: cst.BaseExpression) -> bool:
    """Is this condition a flag that is on by default (`use_gpu` after `use_gpu = True`)?"""
    return isinstance(test, (cst.Name, cst.Attribute)) and _true_default_flag(ctx, test)


def _true_default_flag(ctx: "Context", ident: cst.BaseExpression) -> bool:
    """`use_gpu` with `def f(use_gpu=True)`, or `args.cuda` with an argparse
    `--cuda` whose default is True: a flag that is on by default guards nothing."""
    if isinstance(ident, cst.Name):
        default = ctx.param_default(ident.value)
        if isinstance(default, cst.Name) and default.value == "True":
            # `def mixup(x, use_cuda=True)` whose every call in the file passes
            # `use_cuda=torch.cuda.is_available()`: the default is never used.
            return not _every_call_passes_a_probe(ctx, ident.value)
        bound = ctx.lookup(ident.value)
        return bound is not None and bound.kind is Kind.TRUE_CONSTANT
    if isinstance(ident, cst.Attribute):
        if isinstance(ident.value, cst.Name) and ident.value.value == "self":
            # `self.use_gpu`, copied in `__init__` from `use_gpu=True`
            info = ctx.current_class()
            if info is not None and classes.true_by_default(ctx, info, ident.attr.value):
                return True
        # `args.cuda`, `self.opt.cuda`, `cfg.args.cuda`: the file's argparse option
        if ident.attr.value in ctx.true_default_options:
            return True
        # `if not args.no_cuda:` / `"cpu" if args.cpu else "cuda"`: a flag that turns
        # the accelerator off, off by default, leaves the accelerator path on.
        return ident.attr.value in ctx.false_default_options and bool(_OFF_SWITCH.search(ident.attr.value))
    return False


def _every_call_passes_a_probe(ctx: "Context", param: str) -> bool:
    """Does every call in this file of the function that has the parameter
    `param` (and there is one) pass a value that holds only with an
    accelerator (`use_cuda=torch.cuda.is_available()`, a name bound to one)?
    Known once the whole file is walked."""
    function = next(
        (scope.node for scope in reversed(ctx.scopes) if scope.kind == "function" and param in scope.params), None
    )
    if type(function) is not cst.FunctionDef:
        return False
    name = function.name.value  # type: ignore[attr-defined]
    signature = function.params  # type: ignore[attr-defined]
    params = [p.name.value for p in (*signature.posonly_params, *signature.params)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]  # a method called by its bare name is another function: keywords still tell
    sites = ctx.call_sites.get(name) or []
    calls = [(site[0][-1], site[1]) for site in sites]
    if not calls or any(type(call) is not cst.Call or dotted(call.func) != name for call, _ in calls):  # type: ignore[attr-defined]
        return False  # also handed over to run elsewhere (`Process(target=f)`): the default may be used
    for call, scopes in calls:
        value = _argument_for(call, param, params)  # type: ignore[arg-type]
        with ctx.in_scopes(scopes):
            if value is None or probe_polarity(ctx, value) is not True:
                return False
    return True


def _argument_for(call: cst.Call, param: str, params: list[str]) -> Optional[cst.BaseExpression]:
    """What `call` passes for `param`: by keyword, or by position."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param:
            return arg.value
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional):
        return None
    index = params.index(param) if param in params else len(positional)
    return positional[index].value if index < len(positional) else None


# Option names that switch the accelerator off (`--no-cuda`, `--nocuda`, `--cpu`, `--disable-gpu`).
_OFF_SWITCH = re.compile(r"(?i)^(?:no_?|disable_?|without_?)(?:cuda|gpu|accel\w*)$|^(?:use_|force_|only_)?cpu(?:_only)?$")


def negated_false_default(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """`not args.nocuda`: the negation of an argparse `store_true` flag, True unless it is given."""
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Not)
        and isinstance(expr.expression, cst.Attribute)
        and expr.expression.attr.value in ctx.false_default_options
    )


def on_host_path(ctx: "Context") -> bool:
    """Is the current node reached only when the run is on the CPU? The body of
    `if device == "cpu":`, `if device.type == "cpu":`, `if not use_cuda:`,
    `if not torch.cuda.is_available():`, or the `else` of `if use_cuda:`,
    `if device != "cpu":` (conditional expressions alike)."""
    stack = ctx.stack
    for i in range(len(stack) - 2, -1, -1):
        node, child = stack[i], stack[i + 1]
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if isinstance(node, (cst.If, cst.IfExp)) and child is not node.test:
            host_when_true = _host_test(ctx, node.test)
            if host_when_true is not None and host_when_true == (child is node.body):
                return True
    return False


def _host_test(ctx: "Context", test: cst.BaseExpression) -> Optional[bool]:
    """True: the test holds only on the CPU; False: only with an accelerator;
    None: it says neither."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _host_test(ctx, test.expression)
        return None if inner is None else not inner
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        if not isinstance(op, (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot)):
            return None
        sides = [test.left, test.comparisons[0].comparator]
        texts = [s.evaluated_value for s in sides if isinstance(s, cst.SimpleString)]
        others = [s for s in sides if not isinstance(s, cst.SimpleString)]
        if len(texts) != 1 or len(others) != 1 or not isinstance(texts[0], str):
            return None
        other = others[0]
        subject = _unwrap_str(other)
        device_like = (
            (isinstance(other, cst.Attribute) and other.attr.value == "type")  # `where.type`
            or ctx.value_of(subject).kind in (Kind.DEVICE, Kind.DEVICE_STRING)
            or torchapi.GUARD_WORDS.search(dotted(subject) or "")  # `device`, `args.device`, `str(device)`
        )
        if not device_like:
            return None
        kind = texts[0].split(":", 1)[0]
        if kind not in ("cpu", "cuda"):
            return None
        equal = isinstance(op, (cst.Equal, cst.Is))
        return equal if kind == "cpu" else not equal
    if isinstance(test, (cst.Name, cst.Attribute, cst.Call)) and mentions_availability(ctx, test):
        return False
    return None


def probe_polarity(ctx: "Context", test: cst.BaseExpression, depth: int = 0) -> Optional[bool]:
    """True: `test` holds only with an accelerator (`torch.cuda.is_available()`,
    `use_cuda and args.ddp`, `torch.cuda.device_count() > 1`); False: only
    without one (`not torch.cuda.is_available()`); None: it says neither, or
    not for certain. Strict by design: only real probes, `not`/`and`/`or` of
    them and names certainly bound to them — a flag's name (`no_cuda`,
    `args.cpu`) says nothing certain about which way it points."""
    kind = type(test)
    if kind is cst.UnaryOperation and isinstance(test.operator, cst.Not):  # type: ignore[attr-defined]
        inner = probe_polarity(ctx, test.expression, depth)  # type: ignore[attr-defined]
        return None if inner is None else not inner
    if kind is cst.BooleanOperation:
        sides = [probe_polarity(ctx, test.left, depth), probe_polarity(ctx, test.right, depth)]  # type: ignore[attr-defined]
        if isinstance(test.operator, cst.And):  # type: ignore[attr-defined]
            # One conjunct that needs (or excludes) an accelerator decides, unless they disagree.
            known = {p for p in sides if p is not None}
            return known.pop() if len(known) == 1 else None
        return sides[0] if sides[0] == sides[1] else None  # `or`: every side must agree
    if kind is cst.Call:
        qual = ctx.qualify(test.func)  # type: ignore[attr-defined]
        if qual in torchapi.PRESENCE_PROBES or qual in torchapi.DEVICE_COUNT_PROBES:
            return True
        return None
    if kind is cst.Comparison and len(test.comparisons) == 1:  # type: ignore[attr-defined]
        if _legacy_cuda_type_test(test):  # type: ignore[arg-type]
            return True
        return _count_polarity(ctx, test)  # type: ignore[arg-type]
    if kind is cst.Name and depth < 3:
        source = bindings.certain_source(ctx, test)  # type: ignore[arg-type]
        return None if source is None else probe_polarity(ctx, source, depth + 1)
    return None


def _count_polarity(ctx: "Context", test: cst.Comparison) -> Optional[bool]:
    """`torch.cuda.device_count() > 1` needs a GPU; `device_count() == 0` needs none."""
    left, op, right = test.left, test.comparisons[0].operator, test.comparisons[0].comparator
    if isinstance(left, cst.Name):  # `n_gpu = torch.cuda.device_count()`, then `if n_gpu > 1:`
        left = bindings.certain_source(ctx, left) or left
    if not (isinstance(left, cst.Call) and ctx.qualify(left.func) in torchapi.DEVICE_COUNT_PROBES):
        return None
    if not isinstance(right, cst.Integer):
        return None
    n = int(right.value)
    if isinstance(op, cst.GreaterThan) or (isinstance(op, cst.NotEqual) and n == 0):
        return True
    if isinstance(op, cst.GreaterThanEqual):
        return True if n >= 1 else None
    if (isinstance(op, cst.Equal) and n == 0) or (isinstance(op, cst.LessThan) and n == 1):
        return False
    return None


def _branch_without(ctx: "Context", kind: GuardKind, node: cst.CSTNode, child: Optional[cst.CSTNode]) -> bool:
    """Is `child` the branch of `node` (an if, while or conditional expression)
    that runs without an accelerator: the `else` of `if torch.cuda.is_available():`,
    the body of `if not torch.cuda.is_available():`?"""
    if not kind.probes or child is None or child is node.test:  # type: ignore[attr-defined]
        return False
    holds = probe_polarity(ctx, node.test)  # type: ignore[attr-defined]
    if holds is None:
        return False
    in_body = child is node.body  # type: ignore[attr-defined]
    return holds != in_body


def _unwrap_str(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`str(device)` -> `device`; `device.type` -> `device`."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "str" and len(expr.args) == 1:
        expr = expr.args[0].value
    if isinstance(expr, cst.Attribute) and expr.attr.value == "type":
        expr = expr.value
    return expr


def exits(body: cst.BaseSuite) -> bool:
    """Does this block leave the enclosing flow (return/raise/exit/skip/continue)?"""
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in stmts:
        small = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
        if isinstance(stmt, cst.SimpleStatementSuite):
            small = stmt.body
        for s in small:
            if isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
                return True
            if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call):
                name = dotted(s.value.func) or ""
                if name in _EXIT_CALLS or name.endswith(("skipTest", ".skip", "exit")) or _parser_error(name):
                    return True
    return False


def _parser_error(name: str) -> bool:
    """`parser.error(...)`: argparse prints the message and exits."""
    receiver, _, method = name.rpartition(".")
    return method == "error" and receiver.rsplit(".", 1)[-1].endswith("parser")


def is_early_exit(ctx: "Context", node: cst.CSTNode, kind: GuardKind = AVAILABILITY) -> bool:
    """`if not torch.cuda.is_available(): return` / `assert torch.cuda.is_available()` /
    `if torch.cuda.is_available(): ... else: raise ...`: everything after it in
    the same block runs only with an accelerator."""
    node_type = type(node)  # exact types: libcst's classes are ABCs, slow to isinstance
    if node_type is cst.If:
        orelse = node.orelse  # type: ignore[attr-defined]
        if exits(node.body):  # type: ignore[attr-defined]
            # Not `if torch.cuda.is_available(): return ...`: what follows runs without one.
            return (
                (orelse is None or type(orelse) is cst.Else)
                and kind.mentions(ctx, node.test)  # type: ignore[attr-defined]
                and (not kind.probes or probe_polarity(ctx, node.test) is not True)  # type: ignore[attr-defined]
                # A probed exit must be taken whenever there is none: not
                # `if args.cuda and not torch.cuda.is_available(): sys.exit(1)`.
                and (kind is not PROBED or _holds_without(ctx, node.test))  # type: ignore[attr-defined]
            )
        # `if torch.cuda.is_available(): model.cuda() else: raise SystemExit("needs a GPU")`:
        # what follows runs only where the test held.
        return (
            type(orelse) is cst.Else
            and exits(orelse.body)  # type: ignore[union-attr]
            and kind.mentions(ctx, node.test)  # type: ignore[attr-defined]
            and (not kind.probes or probe_polarity(ctx, node.test) is not False)  # type: ignore[attr-defined]
        )
    if node_type is cst.Assert:
        return kind.mentions(ctx, node.test) and (  # type: ignore[attr-defined]
            not kind.probes or probe_polarity(ctx, node.test) is not False  # type: ignore[attr-defined]
        )
    if node_type is cst.Assign:
        # `pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), ...)`, or a
        # marker kept for reuse, `requires_gpu = pytest.mark.skipif(...)`, at module
        # level: a GPU test module, whose undecorated helpers run only under it.
        # Shape first (cheap), the condition's meaning last.
        marker = any(isinstance(t.target, cst.Name) and t.target.value == "pytestmark" for t in node.targets) or (
            ctx.at_module_level() and isinstance(node.value, cst.Call) and _is_skip(node.value)
        )
        return marker and kind.mentions(ctx, node.value)
    return False


def _decorated_for(ctx: "Context", node: cst.CSTNode, kind: GuardKind) -> bool:
    decorators = getattr(node, "decorators", ())
    return any(kind.mentions(ctx, d.decorator) or (kind.any_skip and _is_skip(d.decorator)) for d in decorators)


def _is_skip(expr: cst.BaseExpression) -> bool:
    call = expr.func if isinstance(expr, cst.Call) else expr
    name = dotted(call) or ""
    return "skip" in name.lower() or "require" in name.lower()


def _catches_failure(node: cst.Try) -> bool:
    """A `try` around the placement whose handler catches its failure. Not a
    long body (a whole training function) whose handler only reports and
    gives up: that hides the crash rather than falling back."""
    if _long_body(node.body) and all(_gives_up(h.body) for h in node.handlers):
        return False
    for handler in node.handlers:
        if ends_by_raising(handler.body):
            continue  # `except Exception: log(...); raise`: the failure goes on up
        if handler.type is None:
            return True
        types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
        for t in types:
            name = dotted(t.value if isinstance(t, cst.Element) else t)
            if name in _BROAD_EXCEPTIONS:
                return True
    return False


def _accelerator_failure(ctx: "Context", caught: Optional[cst.BaseExpression]) -> bool:
    """`torch.cuda.OutOfMemoryError`, or a tuple of such exceptions."""
    if caught is None:
        return False
    parts = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return all(ctx.qualify(p) in torchapi.ACCELERATOR_FAILURES for p in parts)


def _holds_without(ctx: "Context", test: cst.BaseExpression) -> bool:
    """Does `test` certainly hold where there is no accelerator? `not
    torch.cuda.is_available()`, `not use_cuda` (bound to the probe), and `or`
    with anything / `and` of such tests."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return probe_polarity(ctx, test.expression) is True
    if isinstance(test, cst.BooleanOperation):
        left, right = _holds_without(ctx, test.left), _holds_without(ctx, test.right)
        return (left or right) if isinstance(test.operator, cst.Or) else (left and right)
    return False


def _tests_oom_message(test: cst.BaseExpression) -> bool:
    """`"out of memory" in str(e)` (alone or in an `and`): the accelerator
    allocator's message (the CPU's says "not enough memory")."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _tests_oom_message(test.left) or _tests_oom_message(test.right)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left = test.left
    return (
        isinstance(test.comparisons[0].operator, cst.In)
        and isinstance(left, cst.SimpleString)
        and "out of memory" in str(left.evaluated_value).lower()
    )


def _long_body(body: cst.BaseSuite, limit: int = 5) -> bool:
    """More than `limit` statements, nested ones counted (a `for` loop of
    sixty lines is long, whatever the try's own statement count)."""
    statements = 0
    for node in iter_subtree(body, prune=lambda n: isinstance(n, cst.BaseSmallStatement)):
        if isinstance(node, cst.BaseStatement):
            statements += 1
            if statements > limit:
                return True
    return False


def _gives_up(body: cst.BaseSuite) -> bool:
    """A handler made of logging, `pass` and a `return` of nothing or constants."""
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in stmts:
        small = stmt.body if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None
        if small is None:
            return False
        for s in small:
            if isinstance(s, cst.Pass):
                continue
            if isinstance(s, cst.Return) and (s.value is None or _constant(s.value)):
                continue
            if isinstance(s, cst.Expr) and isinstance(s.value, cst.Call):
                name = dotted(s.value.func) or ""
                if name == "print" or name.rsplit(".", 1)[-1] in ("info", "warning", "warn", "error", "exception", "print_exc"):
                    continue
            return False
    return True


def _constant(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Tuple):
        return all(_constant(e.value) for e in expr.elements)
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(expr, cst.Name) and expr.value in ("None", "True", "False")
    )


def is_guarded(
    ctx: "Context", chain: list[cst.CSTNode], early_exit_blocks: AbstractSet[int], kind: GuardKind = AVAILABILITY
) -> bool:
    """Is the node at the top of `chain` (its ancestors, outermost first)
    reached only when an accelerator is present (or, with `kind`, enough GPUs)?
    `early_exit_blocks` are the blocks already known to follow an early exit."""
    for i in range(len(chain) - 1, -1, -1):
        node = chain[i]
        child = chain[i + 1] if i + 1 < len(chain) else None
        if id(node) in early_exit_blocks:
            return True
        if isinstance(node, (cst.If, cst.While)):
            if kind.mentions(ctx, node.test) and not _branch_without(ctx, kind, node, child):
                return True
            if kind.probes and child is node.body and _tests_oom_message(node.test):
                return True  # `if "CUDA out of memory" in str(e):`
        elif isinstance(node, cst.IfExp):
            if child is not node.test and kind.mentions(ctx, node.test) and not _branch_without(ctx, kind, node, child):
                return True
        elif isinstance(node, cst.BooleanOperation):
            if child is node.right and kind.mentions(ctx, node.left):
                # `available and x.cuda()` runs it with one; `available or x.cuda()` without.
                holds = probe_polarity(ctx, node.left) if kind.probes else None
                if holds is None or holds == isinstance(node.operator, cst.And):
                    return True
        elif isinstance(node, cst.Try):
            # Not for a probed guard: a `try` around a call catches whatever the callee raises.
            if child is node.body and kind is not PROBED and _catches_failure(node):
                return True
        elif isinstance(node, cst.ExceptHandler):
            # `except torch.cuda.OutOfMemoryError:` runs only after an accelerator ran out.
            if kind.probes and child is node.body and _accelerator_failure(ctx, node.type):
                return True
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            if (kind.words.search(node.name.value) and not _names_a_move(node.name.value)) or _decorated_for(
                ctx, node, kind
            ):
                return True
            if kind.cuda_only_code and imports_cuda_only_library(node):
                return True
            if type(node) is cst.ClassDef and _instances_need_one(ctx, node, chain, i, kind):
                return True
        elif isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            # `[t.cuda() for t in ts if torch.cuda.is_available()]`
            if child is not node.for_in and any(kind.mentions(ctx, c.test) for c in _comp_ifs(node.for_in)):
                return True
        elif type(node) is cst.With:
            # `with FakeTensorMode():` makes tensors without data: a CUDA one needs no GPU.
            if child is node.body and any(_fake_tensor_mode(ctx, item.item) for item in node.items):
                return True
        elif isinstance(node, cst.Lambda):
            # A lambda runs where it is called; it is usually handed to a guarded
            # caller. A `map_location=lambda storage, loc: storage.cuda()` runs
            # inside its `torch.load`, right here, as does one handed to `map()`.
            if not _runs_here(ctx, chain, i):
                return True
    return False


def _instances_need_one(
    ctx: "Context", cls: cst.ClassDef, chain: Sequence[cst.CSTNode], i: int, kind: GuardKind
) -> bool:
    """Is `chain[i + 2]` an instance method of `cls`, whose `__init__` exits
    without an accelerator (`if not torch.cuda.is_available(): raise ...`)?
    No instance exists without one, so none of its methods runs without one."""
    method = chain[i + 2] if i + 2 < len(chain) else None
    if type(method) is not cst.FunctionDef or method.name.value == "__init__":  # type: ignore[attr-defined]
        return False
    if any(_decorator_name(d.decorator) in ("staticmethod", "classmethod") for d in method.decorators):  # type: ignore[attr-defined]
        return False
    body = cls.body.body if type(cls.body) is cst.IndentedBlock else ()
    init = next((s for s in body if type(s) is cst.FunctionDef and s.name.value == "__init__"), None)
    if init is None or type(init.body) is not cst.IndentedBlock:  # type: ignore[attr-defined]
        return False
    # Reaching every method, the exit must test a real probe (`torch.cuda.is_available()`,
    # a name bound to one), not a name's words (`if not _XLA_AVAILABLE: raise`).
    exit_kind = PROBED if kind is AVAILABILITY else kind
    for stmt in init.body.body:  # type: ignore[attr-defined]
        small = stmt.body if type(stmt) is cst.SimpleStatementLine else (stmt,)
        if any(is_early_exit(ctx, s, exit_kind) for s in small):  # type: ignore[union-attr]
            return True
    return False


def _decorator_name(expr: cst.BaseExpression) -> str:
    return expr.value if type(expr) is cst.Name else ""  # type: ignore[attr-defined]


_MOVE_NAME = re.compile(r"(^|_)to_?(cuda|gpu|device|accelerator)|^(cuda|gpu)ify|^(move|send|put)_", re.I)


def _names_a_move(name: str) -> bool:
    """`to_cuda`, `_to_gpu`, `batch_to_device`, `move_to_gpu`, `toCuda`: a helper
    named for the move it makes, called from anywhere — not the GPU code path
    that `forward_cuda` or `CUDAKernel` names."""
    return bool(_MOVE_NAME.search(name)) and "avail" not in name.lower()  # `to_gpu_if_available`


def _fake_tensor_mode(ctx: "Context", expr: cst.BaseExpression) -> bool:
    """`FakeTensorMode()` (`torch._subclasses.fake_tensor`), however imported."""
    if type(expr) is not cst.Call:
        return False
    qual = ctx.qualify(expr.func) or ""  # type: ignore[attr-defined]
    return qual.startswith("torch.") and qual.endswith(".FakeTensorMode")


# Builtins that call the function they are handed before they return (`map`
# and `filter` lazily, but their iterator is consumed where it is made).
_CALLING_BUILTINS = frozenset({"map", "filter", "sorted", "min", "max"})


def _runs_here(ctx: "Context", chain: Sequence[cst.CSTNode], i: int) -> bool:
    """Is `chain[i]` (a lambda) called right where it is written: the map
    location of a `torch.load`, or handed to a builtin that calls it
    (`map(lambda t: t.cuda(), batch)`, `sorted(xs, key=lambda t: ...)`,
    `functools.reduce(lambda a, b: ..., xs)`, `xs.sort(key=lambda t: ...)`)?"""
    if i < 2 or not isinstance(chain[i - 1], cst.Arg) or not isinstance(chain[i - 2], cst.Call):
        return False
    from .placements import LOADERS  # placements imports the context, which imports this

    func = chain[i - 2].func  # type: ignore[attr-defined]
    if type(func) is cst.Name and func.value in _CALLING_BUILTINS:  # type: ignore[attr-defined]
        return ctx.lookup(func.value) is None  # type: ignore[attr-defined]
    if type(func) is cst.Attribute and func.attr.value == "sort":  # type: ignore[attr-defined]
        return True
    qual = ctx.qualify(func)
    return qual == "functools.reduce" or qual in LOADERS


def _comp_ifs(comp: cst.CompFor) -> Iterator[cst.CompIf]:
    while comp is not None:
        yield from comp.ifs
        comp = comp.inner_for_in
