"""The semantic context: everything the single walk has learned so far about the
file, and the questions rules ask of it. The engine calls `enter`/`leave` for
every node, before and after the rules see it."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterator, Optional

import libcst as cst

from . import bindings, classes, events, guards, late, loops, optimizers, residence, torchapi
from .names import ImportTable, dotted
from .scopes import ClassInfo, Scope
from .values import MODULE, TENSOR, UNKNOWN, Device, Kind, Value, parse_device_string

_DATASET_BASES = frozenset(
    {"torch.utils.data.Dataset", "torch.utils.data.IterableDataset",
     "torch.utils.data.dataset.Dataset", "torch.utils.data.dataset.IterableDataset"}
)


_TRUE = Value(Kind.TRUE_CONSTANT)

class Context:
    def __init__(self, source: str) -> None:
        self.source = source
        self.memo: dict[str, object] = {}  # per-file answers that only depend on the text
        # Whether any availability/count probe is named at all (a cheap text test that
        # lets per-assignment probe scans be skipped in the many files without one).
        self.names_a_probe = any(p.rsplit(".", 1)[-1] in source for p in torchapi.PROBE_NAMES)
        self.imports = ImportTable()
        self.stack: list[cst.CSTNode] = []  # ancestors of (and including) the current node
        self.scopes: list[Scope] = []
        self.classes: dict[str, ClassInfo] = {}  # local classes by name
        self.early_exit_blocks: set[int] = set()  # ids of blocks after an early exit
        self.count_exit_blocks: set[int] = set()  # ... after one that checks the GPU count
        self.probed_exit_blocks: set[int] = set()  # ... after one that calls a real probe
        self.keeps_on_objects = False  # has any `args.device = <device>` been seen?
        # Calls of the file's own functions by name: (stack, scopes, after a probed exit)
        # at each call, to judge guards one call away.
        self.call_sites: dict[str, list[tuple[list, list, bool]]] = {}
        self.true_default_options: set[str] = set()  # argparse dests defaulting to True
        self.false_default_options: set[str] = set()  # store_true dests (False unless given)
        self.option_defaults: dict[str, cst.BaseExpression] = {}  # argparse dest -> its `default=`
        self.events = events.EventLog()  # moves and optimizers, in statement order per scope
        # What the walk does on entering / leaving a node of a type, called as
        # hook(ctx, node). Functions, not bound methods: a table of bound methods
        # would be a reference cycle that keeps each file's tree alive until the
        # cyclic collector runs.
        self.enter_hooks = ENTER_HOOKS
        self.leave_hooks = LEAVE_HOOKS

    # -- walk bookkeeping -------------------------------------------------
    def enter(self, node: cst.CSTNode) -> None:
        self.stack.append(node)
        hook = self.enter_hooks.get(type(node))
        if hook is not None:
            hook(self, node)

    def leave(self, node: cst.CSTNode) -> None:
        hook = self.leave_hooks.get(type(node))
        if hook is not None:
            hook(self, node)
        self.stack.pop()

    def _enter_import(self, node: cst.Import) -> None:
        self.imports.add_import(node)

    def _enter_import_from(self, node: cst.ImportFrom) -> None:
        self.imports.add_import_from(node)

    def _enter_module(self, node: cst.Module) -> None:
        self.scopes.append(Scope("module", node))

    def _enter_class(self, node: cst.ClassDef) -> None:
        bases = tuple(self.imports.qualify(a.value) or dotted(a.value) or "" for a in node.bases)
        info = ClassInfo(node.name.value, node, bases)
        for base in bases:
            local = self.classes.get(base)
            if base in torchapi.MODULE_BASES or torchapi.is_module_constructor(base) or (
                local is not None and local.is_module
            ) or (local is None and classes.is_module_base(base)):
                info.is_module = True
            if base in _DATASET_BASES or (local is not None and local.is_dataset):
                info.is_dataset = True
        for stmt in node.body.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                info.members.add(stmt.name.value)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    for target in _assigned_names(small):
                        info.members.add(target)
        self.classes[info.name] = info
        self.scopes.append(Scope("class", node, cls=info))

    def _enter_function(self, node: cst.FunctionDef) -> None:
        outer = self.scopes[-1] if self.scopes else None
        scope = Scope("function", node, cls=outer.cls if outer and outer.kind == "class" else None)
        params = node.params
        for p in (*params.posonly_params, *params.params, *params.kwonly_params):
            scope.params[p.name.value] = p.default
            scope.bind(p.name.value, self._annotation_value(p.annotation))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                scope.params[star.name.value] = None
                scope.bind(star.name.value, UNKNOWN)
        self.scopes.append(scope)

    def _leave_scope(self, node: cst.CSTNode) -> None:
        self.scopes.pop()

    def _enter_call(self, node: cst.Call) -> None:
        self.events.record_call(self, node)
        defined = loops.defined_function_names(self)
        # A function of the file called here, or handed over to run here (`mp.spawn(run,
        # nprocs=n)`, `Process(target=worker)`): where it runs, for the callers' guards.
        called = [node.func.value] if type(node.func) is cst.Name and node.func.value in defined else []
        called += [a.value.value for a in node.args if type(a.value) is cst.Name and a.value.value in defined]  # type: ignore[attr-defined]
        if called:
            stack = list(self.stack)
            after_exit = any(id(n) in self.probed_exit_blocks for n in stack)
            for name in called:
                self.call_sites.setdefault(name, []).append((stack, list(self.scopes), after_exit))
        # argparse: `add_argument('--cuda', default=True)` / `action='store_false'`.
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value != "add_argument":
            return
        flags = [s for a in node.args if a.keyword is None and (s := _string(a.value))]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        default, action = kw.get("default"), _string(kw.get("action"))
        dest = _string(kw.get("dest")) or next(
            (f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")), None
        )
        if not dest:
            return
        if (isinstance(default, cst.Name) and default.value == "True") or action == "store_false":
            self.true_default_options.add(dest)
        elif action == "store_true" and (default is None or (isinstance(default, cst.Name) and default.value == "False")):
            self.false_default_options.add(dest)
        if default is not None:
            self.option_defaults[dest] = default

    def _leave_assign(self, node: cst.Assign) -> None:
        value = self.value_of(node.value)
        if value.kind is Kind.UNKNOWN and guards.negated_false_default(self, node.value):
            value = _TRUE  # `use_cuda = not args.no_cuda`: on unless the flag is given
        # A strict probe needs a probe's name in the text: skip the scan in files without one.
        if value.kind is Kind.UNKNOWN and self.names_a_probe:
            if guards.mentions_device_count(self, node.value, loose=False):
                value = Value(Kind.DEVICE_COUNT)  # `n_gpu = max(torch.cuda.device_count(), 1)`
            elif guards.mentions_availability(self, node.value, loose=False):
                value = Value(Kind.AVAILABILITY)
        elif value.device is not None and value.device.literal and self.is_guarded():
            # `if torch.cuda.is_available(): device = "cuda"`: chosen by a guard.
            value = replace(value, device=replace(value.device, guarded=True))
        for target in node.targets:
            if bindings.pairwise(target.target, node.value):
                # `x, y = x.to(device), y.to(device)`: each name gets its own value.
                values = [self.value_of(v.value) for v in node.value.elements]  # type: ignore[attr-defined]
                for el, v in zip(target.target.elements, values):  # type: ignore[attr-defined]
                    self._bind_target(el.value, v)
                continue
            self._bind_target(target.target, value)
        self._leave_guardable(node)

    def _leave_ann_assign(self, node: cst.AnnAssign) -> None:
        value = self._annotation_value(node.annotation)
        if value.kind is Kind.UNKNOWN and node.value is not None:
            value = self.value_of(node.value)
        self._bind_target(node.target, value)

    def _enter_for(self, node: cst.For) -> None:
        # `for images, labels in train_loader:` (also through `enumerate`/`tqdm`):
        # a DataLoader yields batches on the host; unpacked, their parts are
        # tensors there. A whole batch (`for batch in loader`) may be a dict.
        target = node.target
        if self._iterates_parameters(node):
            return
        counted = _iterates_a_loader(self, node.iter)
        if counted is None or not isinstance(target, cst.Tuple):
            return
        if counted:  # `for i, (x, y) in enumerate(loader)`: the batch comes second
            batch = target.elements[1].value if len(target.elements) == 2 else None
            if not isinstance(batch, cst.Tuple):
                return
            target = batch
        for element in target.elements:
            if isinstance(element.value, cst.Name):
                self._bind_target(element.value, Value(Kind.TENSOR, residence.HOST_DEFAULT))

    def _iterates_parameters(self, node: cst.For) -> bool:
        """`for p in model.parameters():`, `for name, p in model.named_parameters():`
        (buffers too): each `p` is a tensor where the module is (somewhere
        unknown for a `model` handed in)."""
        call = node.iter
        if type(call) is not cst.Call or type(call.func) is not cst.Attribute:  # type: ignore[attr-defined]
            return False
        method = call.func.attr.value  # type: ignore[attr-defined]
        if method not in _PARAMETER_ITERATORS:
            return False
        module = self.value_of(call.func.value)  # type: ignore[attr-defined]
        if module.kind is not Kind.MODULE and module.kind is not Kind.UNKNOWN:
            return False  # a module, or something only a module would be asked that (`model` passed in)
        target = node.target
        if method.startswith("named_"):
            pair = target.elements if type(target) is cst.Tuple else ()  # type: ignore[attr-defined]
            target = pair[1].value if len(pair) == 2 else None  # type: ignore[assignment]
        if type(target) is not cst.Name:
            return False
        self._bind_target(target, Value(Kind.TENSOR, module.device))
        return True

    def _leave_for(self, node: cst.For) -> None:
        self._bind_target(node.target, UNKNOWN)

    def _leave_expr(self, node: cst.Expr) -> None:
        # `model.to(device)` / `self.net.cuda()` as a statement: nn.Module moves in place.
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            receiver = call.func.value
            if call.func.attr.value in torchapi.MODULE_RETURNING_METHODS and self.value_of(receiver).is_module:
                if isinstance(receiver, cst.Name) or (isinstance(receiver, cst.Attribute) and _is_self(receiver.value)):
                    self._bind_target(receiver, self.value_of(call))

    def _leave_guardable(self, node: cst.CSTNode) -> None:
        if guards.is_early_exit(self, node, guards.AVAILABILITY):
            self._mark_after_exit(self.early_exit_blocks)
            # A probed exit is an availability exit first (and needs a probe's name in the text).
            if self.names_a_probe and guards.is_early_exit(self, node, guards.PROBED):
                self._mark_after_exit(self.probed_exit_blocks)
        if guards.is_early_exit(self, node, guards.DEVICE_COUNT):
            self._mark_after_exit(self.count_exit_blocks)

    def _mark_after_exit(self, blocks: set[int]) -> None:
        block = self._enclosing_block()
        if block is not None:
            blocks.add(id(block))

    def _enclosing_block(self) -> Optional[cst.CSTNode]:
        for node in reversed(self.stack[:-1]):
            if isinstance(node, (cst.IndentedBlock, cst.Module)):
                return node
        return None

    def _bind_target(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name):
            scope = self.scopes[-1]
            scope.bind(target.value, self._either_branch(scope.names.get(target.value), value))
            if scope.attribute_keys:  # `args = ...` again: what `args.device` held is gone
                prefix = target.value + "."
                for key in [k for k in scope.attribute_keys if k.startswith(prefix)]:
                    scope.attribute_keys.discard(key)
                    del scope.names[key]
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind_target(el.value, UNKNOWN)
        elif isinstance(target, cst.Attribute) and _is_self(target.value):
            cls = self.current_class()
            if cls is not None:
                old = cls.attrs.get(target.attr.value)
                value = self._either_branch(old, value)
                # Two different kinds for one attribute: we no longer know.
                if old is not None and old.kind is value.kind and old.cls != value.cls:
                    value = Value(value.kind, cls=None)  # same kind, different classes
                cls.attrs[target.attr.value] = value if old is None or old.kind is value.kind else UNKNOWN
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            # `args.device = torch.device("cuda:0")`: a device kept on a plain object.
            scope, key = self.scopes[-1], f"{target.value.value}.{target.attr.value}"
            if value.kind in (Kind.DEVICE, Kind.DEVICE_STRING) or key in scope.attribute_keys:
                device_like = value.kind in (Kind.DEVICE, Kind.DEVICE_STRING)
                scope.bind(key, value if device_like else UNKNOWN)
                scope.attribute_keys.add(key)
                self.keeps_on_objects = True

    # -- questions rules ask ---------------------------------------------
    def parent(self, depth: int = 1) -> Optional[cst.CSTNode]:
        """The current node's ancestor `depth` levels up (1: its parent)."""
        i = len(self.stack) - 1 - depth
        return self.stack[i] if i >= 0 else None

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        return self.imports.qualify(node)

    def lookup(self, name: str) -> Optional[Value]:
        """A name's value, through function scopes to the module (class scopes skipped)."""
        for i, scope in enumerate(reversed(self.scopes)):
            if scope.kind == "class" and i > 0:
                continue
            value = scope.lookup(name)
            if value is not None:
                return value
        if len(self.scopes) > 1 and any(scope.kind == "function" for scope in self.scopes):
            # A function body runs later: it may read a module name the text assigns below it.
            return late.late_value(self, name)
        return None

    def param_default(self, name: str) -> Optional[cst.BaseExpression]:
        for scope in reversed(self.scopes):
            if scope.kind == "function" and name in scope.params:
                return scope.params[name]
        return None

    def at_module_level(self) -> bool:
        return len(self.scopes) == 1

    def current_function(self) -> Optional[cst.FunctionDef]:
        for scope in reversed(self.scopes):
            if scope.kind == "function":
                return scope.node  # type: ignore[return-value]
        return None

    def current_class(self) -> Optional[ClassInfo]:
        """The class whose body or method we are in."""
        for scope in reversed(self.scopes):
            if scope.cls is not None:
                return scope.cls
        return None

    def torch_alias(self) -> Optional[str]:
        """The local name `torch` itself is imported as, for writing fixes."""
        for local, full in self.imports.aliases.items():
            if full == "torch":
                return local
        return None

    def is_guarded(self) -> bool:
        """Is the current node reached only with an accelerator present (as far as known now)?"""
        return guards.is_guarded(self, self.stack, self.early_exit_blocks)

    def value_of(self, expr: cst.BaseExpression) -> Value:
        """What `expr` evaluates to, as far as the code makes it clear."""
        kind = type(expr)  # exact types: libcst's classes are ABCs, slow to isinstance
        if kind is cst.Name:
            found = self.lookup(expr.value)
            if found is None:
                return _TRUE if expr.value == "True" else UNKNOWN
            return found
        if kind is cst.Attribute:
            return self._attribute_value(expr)
        if kind is cst.Call:
            if type(expr.func) is cst.Attribute and expr.func.attr.value == "format":
                built = _built_device_string(expr)
                if built is not None:
                    return built
            return self._call_value(expr)
        if kind is cst.Subscript:
            base = self.value_of(expr.value)
            if base.kind is Kind.MODULE_OUTPUT:
                return base  # `out[0]`: part of the output, where the module is
            return Value(Kind.TENSOR, base.device) if base.is_tensor else UNKNOWN
        if kind is cst.BinaryOperation:
            built = _built_device_string(expr)
            if built is not None:
                return built
            if type(expr.operator) is cst.Modulo and _string(expr.left) is not None:
                return UNKNOWN  # `"loss %f" % loss`: a str
            left, right = self.value_of(expr.left), self.value_of(expr.right)
            if Kind.MODULE not in (left.kind, right.kind) and (left.is_tensor or right.is_tensor):
                return Value(Kind.TENSOR, residence.combined_device(left, right))
            return UNKNOWN
        if kind is cst.Comparison and len(expr.comparisons) == 1:
            # `t > 0.5`, `a == b`: elementwise on tensors (`is`/`in` give a bool).
            op = expr.comparisons[0].operator
            left, right = self.value_of(expr.left), self.value_of(expr.comparisons[0].comparator)
            if not isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) and (left.is_tensor or right.is_tensor):
                return Value(Kind.TENSOR, residence.combined_device(left, right))
            return UNKNOWN
        if kind is cst.UnaryOperation:
            inner = self.value_of(expr.expression)
            return inner if inner.is_tensor else UNKNOWN
        if kind is cst.SimpleString or kind is cst.ConcatenatedString:
            text = _string(expr)
            device = parse_device_string(text) if text is not None else None
            return Value(Kind.DEVICE_STRING, device) if device else UNKNOWN
        if kind is cst.IfExp:
            return self._ifexp_value(expr)
        if kind is cst.FormattedString:
            return _built_device_string(expr) or UNKNOWN
        return UNKNOWN

    def device_of(self, expr: cst.BaseExpression) -> Optional[Device]:
        """The device an expression names, when it names one."""
        value = self.value_of(expr)
        if value.kind in (Kind.DEVICE, Kind.DEVICE_STRING):
            return value.device or Device()
        return None

    def is_tensor(self, expr: cst.BaseExpression) -> bool:
        return self.value_of(expr).is_tensor

    def is_module(self, expr: cst.BaseExpression) -> bool:
        return self.value_of(expr).is_module

    def defines_own(self, receiver: cst.BaseExpression, member: str) -> bool:
        """Does `receiver` belong to a class of this file that defines `member`
        itself (`self` inside it, or an instance of it)? Then torch's meaning
        of that method does not apply."""
        if _is_self(receiver):
            cls = self.current_class()
        else:
            name = self.value_of(receiver).cls
            cls = self.classes.get(name) if name else None
        return cls is not None and member in cls.members

    def unguarded(self, kind: Optional["guards.GuardKind"] = None) -> Callable[[], bool]:
        """A `condition` for `Rule.report`: true when, once the whole file is
        known, the current node is reached without an accelerator guard
        (`kind=guards.DEVICE_COUNT`: without a check of the GPU count)."""
        kind = kind or guards.AVAILABILITY
        exits = self.count_exit_blocks if kind is guards.DEVICE_COUNT else self.early_exit_blocks
        stack, scopes = list(self.stack), list(self.scopes)
        if any(id(n) in exits for n in stack):
            return lambda: False

        function = _top_level_function(stack)

        def check() -> bool:
            # Judge in the scopes of the reported node (its parameters, its locals).
            with self.in_scopes(scopes):
                if guards.is_guarded(self, stack, frozenset(), kind):
                    return False
            # `def train(): model.cuda()`, called only after `main()`'s
            # `if not torch.cuda.is_available(): sys.exit(1)`: guarded by its callers.
            if kind is guards.AVAILABILITY and function is not None:
                return not self._called_only_where_probed(function, {function})
            return True

        return check

    @contextmanager
    def in_scopes(self, scopes: list[Scope]) -> Iterator[None]:
        """Judge, once the file is walked, with the scopes some node was met in
        (its parameters, its locals), as `call_sites` and `unguarded` keep them."""
        saved, self.scopes = self.scopes, scopes
        try:
            yield
        finally:
            self.scopes = saved

    def _called_only_where_probed(self, name: str, seen: set[str]) -> bool:
        """Is the file's function `name` called, and only where a real probe
        guards the call (there, or at the calls of the function it is in)? A
        flag's name does not count here: one call away, it says too little."""
        sites = self.call_sites.get(name)
        if not sites:
            return False
        for stack, scopes, after_exit in sites:
            if after_exit:
                continue
            with self.in_scopes(scopes):
                guarded = guards.is_guarded(self, stack, frozenset(), guards.PROBED)
            if guarded:
                continue
            outer = _top_level_function(stack)
            if outer is None or outer in seen or len(seen) > 3:
                return False
            if not self._called_only_where_probed(outer, seen | {outer}):
                return False
        return True

    def annotation_value(self, annotation: Optional[cst.Annotation]) -> Value:
        """What a name annotated this way holds (`x: torch.Tensor`, `d: torch.device`)."""
        return self._annotation_value(annotation)

    def is_dtype(self, expr: cst.BaseExpression) -> bool:
        return self.qualify(expr) in torchapi.DTYPES or self.value_of(expr).kind is Kind.DTYPE

    # -- inference ---------------------------------------------------------
    def _annotation_value(self, annotation: Optional[cst.Annotation]) -> Value:
        if annotation is None:
            return UNKNOWN
        ann = annotation.annotation
        if isinstance(ann, (cst.SimpleString, cst.ConcatenatedString)):
            return UNKNOWN
        qual = self.imports.qualify(ann)
        if qual in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor", "torch.nn.Parameter"):
            return TENSOR
        if qual in torchapi.MODULE_BASES:
            return MODULE
        if qual == "torch.device":
            return Value(Kind.DEVICE, Device())
        if isinstance(ann, cst.Name) and ann.value in self.classes and self.classes[ann.value].is_module:
            return MODULE
        return UNKNOWN

    def _attribute_value(self, expr: cst.Attribute) -> Value:
        qual = self.imports.qualify(expr)
        if qual in torchapi.DTYPES:
            return Value(Kind.DTYPE)
        attr = expr.attr.value
        if attr == "dtype":
            return Value(Kind.DTYPE)  # `x.dtype`, `self.dtype`: `.to(x.dtype)` is a cast
        if _is_self(expr.value):
            cls = self.current_class()
            if cls is not None and attr in cls.attrs:
                return cls.attrs[attr]
            facts = classes.attributes(cls).attrs.get(attr) if cls is not None and cls.is_module else None
            if facts is not None and facts.tensor and not facts.assigned_in:
                return TENSOR  # `self.register_buffer("pe", pe)`, read as `self.pe`
            return UNKNOWN
        if attr == "device" and self.value_of(expr.value).is_tensor:
            return Value(Kind.DEVICE, Device(of_tensor=True))
        if self.keeps_on_objects and isinstance(expr.value, cst.Name):
            kept = self._kept_on_object(expr.value.value, attr)
            if kept is not None:
                return kept
        base = self.value_of(expr.value)
        if attr in ("T", "mT", "H", "data", "grad", "real", "imag") and base.is_tensor:
            return Value(Kind.TENSOR, base.device)
        if base.kind is Kind.MODULE_OUTPUT and attr not in residence.NOT_DATA_ATTRS:
            return base  # `out.logits`: part of the output, where the module is
        return UNKNOWN

    def _either_branch(self, before: Optional[Value], value: Value) -> Value:
        """`if torch.cuda.is_available(): device = torch.device("cuda") else: device =
        torch.device("cpu")`: in the `else` of an availability test, a device that
        differs from the one the test's body bound is one of the two — chosen by
        the test, not the host for sure."""
        if before is None or before.device is None or value.device is None or before.device.type == value.device.type:
            return value
        if value.kind not in (Kind.DEVICE, Kind.DEVICE_STRING) or before.kind not in (Kind.DEVICE, Kind.DEVICE_STRING):
            return value
        stack = self.stack
        for i in range(len(stack) - 1, 0, -1):
            node = stack[i]
            if type(node) in (cst.FunctionDef, cst.ClassDef, cst.Lambda):
                return value
            if type(node) is cst.Else and type(stack[i - 1]) is cst.If:
                if not guards.mentions_availability(self, stack[i - 1].test):  # type: ignore[attr-defined]
                    return value
                kind = before.kind if before.kind is value.kind else Kind.DEVICE_STRING
                return Value(kind, Device(guarded=True))
        return value

    def _kept_on_object(self, root: str, attr: str) -> Optional[Value]:
        """What `args.device = ...` stored, read as `args.device` in the same scope
        or a nested one that does not bind `args` itself (a parameter `args` is
        another object)."""
        key = f"{root}.{attr}"
        for i, scope in enumerate(reversed(self.scopes)):
            if scope.kind == "class" and i > 0:
                continue
            if key in scope.attribute_keys:
                return scope.names[key]
            if root in scope.names or root in scope.params:
                return None
        return None

    def _call_value(self, call: cst.Call) -> Value:
        func = call.func
        qual = self.imports.qualify(func)
        if qual is not None:
            if qual == "torch.device":
                return Value(Kind.DEVICE, self._torch_device(call))
            if qual in torchapi.LEGACY_CPU_CONSTRUCTORS and qual != "torch.Tensor":
                return Value(Kind.TENSOR, Device("cpu", literal=True))  # `torch.FloatTensor(16, 100)`
            if qual in torchapi.LEGACY_CUDA_TENSOR_TYPES:
                return Value(Kind.TENSOR, Device("cuda", literal=True))
            if qual in torchapi.WRAPPING_CONSTRUCTORS:
                first = call.args[0] if call.args else None
                if first is not None and first.keyword is None and not first.star:
                    data = self.value_of(first.value)
                    return Value(Kind.TENSOR, data.device if data.is_tensor else None)
                return Value(Kind.TENSOR)
            if qual in torchapi.TENSOR_FUNCTIONS or qual in torchapi.TENSOR_CONSTRUCTORS:
                kw = keyword(call, "device")
                if kw is None and qual in torchapi.FACTORIES and residence.makes_on_default_device(call, qual):
                    return Value(Kind.TENSOR, residence.HOST_DEFAULT)
                if kw is None and qual in torchapi.TENSOR_FUNCTIONS and qual not in torchapi.FACTORIES:
                    # `torch.mean(x)`, `F.softmax(x, -1)`: computed where x lives.
                    first = call.args[0] if call.args else None
                    if first is not None and first.keyword is None and not first.star:
                        data = self.value_of(first.value)
                        return Value(Kind.TENSOR, data.device if data.is_tensor else None)
                return Value(Kind.TENSOR, self.device_of(kw) if kw is not None else None)
            if qual == "torch.Generator":
                return Value(Kind.GENERATOR, self._generator_device(call))
            if torchapi.is_module_constructor(qual):
                if qual in torchapi.DATA_PARALLEL and call.args and call.args[0].keyword is None:
                    # `DataParallel(model)` holds the module where it already is.
                    inner = self.value_of(call.args[0].value)
                    return Value(Kind.MODULE, inner.device if inner.is_module else None, cls=qual)
                return Value(Kind.MODULE, cls=qual)
            if optimizers.is_optimizer_class(qual):  # not `torch.optim.lr_scheduler.StepLR`
                return Value(Kind.OPTIMIZER)
            if qual in torchapi.DEVICE_COUNT_PROBES:
                return Value(Kind.DEVICE_COUNT)
            if qual in torchapi.AVAILABILITY_PROBES:
                return Value(Kind.AVAILABILITY)
            return UNKNOWN
        if isinstance(func, cst.Name):
            cls = self.classes.get(func.value)
            if cls is not None and self.lookup(func.value) is None:
                return Value(Kind.MODULE if cls.is_module else Kind.OBJECT, cls=cls.name)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method == "type":
                cast = residence.legacy_type_device(self, call)
                if cast is not None:  # `x.type(torch.FloatTensor)`: a tensor, whatever x was
                    return Value(Kind.TENSOR, cast)
            receiver = self.value_of(func.value)
            if (receiver.is_tensor or receiver.kind is Kind.MODULE_OUTPUT) and method in torchapi.TENSOR_RETURNING_METHODS:
                return Value(Kind.TENSOR, self._moved_device(call, method, receiver.device))
            if receiver.is_module and method in torchapi.MODULE_RETURNING_METHODS:
                return Value(Kind.MODULE, self._moved_device(call, method, receiver.device), receiver.cls)
            if receiver.kind is Kind.GENERATOR and method == "manual_seed":
                return receiver
        callee = self.value_of(func)
        if callee.is_module:
            return Value(Kind.MODULE_OUTPUT, callee.device)  # it lives where the module does
        return UNKNOWN

    def _moved_device(self, call: cst.Call, method: str, before: Optional[Device]) -> Optional[Device]:
        """Where `x.<method>(...)` leaves x's data."""
        if method in ("cuda", "mps", "xpu"):
            return Device(method, literal=True)
        if method == "cpu":
            return Device("cpu", literal=True)
        if method == "type":
            return residence.legacy_type_device(self, call) or before
        if method == "to":
            target = keyword(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
            if target is not None:
                device = self.device_of(target)
                if device is not None:
                    return device
                if self.value_of(target).is_tensor:
                    return self.value_of(target).device
                if not self.is_dtype(target):
                    # A device we cannot name; or, for what may as well be a dtype, unknown.
                    return Device() if residence.target_may_be_accelerator(self, target) else None
        return before

    def _generator_device(self, call: cst.Call) -> Optional[Device]:
        """`torch.Generator()` draws on the CPU; `torch.Generator(device=d)` on d."""
        arg = keyword(call, "device") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
        if arg is None:
            return Device("cpu")
        device = self.device_of(arg)
        if device is not None:
            return device
        return Device() if residence.target_may_be_accelerator(self, arg) else None

    def _torch_device(self, call: cst.Call) -> Device:
        """`torch.device('cuda')`, `torch.device('cuda', 1)`, `torch.device(type='cuda', index=1)`."""
        positional = [a.value for a in call.args if a.keyword is None]
        first = positional[0] if positional else keyword(call, "type")
        if first is None:
            return Device()
        inner = self.device_of(first) if not isinstance(first, cst.Name) or self.lookup(first.value) else None
        if inner is None:
            return Device()
        index_expr = positional[1] if len(positional) > 1 else keyword(call, "index")
        if isinstance(index_expr, cst.Integer):
            return Device(inner.type, int(index_expr.value), inner.literal, inner.guarded)
        return inner

    def _ifexp_value(self, expr: cst.IfExp) -> Value:
        body, orelse = self.value_of(expr.body), self.value_of(expr.orelse)
        if body.kind in (Kind.DEVICE, Kind.DEVICE_STRING) or orelse.kind in (Kind.DEVICE, Kind.DEVICE_STRING):
            guarded = guards.mentions_availability(self, expr.test)
            # A torch.device only when both branches are; otherwise it may be a str.
            kind = Kind.DEVICE if body.kind is orelse.kind is Kind.DEVICE else Kind.DEVICE_STRING
            types = {v.device.type for v in (body, orelse) if v.device is not None}
            dtype = types.pop() if len(types) == 1 and body.kind is orelse.kind else None
            if dtype is None and not guarded and guards.true_by_default(self, expr.test):
                # `"cuda" if use_gpu else "cpu"` with `use_gpu = True`: the
                # accelerator branch is taken where there is none.
                accelerators = types & torchapi.ACCELERATOR_TYPES
                dtype = accelerators.pop() if len(accelerators) == 1 else None
            # `"cuda:4" if torch.cuda.is_available() else "cpu"`: the type is chosen,
            # but the accelerator branch's ordinal is still hardcoded (DEV104).
            fallback = orelse.device
            if (
                guarded and fallback is not None and fallback.literal and fallback.is_accelerator
                and type(expr.test) is cst.Call
                and torchapi.PROBED_TYPE.get(self.qualify(expr.test.func) or "", fallback.type) != fallback.type
            ):
                # `"cuda" if torch.cuda.is_available() else "mps"`: without CUDA, MPS unchecked.
                return Value(kind, Device(fallback.type, fallback.index, literal=True))
            indices = {v.device.index for v in (body, orelse) if v.device is not None and v.device.is_accelerator}
            index = indices.pop() if dtype is None and len(indices) == 1 else None
            if index is not None and guards.mentions_device_count(self, expr.test):
                index = None  # `"cuda:1" if torch.cuda.device_count() > 1 else "cpu"`: checked
            return Value(kind, Device(dtype, index, literal=not guarded and dtype is not None, guarded=guarded))
        return body if body.kind is orelse.kind else UNKNOWN



ENTER_HOOKS: dict[type, Callable[["Context", Any], None]] = {
    cst.Module: Context._enter_module,
    cst.Import: Context._enter_import,
    cst.ImportFrom: Context._enter_import_from,
    cst.ClassDef: Context._enter_class,
    cst.FunctionDef: Context._enter_function,
    cst.Call: Context._enter_call,
    cst.For: Context._enter_for,
}
LEAVE_HOOKS: dict[type, Callable[["Context", Any], None]] = {
    cst.ClassDef: Context._leave_scope,
    cst.FunctionDef: Context._leave_scope,
    cst.Assign: Context._leave_assign,
    cst.AnnAssign: Context._leave_ann_assign,
    cst.If: Context._leave_guardable,
    cst.Assert: Context._leave_guardable,
    cst.For: Context._leave_for,
    cst.Expr: Context._leave_expr,
}

def _iterates_a_loader(ctx: Context, expr: cst.BaseExpression) -> Optional[bool]:
    """`loader`, `enumerate(loader)`, `tqdm(loader)`, `tqdm(enumerate(loader))`,
    where `loader` is bound, for certain, to a `DataLoader(...)` built here.
    None if not; else whether an `enumerate` counts the batches."""
    from . import bindings, dataloading  # both import this module

    expr, counted = dataloading.unwrap_iteration(ctx, expr)
    if isinstance(expr, cst.Call):
        return counted if dataloading.is_dataloader(ctx, expr) else None
    if not isinstance(expr, cst.Name):
        return None
    source = bindings.certain_source(ctx, expr)
    return counted if isinstance(source, cst.Call) and dataloading.is_dataloader(ctx, source) else None


def keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


# Module methods that yield its tensors (`named_*`: with their names).
_PARAMETER_ITERATORS = frozenset({"parameters", "buffers", "named_parameters", "named_buffers"})

# What stands for the index in `"cuda:%d" % i`, `"cuda:%02d"`, `"cuda:{}".format(i)`,
# `"cuda:{:d}"`, `"cuda:{rank}"` (nothing for `"cuda:" + str(i)` and f-strings).
_INDEX_PLACEHOLDER = re.compile(r"|%[-+ #0]*\d*[dis]|\{\w*(?::[^{}]*)?\}")


def _built_device_string(expr: cst.BaseExpression) -> Optional[Value]:
    """A device string built at run time whose type is written out:
    `f"cuda:{rank}"`, `"cuda:" + str(i)`, `"cuda:%d" % i` — the type is as
    hardcoded as in `"cuda"`; only the index is chosen."""
    if isinstance(expr, cst.FormattedString):
        head = expr.parts[0] if expr.parts else None
        prefix = head.value if isinstance(head, cst.FormattedStringText) and len(expr.parts) > 1 else None
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Modulo)):
        prefix = _string(expr.left)
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
        prefix = _string(expr.func.value)  # `"cuda:{}".format(i)`
    else:
        prefix = None
    if prefix is None:
        return None
    device_type, colon, rest = prefix.partition(":")
    if not colon or device_type not in torchapi.DEVICE_TYPES or not _INDEX_PLACEHOLDER.fullmatch(rest):
        return None
    return Value(Kind.DEVICE_STRING, Device(device_type, literal=True))


def _string(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


string_value = _string


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _assigned_names(small: cst.BaseSmallStatement) -> list[str]:
    if isinstance(small, cst.Assign):
        return [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]
    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
        return [small.target.value]
    return []


def _top_level_function(stack: list) -> Optional[str]:
    """The name of the module-level function a node is in (not a method)."""
    if len(stack) > 1 and type(stack[0]) is cst.Module and type(stack[1]) is cst.FunctionDef:
        return stack[1].name.value
    return None
