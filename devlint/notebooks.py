"""Jupyter notebooks: their code cells as one Python text, and back.

The code cells of a notebook are joined, in order, into one module (cells see
the names earlier cells defined, as they do when the notebook runs), with a
marker line between cells so that fixed text can be split back into cells.
Findings are then placed by cell: `notebook.ipynb:cell 3:2:5` is cell 3 of the
notebook (counting every cell, markdown too, from 1), line 2 of that cell.

IPython syntax is masked, line for line, before parsing: line magics (`%time
f()`), shell escapes (`!pip install x`, `files = !ls`), help (`torch.cuda?`),
and a cell magic's first line where the rest of the cell is Python
(`%%time`); cells under any other cell magic (`%%bash`, `%%writefile`) are not
Python and are skipped. A cell that still does not parse is reported as a
syntax error (DEV000) and skipped; the rest of the notebook is linted.

Writing back changes only the `source` of the cells whose code changed:
outputs, metadata and every other cell stay as they were, and the JSON is
written in the file's own layout (indent, key order, trailing newline).
"""

from __future__ import annotations

import ast
import bisect
import difflib
import json
import re
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

from .diagnostics import Diagnostic, Edit, Location, diff_labels

SUFFIX = ".ipynb"
SEPARATOR = "# devlint: cell boundary -- do not edit"
_PLACEHOLDER = "pass  # devlint: ipython line {}"
_PLACEHOLDER_LINE = re.compile(r"^[ \t]*pass  # devlint: ipython line (\d+)(\r\n|\r|\n)?\Z")
# Cell magics whose body is Python: the first line is masked, the body linted.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})
_MAGIC_ASSIGNMENT = re.compile(r"^[ \t]*[\w.\[\]'\", \t*]+=[ \t]*[%!]")
_SYNTAX_ERROR = ("DEV000", "syntax-error")


class NotebookError(Exception):
    """A file that is not a readable notebook."""


def is_notebook(path: object) -> bool:
    return str(path).endswith(SUFFIX)


@dataclass
class Cell:
    number: int  # 1-based position among all cells of the notebook
    index: int  # index into the notebook's `cells` list
    source: str  # the cell's source as stored, joined
    as_list: bool  # whether `source` is stored as a list of lines
    code: str = ""  # what is linted: the source with IPython syntax masked; "" if opaque
    opaque: bool = False  # not linted, never rewritten
    masked: dict[int, str] = field(default_factory=dict)  # placeholder id -> original line
    error: Optional[tuple[int, int, str]] = None  # a syntax error (row, column, message)


def _compiles(code: str) -> Optional[SyntaxError]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:  # e.g. null bytes
        return SyntaxError(str(exc))
    return None


def _is_ipython_line(stripped: str, line: str) -> bool:
    if not stripped:
        return False
    if stripped[0] in "%!?":
        return True
    if stripped.endswith("?") and not stripped.startswith("#"):
        return True
    return _MAGIC_ASSIGNMENT.match(line) is not None


def _mask(cell: Cell, counter: list[int]) -> None:
    """Fill in `cell.code` (masked), or mark the cell opaque."""
    source = cell.source
    if not source.strip():
        cell.code = source
        return
    lines = source.splitlines(keepends=True)
    first_index = next(i for i, line in enumerate(lines) if line.strip())
    first = lines[first_index].strip()
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            cell.opaque = True
            return
    if first.startswith("%%") or _compiles(source) is not None:
        out = []
        continued = False
        for i, line in enumerate(lines):
            body = line.rstrip("\r\n")
            stripped = body.strip()
            if continued or (i == first_index and stripped.startswith("%%")) or _is_ipython_line(stripped, body):
                counter[0] += 1
                cell.masked[counter[0]] = line
                indent = body[: len(body) - len(body.lstrip())]
                out.append(indent + _PLACEHOLDER.format(counter[0]) + line[len(body):])
                continued = body.endswith("\\")
            else:
                out.append(line)
                continued = False
        code = "".join(out)
    else:
        code = source
    error = _compiles(code)
    if error is not None:
        cell.opaque = True
        cell.error = (max(error.lineno or 1, 1), max(error.offset or 1, 1), f"SyntaxError: {error.msg}")
        return
    cell.code = code


def _join(source: Any) -> tuple[str, bool]:
    if isinstance(source, list):
        return "".join(str(s) for s in source), True
    if isinstance(source, str):
        return source, False
    raise NotebookError("a cell's source is neither text nor a list of lines")


