"""Review mode: only what a change introduced.

`--diff-against REV` keeps the findings on lines added or changed since a git
revision (`git diff REV`, which compares REV with the working tree; files git
does not track yet count as wholly new). Only files the diff touches are
linted. A notebook's changes are found cell by cell, comparing its code cells
with those at REV.

`--baseline FILE` drops the findings recorded in a baseline (`--write-baseline
FILE` writes one). A finding is matched by its code, its file (relative to the
baseline's folder) and the text of its line with whitespace normalised, counted
per occurrence: moving code within a file, or editing other lines, does not
bring a recorded finding back; a second copy of a recorded line is new.
"""

from __future__ import annotations

import codecs
import difflib
import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from .diagnostics import Diagnostic
from .notebooks import Notebook, NotebookError
from .sources import SourceLines

BASELINE_VERSION = 1
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class ReviewError(Exception):
    """A revision or baseline that cannot be used (exit 2)."""


def _git(top: Path, *args: str, check: bool = True) -> bytes:
    try:
        proc = subprocess.run(["git", "-C", str(top), *args], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ReviewError(f"cannot run git: {exc}") from None
    if check and proc.returncode != 0:
        reason = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ReviewError(f"git {args[0]} failed: {reason[-1] if reason else proc.returncode}")
    return proc.stdout


def git_top(path: Path) -> Optional[Path]:
    folder = Path(os.path.realpath(path))
    if not folder.is_dir():
        folder = folder.parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _unquote(path: str) -> str:
    """git's C-style quoting of unusual file names."""
    if path.startswith('"') and path.endswith('"'):
        raw = codecs.escape_decode(path[1:-1].encode("utf-8"))[0]
        return raw.decode("utf-8", errors="surrogateescape")
    return path


def parse_diff(text: str) -> dict[str, set[int]]:
    """Rows added or changed per new path, from `git diff -U0` output."""
    out: dict[str, set[int]] = {}
    current: Optional[set[int]] = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            target = _unquote(line[4:].rstrip("\t"))
            current = None if target == "/dev/null" else out.setdefault(target[2:], set())
        elif line.startswith("@@") and current is not None:
            m = _HUNK.match(line)
            if m:
                start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
                current.update(range(start, start + count))
    return out


@dataclass
class _Repo:
    top: Path
    rev: str
    changed: dict[str, set[int]]
    new: set[str]
    cells: dict[str, Optional[set[tuple[int, int]]]] = field(default_factory=dict)


class ChangedLines:
    """Which lines changed since `rev`, in every git work tree the files are in."""

    def __init__(self, rev: str, files: Iterable[Path]) -> None:
        self.rev = rev
        self._repos: dict[Path, _Repo] = {}
        for path in files:
            top = git_top(path)
            if top is None:
                raise ReviewError(f"--diff-against: {path} is not in a git work tree")
            if top not in self._repos:
                self._repos[top] = self._load(top)

    def _load(self, top: Path) -> _Repo:
        if _git(top, "rev-parse", "--verify", "--quiet", f"{self.rev}^{{commit}}", check=False).strip() == b"":
            raise ReviewError(f"--diff-against: unknown revision '{self.rev}'")
        diff = _git(
            top, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--unified=0",
            "--src-prefix=a/", "--dst-prefix=b/", self.rev, "--",
        )
        untracked = _git(top, "ls-files", "-z", "--others", "--exclude-standard")
        new = {os.fsdecode(p) for p in untracked.split(b"\0") if p}
        return _Repo(top, self.rev, parse_diff(diff.decode("utf-8", errors="surrogateescape")), new)

    def _where(self, filename: str) -> tuple[Optional[_Repo], str]:
        real = Path(os.path.realpath(filename))
        for top, repo in self._repos.items():
            try:
                return repo, real.relative_to(top).as_posix()
            except ValueError:
                continue
        return None, ""

    def touches(self, path: Path) -> bool:
        """Whether the file changed at all (others need no lint)."""
        repo, rel = self._where(str(path))
        return repo is not None and (rel in repo.new or rel in repo.changed)

    def keep(self, d: Diagnostic) -> bool:
        repo, rel = self._where(d.filename)
        if repo is None:
            return False
        if rel in repo.new:
            return True
        rows = range(d.start.row, max(d.end.row, d.start.row) + 1)
        if d.cell is not None:
            cells = self._cells(repo, rel)
            return cells is None or any((d.cell, r) in cells for r in rows)
        changed = repo.changed.get(rel)
        return changed is not None and any(r in changed for r in rows)

    def _cells(self, repo: _Repo, rel: str) -> Optional[set[tuple[int, int]]]:
        """(cell, row) pairs added or changed in a notebook; None: all of it is new."""
        if rel not in repo.cells:
            old = _git(repo.top, "show", f"{repo.rev}:{rel}", check=False)
            try:
                new_nb = Notebook((repo.top / rel).read_bytes())
            except (OSError, NotebookError):
                repo.cells[rel] = set()
                return repo.cells[rel]
            try:
                old_lines = [text for _, _, text in _cell_lines(Notebook(old))] if old else None
            except NotebookError:
                old_lines = None
            new_lines = _cell_lines(new_nb)
            if old_lines is None:
                repo.cells[rel] = None
            else:
                matcher = difflib.SequenceMatcher(None, old_lines, [t for _, _, t in new_lines], autojunk=False)
                changed = set()
                for tag, _, _, j1, j2 in matcher.get_opcodes():
                    if tag in ("replace", "insert"):
                        changed.update((cell, row) for cell, row, _ in new_lines[j1:j2])
                repo.cells[rel] = changed
        return repo.cells[rel]


def _cell_lines(nb: Notebook) -> list[tuple[int, int, str]]:
    return [(number, row, text) for number, lines in nb.cell_lines().items() for row, text in enumerate(lines, start=1)]


# ---------------------------------------------------------------------------
# Baselines


def _normalise(text: Optional[str]) -> str:
    return " ".join((text or "").split())


def _keys(diagnostics: Sequence[Diagnostic], base: Path, sources: SourceLines) -> list[tuple[str, str, str]]:
    base_real = os.path.realpath(base)
    out = []
    for d in diagnostics:
        try:
            rel = os.path.relpath(os.path.realpath(d.filename), base_real)
        except ValueError:
            rel = os.path.realpath(d.filename)
        out.append((d.code, rel.replace(os.sep, "/"), _normalise(sources.line(d))))
    return out


def write_baseline(path: Path, diagnostics: Sequence[Diagnostic], sources: SourceLines) -> int:
    seen: Counter = Counter()
    findings = []
    for code, file, line in _keys(diagnostics, path.resolve().parent, sources):
        findings.append({"code": code, "file": file, "line": line, "occurrence": seen[(code, file, line)]})
        seen[(code, file, line)] += 1
    data = {"version": BASELINE_VERSION, "tool": "devlint", "findings": findings}
    try:
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ReviewError(f"--write-baseline: cannot write {path}: {exc.strerror or exc}") from None
    return len(findings)


def apply_baseline(path: Path, diagnostics: Sequence[Diagnostic], sources: SourceLines) -> list[Diagnostic]:
    """The findings the baseline does not record."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
            raise ValueError(f"expected a devlint baseline, version {BASELINE_VERSION}")
        recorded = Counter((f["code"], f["file"], f["line"]) for f in data["findings"])
    except OSError as exc:
        raise ReviewError(f"--baseline: cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ReviewError(f"--baseline: {path}: not a devlint baseline: {exc}") from None
    kept = []
    for d, key in zip(diagnostics, _keys(diagnostics, path.resolve().parent, sources)):
        if recorded[key] > 0:
            recorded[key] -= 1
        else:
            kept.append(d)
    return kept
