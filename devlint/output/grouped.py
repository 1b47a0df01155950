"""`grouped`: findings under their file's name, `line:col CODE [*] message`."""

from __future__ import annotations

from itertools import groupby
from typing import Sequence

from ..diagnostics import Diagnostic
from .text import Summary, summary_line


def _position(d: Diagnostic) -> str:
    cell = f"cell {d.cell}:" if d.cell is not None else ""
    return f"{cell}{d.start.row}:{d.start.column}"


def render(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    out = []
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        items = list(group)
        width = max(len(_position(d)) for d in items)
        out.append(f"{filename}:")
        for d in items:
            mark = " [*]" if d.fix is not None else ""
            out.append(f"  {_position(d).ljust(width)} {d.code}{mark} {d.message}")
        out.append("")
    out.append(summary_line(diagnostics, summary))
    return "\n".join(out) + "\n"
