"""The source lines findings point at, read back from disk after a run (only
for files with findings): what the `full` output shows and what baselines key on."""

from __future__ import annotations

import re
from typing import Optional

from .diagnostics import Diagnostic
from .engine import SourceFile
from .notebooks import Notebook, NotebookError, is_notebook

# Python's own line breaks (str.splitlines also breaks at form feeds and more).
_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    return _NEWLINE.split(text)


class SourceLines:
    """Lines of files by display name (a notebook's by cell), each file read once."""

    def __init__(self) -> None:
        self._files: dict[str, dict[Optional[int], list[str]]] = {}

    def _read(self, filename: str) -> dict[Optional[int], list[str]]:
        if filename not in self._files:
            lines: dict[Optional[int], list[str]] = {}
            try:
                with open(filename, "rb") as handle:
                    data = handle.read()
                if is_notebook(filename):
                    lines.update(Notebook(data).cell_lines())
                else:
                    lines[None] = split_lines(SourceFile.from_bytes(data).text)
            except (OSError, SyntaxError, UnicodeDecodeError, LookupError, NotebookError, ValueError):
                pass
            self._files[filename] = lines
        return self._files[filename]

    def lines(self, filename: str, cell: Optional[int] = None) -> list[str]:
        return self._read(filename).get(cell, [])

    def line(self, d: Diagnostic, row: Optional[int] = None) -> Optional[str]:
        """The text of row `row` (default: where `d` starts) of `d`'s file or cell."""
        lines = self.lines(d.filename, d.cell)
        row = d.start.row if row is None else row
        return lines[row - 1] if 0 < row <= len(lines) else None
