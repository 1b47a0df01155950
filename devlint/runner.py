"""Lint many files: read each once, lint (or fix) it, on every core when there
are enough files to pay for the worker processes.

One file goes through `lint_path`: read -> open as a document (a Python file,
or a notebook's code cells) -> the cache, or lint / fix -> write back.
"""

from __future__ import annotations

import difflib
import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from . import isolation, registry, suppression
from .cache import Cache
from .config import BUILTIN_CODES, Selection
from .diagnostics import Diagnostic, diff_labels
from .engine import FileResult, SourceFile, could_match, lint_source
from .fixes import apply_edits, fix_source, parses, write_atomic
from .notebooks import Notebook, NotebookError, is_notebook
from .rule import Rule

# Below this many files, worker start-up costs more than it saves.
PARALLEL_THRESHOLD = 24


@dataclass(frozen=True)
class Settings:
    codes: tuple[str, ...]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes, print a diff, write nothing
    prefilter: bool = True
    selection: Optional[Selection] = None  # global and per-file ignores
    report_unused_noqa: bool = False
    cache: Optional[Cache] = None

    def codes_for(self, path: Path) -> tuple[str, tuple[str, ...]]:
        """(rule codes that run on this file, selectors ignored for it)."""
        if self.selection is None:
            return self.codes, ()
        ignored = self.selection.ignore
        if self.selection.per_file:
            extra = self.selection.ignored_for(os.path.realpath(path))
            if extra:
                ignored = ignored + extra
                return tuple(c for c in self.codes if not any(registry.matches(c, i) for i in extra)), ignored
        return self.codes, ignored


