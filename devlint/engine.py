"""read -> parse -> one walk with every enabled rule -> diagnostics.

Each file is read once and parsed once. A single visitor walks the tree: for
every node it updates the semantic context, then hands the node to the rules
that asked for its type. Positions are computed only for files with findings.
"""

from __future__ import annotations

import gc
import io
import tokenize
import warnings
from collections import Counter
from contextlib import contextmanager
from functools import lru_cache
from dataclasses import dataclass, field, replace
from typing import Iterator, Optional, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .diagnostics import Diagnostic, Edit, Fix, Location
from .indentation import ExpandedIndent, expand_indent_tabs
from .rule import Report, Rule
from .semantics import Context
from .semantics.tree import FIELDS, NODE_TYPES, child_fields, is_node
from . import codegen, suppression

SYNTAX_ERROR = ("DEV000", "syntax-error")
# Work done in this process, for tests that guard against regressions by
# counting (never by timing): parses and walks of whole files.
WORK: Counter[str] = Counter()
# A file that cannot mention torch cannot hold a finding: every rule reasons
# about names that resolve into torch.
TORCH_MARKER = "torch"


@dataclass
class SourceFile:
    """A file's text as decoded, and what is needed to write it back unchanged."""

    text: str
    encoding: str = "utf-8"
    bom: bool = False

    @classmethod
    def from_bytes(cls, data: bytes) -> "SourceFile":
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        bom = encoding == "utf-8-sig"
        text = data.decode(encoding)  # utf-8-sig strips the BOM
        return cls(text, "utf-8" if bom else encoding, bom)

    def to_bytes(self, text: str) -> bytes:
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode(self.encoding)


@dataclass
class FileResult:
    filename: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: Optional[str] = None  # why the file could not be linted at all
    parsed: bool = False  # whether the file needed a parse (for work counting)
    fixed_text: Optional[str] = None  # new text when fixes were applied
    fixes_applied: int = 0
    diff: Optional[str] = None  # unified diff of the fixes, with --diff


class Walker:
    """One walk over the tree: semantic bookkeeping first, then the rules that
    asked for this node type. Iterates node fields directly: libcst's own
    `visit` rebuilds every node and costs half a parse on its own."""

    def __init__(self, ctx: Context, rules: Sequence[Rule]) -> None:
        self.ctx = ctx
        self.visit_hooks: dict[type, list] = {}
        self.leave_hooks: dict[type, list] = {}
        for rule in rules:
            for name in rule.hooks():
                kind, _, type_name = name.partition("_")
                node_type = getattr(cst, type_name)
                table = self.visit_hooks if kind == "visit" else self.leave_hooks
                table.setdefault(node_type, []).append(getattr(rule, name))

    def walk(self, root: cst.CSTNode) -> None:
        # Everything the inner loop touches is a local: this runs for every
        # node of every parsed file. `ctx.enter`/`ctx.leave` are inlined.
        ctx = self.ctx
        stack = ctx.stack
        enter_semantics, leave_semantics = ctx.enter_hooks, ctx.leave_hooks
        visit_hooks, leave_hooks = self.visit_hooks, self.leave_hooks
        node_types = NODE_TYPES
        fields = FIELDS

        def walk(node: cst.CSTNode) -> None:
            node_type = type(node)
            stack.append(node)
            hook = enter_semantics.get(node_type)
            if hook is not None:
                hook(ctx, node)
            hooks = visit_hooks.get(node_type)
            if hooks:
                for hook in hooks:
                    hook(node)
            # semantics/tree.children's iteration, inlined: no list per node.
            names = fields.get(node_type)
            if names is None:
                names = child_fields(node_type)
            for name in names:
                value = getattr(node, name)
                value_type = type(value)
                if value_type is tuple or value_type is list:
                    for item in value:
                        known = node_types.get(type(item))
                        if known or (known is None and is_node(item)):
                            walk(item)
                else:
                    known = node_types.get(value_type)
                    if known or (known is None and is_node(value)):
                        walk(value)
            hooks = leave_hooks.get(node_type)
            if hooks:
                for hook in hooks:
                    hook(node)
            hook = leave_semantics.get(node_type)
            if hook is not None:
                hook(ctx, node)
            stack.pop()

        try:
            walk(root)
        finally:
            walk = None  # type: ignore[assignment]  # the closure refers to itself: let refcounting free the tree


def _validate_nothing(self: cst.CSTNode) -> None:
    pass