class Notebook:
    """A parsed notebook, its code cells and the text devlint lints."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        try:
            data = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise NotebookError(f"not a notebook: invalid JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("not a notebook: no `cells` list")
        self.data = data
        self.cells: list[Cell] = []
        if not self._is_python():
            self.text = ""
            return
        counter = [0]
        for index, raw_cell in enumerate(data["cells"]):
            if not isinstance(raw_cell, dict) or raw_cell.get("cell_type") != "code":
                continue
            source, as_list = _join(raw_cell.get("source", ""))
            cell = Cell(index + 1, index, source, as_list)
            _mask(cell, counter)
            self.cells.append(cell)
        self.text = "".join(_with_newline(c.code) + SEPARATOR + "\n" for c in self.cells)

    def _is_python(self) -> bool:
        meta = self.data.get("metadata") or {}
        if not isinstance(meta, dict):
            return True
        language = (meta.get("language_info") or {}).get("name") if isinstance(meta.get("language_info"), dict) else None
        if language is None and isinstance(meta.get("kernelspec"), dict):
            language = meta["kernelspec"].get("language")
        return language is None or str(language).lower().startswith("python")

    # -- positions -----------------------------------------------------------

    def _chunks(self, text: str) -> list[str]:
        """`text` (the joined cells, perhaps fixed) split back into the cells' code."""
        chunks, current = [], []
        for line in text.splitlines(keepends=True):
            if line.rstrip("\r\n") == SEPARATOR:
                chunks.append("".join(current))
                current = []
            else:
                current.append(line)
        if current and "".join(current).strip():
            raise NotebookError("text after the last cell")
        if len(chunks) != len(self.cells):
            raise NotebookError("the cells could not be told apart after fixing")
        return chunks

    def _starts(self, text: str) -> list[int]:
        """The row (1-based) of `text` on which each cell's code begins."""
        starts, row = [], 1
        for chunk in self._chunks(text):
            starts.append(row)
            row += chunk.count("\n") + 1  # the chunk's lines, then the separator
        return starts

    def relocate(self, diagnostics: Sequence[Diagnostic], text: str) -> list[Diagnostic]:
        """Findings on `text` (rows of the joined cells) as cell-relative findings."""
        if not diagnostics:
            return []
        starts = self._starts(text)
        out = []
        for d in diagnostics:
            i = max(bisect.bisect_right(starts, d.start.row) - 1, 0)
            base = starts[i] - 1
            fix = d.fix
            if fix is not None:
                fix = replace(fix, edits=tuple(
                    Edit(Location(e.start.row - base, e.start.column), Location(e.end.row - base, e.end.column), e.content)
                    for e in fix.edits
                ))
            out.append(replace(
                d, cell=self.cells[i].number,
                start=Location(d.start.row - base, d.start.column), end=Location(d.end.row - base, d.end.column), fix=fix,
            ))
        return out

    def syntax_errors(self, filename: str) -> list[Diagnostic]:
        return [
            Diagnostic(_SYNTAX_ERROR[0], _SYNTAX_ERROR[1], msg, filename, Location(row, col), Location(row, col), cell=c.number)
            for c in self.cells if c.error is not None
            for row, col, msg in [c.error]
        ]

    # -- writing back --------------------------------------------------------

    def sources(self, text: str) -> list[str]:
        """Each code cell's new source for `text` (the joined cells, perhaps fixed)."""
        out = []
        for cell, chunk in zip(self.cells, self._chunks(text)):
            if cell.opaque or chunk == _with_newline(cell.code):
                out.append(cell.source)
                continue
            lines = []
            for line in chunk.splitlines(keepends=True):
                m = _PLACEHOLDER_LINE.match(line)
                if m is not None and int(m.group(1)) in cell.masked:
                    original = cell.masked[int(m.group(1))]
                    lines.append(original.rstrip("\r\n") + (m.group(2) or ""))
                else:
                    lines.append(line)
            new = "".join(lines)
            if not cell.source.endswith("\n") and new.endswith("\n"):
                new = new[:-1]
            out.append(new)
        return out

    def encode(self, text: str) -> bytes:
        """The notebook file with the cells' code replaced by `text`'s."""
        changed = False
        for cell, source in zip(self.cells, self.sources(text)):
            if source != cell.source:
                changed = True
                self.data["cells"][cell.index]["source"] = (
                    source.splitlines(keepends=True) if cell.as_list else source
                )
        if not changed:
            return self.raw
        raw = self.raw
        indent: Optional[int] = None
        m = re.match(rb"\{\r?\n([ \t]*)\S", raw.lstrip(b"\xef\xbb\xbf"))
        if m:
            indent = len(m.group(1).expandtabs(4))
        ensure_ascii = not any(b > 127 for b in raw) and b"\\u" in raw
        out = json.dumps(self.data, indent=indent, ensure_ascii=ensure_ascii)
        if indent is None and b", " not in raw and b": " not in raw:
            out = json.dumps(self.data, separators=(",", ":"), ensure_ascii=ensure_ascii)
        if raw.rstrip(b" \t").endswith(b"\n"):
            out += "\n"
        data = out.encode("utf-8")
        if b"\r\n" in raw:
            data = data.replace(b"\n", b"\r\n")
        if raw.startswith(b"\xef\xbb\xbf"):
            data = b"\xef\xbb\xbf" + data
        return data

    def diff(self, text: str, filename: str) -> str:
        """A unified diff, cell by cell, of what `text` changes."""
        parts = []
        old, new = diff_labels(filename)
        for cell, source in zip(self.cells, self.sources(text)):
            if source != cell.source:
                parts.extend(difflib.unified_diff(
                    _with_newline(cell.source).splitlines(keepends=True), _with_newline(source).splitlines(keepends=True),
                    fromfile=f"{old}:cell {cell.number}", tofile=f"{new}:cell {cell.number}",
                ))
        return "".join(parts)

    def cell_lines(self) -> dict[int, list[str]]:
        """Each code cell's source lines, by cell number (for showing findings)."""
        return {c.number: re.split(r"\r\n|\r|\n", c.source) for c in self.cells}


def _with_newline(code: str) -> str:
    return code if not code or code.endswith("\n") else code + "\n"


__all__ = ["Cell", "Notebook", "NotebookError", "SEPARATOR", "is_notebook"]