def display_name(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


class PythonDocument:
    """A Python source file: its text as decoded, written back in the same encoding."""

    def __init__(self, data: bytes) -> None:
        self.source = SourceFile.from_bytes(data)
        self.text = self.source.text

    def encode(self, text: str) -> bytes:
        return self.source.to_bytes(text)

    def relocate(self, diagnostics: list[Diagnostic], text: str) -> list[Diagnostic]:
        return diagnostics

    def syntax_errors(self, filename: str) -> list[Diagnostic]:
        return []

    def diff(self, text: str, filename: str) -> str:
        old, new = diff_labels(filename)
        return "".join(difflib.unified_diff(
            self.text.splitlines(keepends=True), text.splitlines(keepends=True), fromfile=old, tofile=new,
        ))


Document = Union[PythonDocument, Notebook]


def open_document(path: Path, data: bytes) -> Document:
    return Notebook(data) if is_notebook(path) else PythonDocument(data)


def lint_text(text: str, filename: str, rules: Sequence[type[Rule]], settings: Settings) -> FileResult:
    """One lint of a text; with --report-unused-noqa, also the directives that silence nothing."""
    if not settings.report_unused_noqa:
        result = lint_source(text, filename, rules, settings.prefilter)
        if result.diagnostics and result.diagnostics[0].code == "DEV000":
            # The engine stops at a syntax error before suppressions apply.
            result.diagnostics = suppression.filter_noqa(text, result.diagnostics)
        return result
    with suppression.disabled():
        result = lint_source(text, filename, rules, settings.prefilter)
    kept, unused = suppression.unused_directives(text, result.diagnostics, [r.code for r in rules], filename)
    result.diagnostics = sorted(kept + unused, key=Diagnostic.sort_key)
    return result


def fix_text(text: str, filename: str, rules: Sequence[type[Rule]], settings: Settings) -> FileResult:
    """The fix loop; with --report-unused-noqa, unused directives are removed too."""
    result = fix_source(text, filename, rules, settings.unsafe_fixes)
    if not settings.report_unused_noqa:
        return result
    fixed = result.fixed_text if result.fixed_text is not None else text
    final = lint_text(fixed, filename, rules, settings)
    removals = [d.fix for d in final.diagnostics if d.code == suppression.UNUSED_NOQA[0] and d.fix is not None]
    if removals:
        new_text, removed = apply_edits(fixed, removals)
        if removed and parses(new_text, fixed):
            final = lint_text(new_text, filename, rules, settings)
            final.fixed_text, final.fixes_applied = new_text, result.fixes_applied + removed
            return final
    final.fixed_text, final.fixes_applied = result.fixed_text, result.fixes_applied
    return final


def _drop_ignored(diagnostics: list[Diagnostic], ignored: tuple[str, ...]) -> list[Diagnostic]:
    """Findings outside the rules (syntax errors, unused noqa) obey --ignore and per-file-ignores too."""
    if not ignored:
        return diagnostics
    return [d for d in diagnostics if d.code not in BUILTIN_CODES or not any(registry.matches(d.code, i) for i in ignored)]


def lint_path(path: Path, settings: Settings) -> FileResult:
    name = display_name(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(name, error=f"cannot read file: {exc.strerror or exc}")
    try:
        document = open_document(path, data)
    except NotebookError as exc:
        return FileResult(name, error=str(exc))
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(name, error=isolation.decode_error(data, exc))
    codes, ignored = settings.codes_for(path)
    by_code = registry.by_code()
    rules = [by_code[c] for c in codes]
    try:
        # A warm cache answers first: its entries were written by a lint that went
        # well, so neither the screening below nor a parse is needed again.
        key = _cache_key(data, document, rules, settings)
        cached = settings.cache.get(key, name) if key is not None and settings.cache is not None else None
        if cached is not None:
            result = FileResult(name, cached, parsed=True)
        else:
            # devlint/isolation.py: a file too large or nested too deeply to parse here.
            result = isolation.guard(path, settings, document.text, rules, name, not isinstance(document, Notebook), lint_path)
        if result is None:
            result = _check(path, data, document, name, rules, settings, key)
    except RecursionError:
        return FileResult(name, error="file is nested too deeply to analyse")
    except NotebookError as exc:
        return FileResult(name, error=f"cannot write the fixes back: {exc}")
    except OSError as exc:  # the only I/O left is writing the fixes
        return FileResult(name, error=f"cannot write the fixes back: {exc.strerror or exc}")
    except Exception as exc:  # an internal error on one file must not stop the run
        return FileResult(name, error=f"internal error: {type(exc).__name__}: {exc}")
    result.diagnostics = _drop_ignored(result.diagnostics, ignored)
    return result


def _cache_key(data: bytes, document: Document, rules: list[type[Rule]], settings: Settings) -> Optional[str]:
    """The file's cache key, or None when the cache is off, the run writes
    fixes, or the file cannot hold a finding (cheaper to check again)."""
    cache = settings.cache
    if cache is None or settings.fix or settings.diff:
        return None
    if settings.prefilter and not could_match(document.text, rules):
        return None
    return cache.key(data, ("nb" if isinstance(document, Notebook) else "py", ",".join(r.code for r in rules),
                            f"unused={settings.report_unused_noqa}", f"prefilter={settings.prefilter}"))


def _check(path: Path, data: bytes, document: Document, name: str, rules: list[type[Rule]], settings: Settings,
           key: Optional[str]) -> FileResult:
    """Lint (or fix) a file the cache did not answer for; `key` is where its result goes."""
    text = document.text
    if settings.fix or settings.diff:
        result = fix_text(text, name, rules, settings)
        final_text = result.fixed_text if result.fixed_text is not None else text
        syntax_errors = _syntax_errors(document, name, result.parsed, rules, settings)
        result.diagnostics = syntax_errors + document.relocate(result.diagnostics, final_text)
        if result.fixed_text is not None:
            if settings.diff:
                result.diff = document.diff(result.fixed_text, name)
            else:
                write_atomic(path, document.encode(result.fixed_text), original=data)  # never over a concurrent edit
        return result

    result = lint_text(text, name, rules, settings)
    syntax_errors = _syntax_errors(document, name, result.parsed, rules, settings)
    result.diagnostics = syntax_errors + document.relocate(result.diagnostics, text)
    if key is not None and settings.cache is not None:
        settings.cache.put(key, result.diagnostics)
    return result


def _syntax_errors(document: Document, name: str, parsed: bool, rules: list[type[Rule]], settings: Settings) -> list[Diagnostic]:
    """A notebook's cells that do not parse, when the notebook could hold a
    finding -- also when every cell that could is one of them (the rest of the
    notebook then needs no parse, but a .py file with that text would be parsed
    and its syntax error reported)."""
    if parsed:
        return document.syntax_errors(name)
    if isinstance(document, Notebook) and any(c.error for c in document.cells):
        code = "\n".join(c.source for c in document.cells)
        if not settings.prefilter or could_match(code, rules):
            return document.syntax_errors(name)
    return []


def _lint_one(args: tuple[Path, Settings]) -> FileResult:
    return lint_path(*args)


def run(files: Sequence[Path], settings: Settings, jobs: Optional[int] = None) -> list[FileResult]:
    jobs = jobs or os.cpu_count() or 1
    # What is alive now (imports, rule tables) lives as long as the run: keep
    # the cyclic collector from re-scanning it, and forked workers from
    # copying the pages it would touch.
    gc.freeze()
    try:
        # devlint/isolation.py: a big native stack; a worker that dies is replaced
        # and the file it died on reported.
        if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
            return isolation.call_with_big_stack(lambda: [lint_path(f, settings) for f in files])
        chunk = max(1, min(32, len(files) // (jobs * 8)))
        return isolation.supervised_map(_lint_one, [(f, settings) for f in files], jobs, chunk, _failed)
    finally:
        gc.unfreeze()


def _failed(args: tuple[Path, Settings], why: str) -> FileResult:
    return FileResult(display_name(args[0]), error=why)


__all__ = ["Settings", "display_name", "lint_path", "open_document", "run"]