@contextmanager
def _unvalidated() -> Iterator[None]:
    """No node validation while the parser builds a tree. It builds some 15
    nodes per line, and each node's `__post_init__` validates it (whitespace,
    parentheses, names): about a sixth of the parse, spent proving what the
    parser just guaranteed (libcst's own PERF note on `CSTNode.__post_init__`
    says so). Nodes that rules build for fixes are made outside this block and
    still validated; fixed text is re-parsed before it is written."""
    post_init = cst.CSTNode.__dict__.get("__post_init__")
    if post_init is None:  # a libcst that validates elsewhere: leave it alone
        yield
        return
    cst.CSTNode.__post_init__ = _validate_nothing  # type: ignore[method-assign]
    try:
        yield
    finally:
        cst.CSTNode.__post_init__ = post_init  # type: ignore[method-assign]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic collection while one file is parsed and walked: left on, the
    collector would re-scan the growing tree every few hundred allocations.
    The tree itself is freed by reference counting once the file is done
    (nothing of the walk is in a cycle; tests/test_work.py checks)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def parse_module(text: str) -> cst.Module:
    """libcst's parse, without re-validating what the parser built."""
    with _unvalidated():
        return cst.parse_module(text)


def rules_for_text(text: str, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """The rules that could fire on this text at all (sound pre-parse filter)."""
    if TORCH_MARKER not in text:
        return []
    seen: dict[str, bool] = {}  # rules share triggers (`cuda`, `device`, factories): search each once
    active = []
    for rule in rules:
        if not rule.triggers:
            active.append(rule)
            continue
        for trigger in rule.triggers:
            hit = seen.get(trigger)
            if hit is None:
                hit = seen[trigger] = any(form in text for form in _forms(trigger))
            if hit:
                active.append(rule)
                break
    return active


def could_match(text: str, rules: Sequence[type[Rule]]) -> bool:
    """`bool(rules_for_text(text, rules))`, answered at the first trigger found.
    A warm run asks only this of every file; shorter triggers are tried first,
    since they occur most often."""
    if TORCH_MARKER not in text:
        return False
    if any(not rule.triggers for rule in rules):
        return True
    return any(trigger in text for trigger in _triggers_by_length(tuple(rules)))


@lru_cache(maxsize=8)
def _triggers_by_length(rules: tuple[type[Rule], ...]) -> tuple[str, ...]:
    forms = {f for rule in rules for t in rule.triggers for f in _forms(t)}
    return tuple(sorted(forms, key=lambda t: (len(t), t)))


@lru_cache(maxsize=None)
def _forms(trigger: str) -> tuple[str, ...]:
    """The texts that show a trigger. A call trigger (`zeros(`) also shows as
    the import that renames the function (`from torch import zeros as z`,
    then `z(3)`): the call itself never spells the name."""
    stem = trigger[:-1]
    if trigger.endswith("(") and stem.isidentifier():
        return (trigger, f"{stem} as ")
    return (trigger,)


def lint_source(text: str, filename: str, rules: Sequence[type[Rule]], prefilter: bool = True) -> FileResult:
    result = FileResult(filename)
    active = rules_for_text(text, rules) if prefilter else list(rules)
    if not active:
        return result
    result.parsed = True
    with _gc_paused():
        return _parse_and_walk(text, result, active)


def _parse_and_walk(text: str, result: FileResult, active: Sequence[type[Rule]]) -> FileResult:
    filename = result.filename
    WORK["parses"] += 1
    expanded: Optional[ExpandedIndent] = None
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError as exc:
        expanded = _readable_copy(text)
        if expanded is None:
            line, col, message = _syntax_error_position(text, exc)
            result.diagnostics.append(_diagnostic(SYNTAX_ERROR, message, filename, line, col, line, col))
            return result
        text = expanded.text
        module = parse_module(text)
    except RecursionError:
        result.diagnostics.append(_diagnostic(SYNTAX_ERROR, "file is nested too deeply to parse", filename, 1, 1, 1, 1))
        return result

    ctx = Context(text)
    reports: list[Report] = []
    instances = [r(ctx, reports) for r in active]
    WORK["walks"] += 1
    try:
        Walker(ctx, instances).walk(module)
        sink = reports
        reports = [r for r in sink if r.condition is None or r.condition()]
        for report in sink:
            # Conditions close over their rule, which holds `sink`: a cycle that
            # would leave the tree to the cyclic collector instead of refcounting.
            report.condition = None
    except SyntaxError:
        # libcst takes string literals CPython refuses (a NUL byte, `"\N{nope}"`,
        # `b"\xzz"`); a rule evaluating one trips on it. If CPython refuses the
        # file too, it is the syntax error CPython says it is.
        refused = _cpython_refuses(text)
        if refused is None:
            raise
        line, col, message = refused
        result.diagnostics = [_diagnostic(SYNTAX_ERROR, message, filename, line, col, line, col)]
        return result
    if reports:
        # The position walk and block indents rebuild parsed nodes: validating
        # them again would only re-prove the parse, and libcst's validator
        # rejects some code CPython accepts (`assert(x if c else y)`).
        with _unvalidated():
            result.diagnostics = _positioned(module, reports, filename)
        result.diagnostics = suppression.filter_noqa(text, result.diagnostics)
        if expanded is not None:
            result.diagnostics = [_in_original(d, expanded) for d in result.diagnostics]
    return result


def _readable_copy(text: str) -> Optional[ExpandedIndent]:
    """For a file libcst refuses: a copy with its indentation's tabs expanded,
    if CPython compiles the file and libcst parses the copy."""
    if "\t" not in text or compile_error(text) is not None:
        return None
    expanded = expand_indent_tabs(text)
    if expanded is None:
        return None
    try:
        parse_module(expanded.text)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    return expanded


def _in_original(diagnostic: Diagnostic, expanded: ExpandedIndent) -> Diagnostic:
    """A finding of the tab-expanded copy, placed in the original file. Its
    fix is dropped: the fix's text was written for the copy's indentation."""
    return replace(
        diagnostic,
        start=expanded.original(diagnostic.start),
        end=expanded.original(diagnostic.end),
        fix=None,
    )


_NUL_MESSAGE = "SyntaxError: source code cannot contain null bytes"


def compile_error(text: str) -> Optional[Exception]:
    """What CPython's compiler raises on `text`, or None if it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings must not reach stderr
            compile(text, "<devlint>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return exc
    return None


def _nul_position(text: str) -> Optional[tuple[int, int]]:
    """(line, column) of the first NUL byte, which CPython refuses without a position."""
    nul = text.find("\0")
    if nul < 0:
        return None
    return text.count("\n", 0, nul) + 1, nul - (text.rfind("\n", 0, nul) + 1) + 1


def _cpython_refuses(text: str) -> Optional[tuple[int, int, str]]:
    """(line, column, message) of CPython's syntax error in `text`, or None if it compiles."""
    error = compile_error(text)
    if error is None:
        return None
    if not isinstance(error, SyntaxError):
        return 1, 1, f"SyntaxError: {error}"
    nul = None if error.lineno else _nul_position(text)
    if nul is not None:
        return (*nul, _NUL_MESSAGE)
    return error.lineno or 1, max(error.offset or 1, 1), f"SyntaxError: {error.msg}"


def _syntax_error_position(text: str, exc: cst.ParserSyntaxError) -> tuple[int, int, str]:
    """libcst's native parser places errors loosely; CPython's own parser is
    exact, so ask it on this (rare) path. Falls back to libcst's position."""
    error = compile_error(text)
    if isinstance(error, SyntaxError) and error.lineno:
        return error.lineno, max(error.offset or 1, 1), f"SyntaxError: {error.msg}"
    nul = _nul_position(text)
    if nul is not None:
        return (*nul, _NUL_MESSAGE)
    if error is None:
        message = f"devlint's parser (libcst) cannot read this file, though Python compiles it: {exc.message}"
    else:
        message = f"SyntaxError: {exc.message}"
    return max(exc.raw_line, 1), exc.raw_column + 1, message


def _positioned(module: cst.Module, reports: list[Report], filename: str) -> list[Diagnostic]:
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    replaced = [old for report in reports if report.fix is not None for old, _ in report.fix.replacements]
    indents = codegen.block_indents(module, replaced) if replaced else {}
    out: list[Diagnostic] = []
    seen: set[tuple] = set()
    for report in reports:
        pos = positions[report.node]
        key = (report.rule.code, pos.start.line, pos.start.column)
        if key in seen:  # two hooks of one rule on one spot: report once
            continue
        seen.add(key)
        fix = None
        if report.fix is not None:
            edits = tuple(
                Edit(
                    _loc(positions[old].start),
                    _loc(positions[old].end),
                    codegen.code_in_block(module, new, indents.get(id(old), ())),
                )
                for old, new in report.fix.replacements
            )
            fix = Fix(report.fix.title, report.fix.applicability, edits)
        out.append(
            Diagnostic(
                report.rule.code, report.rule.name, report.message, filename,
                _loc(pos.start), _loc(pos.end), fix,
            )
        )
    out.sort(key=Diagnostic.sort_key)
    return out


def _loc(pos) -> Location:
    return Location(pos.line, pos.column + 1)


def _diagnostic(kind: tuple[str, str], message: str, filename: str, line: int, col: int, end_line: int, end_col: int) -> Diagnostic:
    return Diagnostic(kind[0], kind[1], message, filename, Location(line, col), Location(end_line, end_col))
