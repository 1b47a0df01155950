from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import Kind, bindings, keyword, loops
from ..semantics.names import dotted
from ..semantics.tree import children, iter_subtree
from ..semantics.placements import LOADERS


class LoadWithoutMapLocation(Rule):
    """
    ## What it does
    Flags `torch.load(...)` and `torch.jit.load(...)` without a
    `map_location`, or with a literal CUDA one (`map_location="cuda"`), that
    no `torch.cuda.is_available()` check guards.

    ## Why is this bad?
    `torch.load` puts every tensor back on the device it was saved from. A
    checkpoint written on a GPU machine — most of them — then fails to load
    anywhere without one:
    `RuntimeError: Attempting to deserialize object on a CUDA device but
    torch.cuda.is_available() is False`.

    `map_location=device`, `map_location=lambda storage, loc: storage`, a
    positional map location, `**kwargs` and a load under a CUDA guard are
    not flagged; nor is an in-memory round trip: loading an `io.BytesIO` in
    a file whose own `torch.save` writes into one (a broadcast, results sent
    back by a worker process), or reading back the path the same function
    just saved to (`torch.save(model, path)`, then `torch.load(path)`, also
    through a name, or after handing the model and the folder to a helper
    such as `early_stopping(val_loss, model, path)`, or the model to an object
    built with the path, `stopper = EarlyStopping(save_path=path)` then
    `stopper.step(score, model)`), or a cache (`if
    os.path.exists(cache): x = torch.load(cache)` whose `else:` builds `x`
    and saves it to `cache`, with `torch.save` or a helper named for saving,
    `save_on_master(x, cache)`): this run wrote it, on this machine. Nor is a file that never names or uses an accelerator
    reading back a path its own `torch.save` writes: its checkpoints hold CPU
    tensors (a function that takes a `device` from its caller may be handed a
    GPU, so such a file is not one). Bytes from elsewhere — a file, a network response — are still
    checkpoints from another machine.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")
    ```

    ## Fix safety
    Unsafe: the fix adds `map_location=device` when a `device` chosen in the
    same scope is known, else `map_location="cpu"`. Tensors then land on that
    device rather than where they were saved, which code that relied on a
    GPU-saved checkpoint loading straight onto the GPU may notice. No fix is
    offered for a literal CUDA map location (DEV101 offers one).
    """

    code = "DEV103"
    name = "load-without-map-location"
    message = "`{func}` without `map_location` fails on machines without a GPU when the checkpoint was saved from CUDA"
    literal_message = "`{func}` with a CUDA `map_location` fails on machines without a GPU"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("no-accel",),
        summary="RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False",
        raises="RuntimeError",
        match=r"Attempting to deserialize object on a CUDA device but torch\.cuda\.is_available\(\) is False",
    )
    triggers = ("load",)

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        self._buffers: dict[int, set[str]] = {}  # per scope: names bound to an io.BytesIO
        self._saves_to_memory = False  # the file torch.saves into an in-memory buffer
        self._saved: dict[int, set[str]] = {}  # per scope: the paths torch.save wrote so far
        self._saved_in_file: set[str] = set()  # every path the file's torch.save calls write
        self._opened: dict[int, dict[str, str]] = {}  # per scope: `with open(path) as f`, f -> path
        # Per scope: names given to a call together with a model so far
        # (`early_stopping(val_loss, model, path)`): where a helper may have saved it.
        self._handed_with_model: dict[int, set[str]] = {}
        # Per scope: object name -> the names its constructor was given
        # (`stopper = EarlyStopping(save_path=path)`), handed over with the model
        # when a method of the object is (`stopper.step(score, model)`).
        self._built_with: dict[int, dict[str, set[str]]] = {}

    def visit_WithItem(self, node: cst.WithItem) -> None:
        call, target = node.item, node.asname.name if node.asname else None
        if (
            isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "open"
            and isinstance(target, cst.Name) and call.args and call.args[0].keyword is None
        ):
            self._opened.setdefault(id(self.ctx.scopes[-1].node), {})[target.value] = _source(call.args[0].value)

    def visit_Assign(self, node: cst.Assign) -> None:
        scope = id(self.ctx.scopes[-1].node)
        names = self._buffers.setdefault(scope, set())
        built = self._built_with.setdefault(scope, {})
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                if self._is_buffer_call(node.value):
                    names.add(target.target.value)
                else:
                    names.discard(target.target.value)
            holder = dotted(target.target)
            if holder is not None:
                given = _names_given(node.value) if type(node.value) is cst.Call else set()
                if given:
                    built[holder] = given
                else:
                    built.pop(holder, None)

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualify(node.func)
        if qual == "torch.save":
            target = _argument(node, 1, "f")
            if self._in_memory(target):
                self._saves_to_memory = True
            elif target is not None:
                self._saved.setdefault(id(self.ctx.scopes[-1].node), set()).add(self._path(target))
                self._saved_in_file.add(self._path(target))
            return
        if qual not in LOADERS or any(arg.star for arg in node.args):
            self._note_model_handed_over(node)
            return
        func = "torch.jit.load" if "jit" in qual else "torch.load"
        where = _argument(node, 1, "map_location")
        unguarded = self.ctx.unguarded()
        condition = unguarded
        if self._in_memory(_argument(node, 0, "f")):
            # Bytes in memory that this code's own torch.save wrote (a broadcast,
            # a result sent back by a worker): a round trip, not a checkpoint
            # from another machine.
            condition = lambda: not self._saves_to_memory and unguarded()  # noqa: E731
        if where is None or (isinstance(where, cst.Name) and where.value == "None"):
            source = _argument(node, 0, "f")
            if source is not None and (self._written_by_this_run(source) or self._cached_here(source)):
                return  # what this run just saved, on this machine: a round trip
            if source is not None and not loops.file_may_use_accelerator(self.ctx):
                # A file that never touches an accelerator, reading back a path its
                # own `torch.save` writes (`save_model` / `load_model`): CPU tensors.
                path, saved, before = self._path(source), self._saved_in_file, condition
                condition = lambda: path not in saved and before()  # noqa: E731
            self.report(node, self.message.format(func=func), fix=self._fix(node, where), condition=condition)
            return
        device = self.ctx.device_of(where)
        if device is not None and device.hardcoded("cuda"):
            self.report(node, self.literal_message.format(func=func), condition=unguarded)

    def _written_by_this_run(self, source: cst.BaseExpression) -> bool:
        """Did the same function just write this path? With `torch.save` to the
        same text (also through a name: `best = path + "/ckpt.pth"`), or with
        a helper it handed the model and the path's folder to
        (`early_stopping(val_loss, model, path)`, then
        `torch.load(path + "/checkpoint.pth")`)."""
        scope = id(self.ctx.scopes[-1].node)
        saved = self._saved.get(scope, set())
        handed = self._handed_with_model.get(scope, set())
        candidates = [source]
        if isinstance(source, cst.Name):
            candidates += bindings.assigned_expressions(self.ctx, source)
        for candidate in candidates:
            if self._path(candidate) in saved:
                return True
            if handed and any(dotted(n) in handed for n in _whole_names(candidate)):
                return True
        return False

    def _cached_here(self, source: cst.BaseExpression) -> bool:
        """A cache: `if cache.exists(): x = torch.load(cache)`, whose `else:`
        builds `x` and saves it to the same path, on this machine: with
        `torch.save`, or a saving helper handed that path
        (`save_on_master((dataset, root), cache)`)."""
        path = self._path(source)
        stack = self.ctx.stack
        for i in range(len(stack) - 2, -1, -1):
            node = stack[i]
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(node, cst.If) and stack[i + 1] is node.body and node.orelse is not None:
                for call in iter_subtree(node.orelse):
                    if type(call) is cst.Call and self._saves_to(call, path):  # type: ignore[arg-type]
                        return True
        return False

    def _saves_to(self, call: cst.Call, path: str) -> bool:
        """Does this call write `path`: `torch.save(x, path)`, or a helper named
        for saving that is handed the path itself (`save_on_master(x, path)`,
        `utils.save_checkpoint(state, filename=path)`)?"""
        if self.ctx.qualify(call.func) == "torch.save":
            target = _argument(call, 1, "f")
            return target is not None and self._path(target) == path
        leaf = (dotted(call.func) or "").rsplit(".", 1)[-1].lower()
        if not any(word in leaf for word in _SAVING_WORDS):
            return False
        return any(not arg.star and self._path(arg.value) == path for arg in call.args)

    def _note_model_handed_over(self, call: cst.Call) -> None:
        """`early_stopping(val_loss, self.model, path)`, `save_checkpoint(model,
        opt, ckpt_dir)`: remember the other names handed over with the model."""
        values = [a.value for a in call.args if not a.star]
        # The model as a name or its state, not a module built inline (`act=nn.ReLU()`),
        # and not handed to a constructor (`Net(width=width, act=act)` builds a model).
        handed = [v for v in values if type(v) in (cst.Name, cst.Attribute) or _is_state_dict(v)]
        if len(values) < 2 or not any(self._is_model(v) for v in handed) or self.ctx.value_of(call).is_module:
            return
        callee = self.ctx.qualify(call.func) or dotted(call.func) or ""
        if callee.split(".", 1)[0] in ("os", "pathlib", "shutil", "glob") or isinstance(call.func, cst.Attribute) and isinstance(call.func.value, (cst.SimpleString, cst.FormattedString)):
            return  # a path being built, not a model being saved
        # What else was handed over: names, and the names a path is built from
        # (`os.path.join(args.out, "m.pt")`); for a method, what its object was built with.
        names = _names_given(call, skip=self._is_model)
        scope = id(self.ctx.scopes[-1].node)
        if isinstance(call.func, cst.Attribute):
            names |= self._built_with.get(scope, {}).get(dotted(call.func.value) or "", set())
        if names:
            self._handed_with_model.setdefault(scope, set()).update(names)

    def _is_model(self, expr: cst.BaseExpression) -> bool:
        """A module, or its state: `model`, `self.net`, `model.state_dict()`."""
        if _is_state_dict(expr):
            return True
        if self.ctx.value_of(expr).is_module:
            return True
        # By its name: `model`, `self.net` (not `args.model`, which names one).
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            leaf = expr.attr.value.lower()
        elif isinstance(expr, cst.Name):
            leaf = expr.value.lower()
        else:
            return False
        return leaf in ("model", "net", "network") or leaf.endswith(("_model", "_net"))

    def _path(self, expr: cst.BaseExpression) -> str:
        """The path a save or load names: its text, or for a file object from
        `with open(path) as f`, the text of `path`."""
        if isinstance(expr, cst.Name):
            opened = self._opened.get(id(self.ctx.scopes[-1].node), {})
            if expr.value in opened:
                return opened[expr.value]
        return _source(expr)

    def _is_buffer_call(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self.ctx.qualify(expr.func) == "io.BytesIO"

    def _in_memory(self, expr: Optional[cst.BaseExpression]) -> bool:
        """`io.BytesIO(...)`, or a name bound to one in an enclosing scope."""
        if expr is None:
            return False
        if self._is_buffer_call(expr):
            return True
        if not isinstance(expr, cst.Name):
            return False
        for scope in reversed(self.ctx.scopes):
            if expr.value in self._buffers.get(id(scope.node), ()):
                return True
            if expr.value in scope.names or expr.value in scope.params:
                return False
        return False

    def _fix(self, call: cst.Call, where: Optional[cst.BaseExpression]) -> Optional[NodeFix]:
        stack = self.ctx.stack
        if len(stack) >= 3 and isinstance(stack[-2], cst.Arg) and isinstance(stack[-3], cst.Call):
            if keyword(stack[-3], "map_location") is not None:
                # `m.load_state_dict(torch.load(p), map_location=d)`: the map
                # location is on the wrong call; moving it is the author's fix.
                return None
        chosen = self._chosen_device()
        value = cst.Name(chosen) if chosen else cst.SimpleString('"cpu"')
        title = f"Load onto `{chosen}`" if chosen else 'Load onto the CPU (`map_location="cpu"`)'
        if where is not None:  # map_location=None
            return self.fix(title, [(where, value)])
        return self.fix(title, [(call, _append_keyword(call, "map_location", value))])

    def _chosen_device(self) -> Optional[str]:
        """`device` when it is bound in scope to a device chosen at run time."""
        value = self.ctx.lookup("device")
        if value is None or value.kind not in (Kind.DEVICE, Kind.DEVICE_STRING) or value.device is None:
            return None
        if value.device.literal and value.device.is_accelerator:
            return None  # a hardcoded accelerator is the problem, not the answer
        return "device"


def _is_state_dict(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "state_dict"


# A helper named with one of these writes what it is handed (`save_on_master`,
# `pickle_dump`, `write_cache`); a logging call handed the path does not.
_SAVING_WORDS = ("save", "dump", "write", "store")


def _source(expr: cst.BaseExpression) -> str:
    """A path expression as written (`ckpt_path`, `"model.pt"`, `os.path.join(d, "m.pt")`)."""
    return cst.Module([]).code_for_node(expr)


def _whole_names(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names and attribute chains an expression is built from, whole:
    `args.checkpoint`, not `args` inside it; `folder` in `os.path.join(folder, "x")`."""
    found: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if type(node) in (cst.Name, cst.Attribute):
            found.append(node)  # type: ignore[arg-type]
        elif type(node) is cst.Call:
            stack.extend(a.value for a in node.args)  # type: ignore[attr-defined]  # not the function's name
        else:
            stack.extend(children(node))
    return found


def _names_given(call: cst.Call, skip: Callable[[cst.BaseExpression], bool] = lambda _: False) -> set[str]:
    """The names and attribute chains a call's arguments are built from, whole
    (`folder`, `args.out` in `f(os.path.join(args.out, "m.pt"))`), except
    arguments `skip` accepts."""
    found: set[str] = set()
    for arg in call.args:
        if arg.star or skip(arg.value):
            continue
        for node in _whole_names(arg.value):
            name = dotted(node)
            if name is not None:
                found.add(name)
    return found


def _argument(call: cst.Call, index: int, name: str) -> Optional[cst.BaseExpression]:
    """The argument passed as `name=` or at position `index`."""
    found = keyword(call, name)
    if found is not None:
        return found
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[index] if len(positional) > index else None


def _append_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`f(a)` -> `f(a, name=value)`, keeping a multi-line call's layout."""
    arg = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    args = list(call.args)
    if not args:
        return call.with_changes(args=[arg])
    last = args[-1]
    if not isinstance(last.comma, cst.Comma):
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        return call.with_changes(args=[*args, arg])
    # A trailing comma: one argument per line. The new one goes last, indented
    # like the others; a comment after the old last argument stays with it.
    before = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) else call.whitespace_before_args
    after = last.comma.whitespace_after
    if isinstance(before, cst.ParenthesizedWhitespace) and isinstance(after, cst.ParenthesizedWhitespace):
        args[-1] = last.with_changes(
            comma=last.comma.with_changes(whitespace_after=after.with_changes(indent=before.indent, last_line=before.last_line))
        )
        closing = cst.ParenthesizedWhitespace(indent=after.indent, last_line=after.last_line)
        return call.with_changes(args=[*args, arg.with_changes(comma=cst.Comma(whitespace_after=closing))])
    args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, arg.with_changes(comma=last.comma)])
