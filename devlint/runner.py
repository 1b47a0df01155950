"""Lint many files: read each once, lint (or fix) it, on every core when there
are enough files to pay for the worker processes."""

from __future__ import annotations

import difflib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from . import registry
from .engine import FileResult, SourceFile, lint_source
from .fixes import fix_source, write_atomic

# Below this many files, worker start-up costs more than it saves.
PARALLEL_THRESHOLD = 24


@dataclass(frozen=True)
class Settings:
    codes: tuple[str, ...]
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes, print a diff, write nothing
    prefilter: bool = True


def display_name(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def lint_path(path: Path, settings: Settings) -> FileResult:
    name = display_name(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(name, error=f"cannot read file: {exc.strerror or exc}")
    try:
        source = SourceFile.from_bytes(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        return FileResult(name, error=f"cannot decode file: {exc}")
    by_code = registry.by_code()
    rules = [by_code[c] for c in settings.codes]
    try:
        if not (settings.fix or settings.diff):
            return lint_source(source.text, name, rules, settings.prefilter)
        result = fix_source(source.text, name, rules, settings.unsafe_fixes)
        if result.fixed_text is not None:
            if settings.diff:
                result.diff = "".join(
                    difflib.unified_diff(
                        source.text.splitlines(keepends=True), result.fixed_text.splitlines(keepends=True),
                        fromfile=f"a/{name}", tofile=f"b/{name}",
                    )
                )
            else:
                write_atomic(path, source.to_bytes(result.fixed_text))
        return result
    except RecursionError:
        return FileResult(name, error="file is nested too deeply to analyse")
    except Exception as exc:  # an internal error on one file must not stop the run
        return FileResult(name, error=f"internal error: {type(exc).__name__}: {exc}")


def _lint_one(args: tuple[Path, Settings]) -> FileResult:
    return lint_path(*args)


def run(files: Sequence[Path], settings: Settings, jobs: Optional[int] = None) -> list[FileResult]:
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
        return [lint_path(f, settings) for f in files]
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    chunk = max(1, min(32, len(files) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        return list(pool.map(_lint_one, [(f, settings) for f in files], chunksize=chunk))
