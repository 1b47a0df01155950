"""Snippet files as the verifier reads them: a prelude, then `# %%` cells,
with `# error: CODE` annotations on the offending lines (fixtures/README.md).

A cell is run as prelude + cell, every other line blanked, so the program
keeps the file's line numbers: compiled under the file's real name, its
tracebacks point into the file the user reads.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

CELL_MARKER = re.compile(r"^# %%")
ANNOTATION = re.compile(r"#\s*error:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
# Where a flagged bug surfaces, when that is a later line: DEV304's host tensor is
# made on one line and meets a GPU tensor (and raises) on another.
FAILURE_NOTE = re.compile(r"#\s*raises:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")


@dataclass(frozen=True)
class Cell:
    index: int  # 1-based, in file order
    marker: int  # line of the `# %%` marker (0 when the file has none)
    start: int  # first line of the cell's body
    end: int  # last line of the cell's body
    annotations: dict = field(default_factory=dict, compare=False, hash=False)  # line -> tuple of codes
    failures: dict = field(default_factory=dict, compare=False, hash=False)  # `# raises:` line -> codes

    @property
    def codes(self) -> set[str]:
        return {c for codes in self.annotations.values() for c in codes}

    def lines_of(self, code: str) -> set[int]:
        return {line for line, codes in self.annotations.items() if code in codes}

    def failure_lines_of(self, code: str) -> set[int]:
        """Lines marked `# raises: CODE`: where `code`'s bug surfaces."""
        return {line for line, codes in self.failures.items() if code in codes}


@dataclass
class SnippetFile:
    path: Path  # absolute
    text: str
    prelude_end: int  # last line of the prelude (0: no prelude)
    cells: list[Cell]

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def program(self, cell: Cell) -> str:
        """Prelude + this cell, other lines blank, line numbers unchanged."""
        out = []
        for number, line in enumerate(self.lines[: cell.end], start=1):
            keep = number <= self.prelude_end or cell.marker <= number <= cell.end
            out.append(line if keep else "")
        return "\n".join(out) + "\n"

    @cached_property
    def assert_lines(self) -> set[int]:
        """Lines that belong to an `assert` statement (for postcondition claims)."""
        try:
            tree = ast.parse(self.text)
        except (SyntaxError, ValueError):
            return set()
        found: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                found.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        return found

    @cached_property
    def torch_imports(self) -> set[str]:
        """torch modules the file imports at module level (for a warm start)."""
        try:
            tree = ast.parse(self.text)
        except (SyntaxError, ValueError):
            return set()
        found: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
        return {m for m in found if m == "torch" or m.startswith("torch.")}

    def cell_at(self, line: int) -> Cell | None:
        for cell in self.cells:
            if cell.start <= line <= cell.end:
                return cell
        return None


def annotations_of(lines: list[str], pattern: "re.Pattern[str]" = ANNOTATION) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}
    for number, line in enumerate(lines, start=1):
        m = pattern.search(line)
        if m:
            out[number] = tuple(c.strip() for c in m.group("codes").split(","))
    return out


def parse_snippets(path: Path, text: str) -> SnippetFile:
    """Split a file into prelude and cells. A file without `# %%` markers is
    one cell: the whole file, with no prelude."""
    lines = text.splitlines()
    notes, failures = annotations_of(lines), annotations_of(lines, FAILURE_NOTE)
    markers = [n for n, line in enumerate(lines, start=1) if CELL_MARKER.match(line)]
    if not markers:
        cell = Cell(1, 0, 1, len(lines), notes, failures)
        return SnippetFile(path, text, 0, [cell])
    cells = []
    bounds = markers + [len(lines) + 1]
    for index, (marker, following) in enumerate(zip(bounds, bounds[1:]), start=1):
        start, end = marker + 1, following - 1
        cells.append(Cell(
            index, marker, start, end,
            {n: c for n, c in notes.items() if start <= n <= end},
            {n: c for n, c in failures.items() if start <= n <= end},
        ))
    return SnippetFile(path, text, markers[0] - 1, cells)


def read_snippets(path: Path) -> SnippetFile:
    path = path.resolve()
    return parse_snippets(path, path.read_text(encoding="utf-8"))
