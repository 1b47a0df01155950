"""`full` (the default): each finding's line as `concise` prints it, then the
source around it with a caret under the spot, and the fix's title; colour only
on a terminal."""

from __future__ import annotations

import unicodedata
from typing import Optional, Sequence

from ..diagnostics import Diagnostic
from ..sources import SourceLines
from .text import Summary, location, summary_line

CONTEXT = 2  # source lines shown before and after the finding's line

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_RED = "\x1b[1;31m"
_CYAN = "\x1b[36m"
_BLUE = "\x1b[1;34m"


def _width(text: str) -> int:
    """Columns a terminal uses for `text` (tabs expanded by the caller)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1 for c in text)


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color and text else text


def _snippet(d: Diagnostic, lines: list[str], color: bool) -> list[str]:
    row = d.start.row
    if not 0 < row <= len(lines):
        return []
    first, last = max(1, row - CONTEXT), min(len(lines), row + CONTEXT)
    while last > row and not lines[last - 1].strip():
        last -= 1
    gutter = len(str(last))
    bar = _paint(" " * gutter + " |", _BLUE, color)
    out = [bar]
    for n in range(first, last + 1):
        text = lines[n - 1].expandtabs(4)
        out.append(f"{_paint(str(n).rjust(gutter) + ' |', _BLUE, color)} {text}".rstrip())
        if n == row:
            line = lines[n - 1]
            start = max(d.start.column - 1, 0)
            end = d.end.column - 1 if d.end.row == row else len(line)
            end = max(end, start + 1)
            pad = _width(line[:start].expandtabs(4))
            width = max(_width(line[start:end].expandtabs(4)), 1)
            carets = _paint("^" * width + f" {d.code}", _RED, color)
            out.append(f"{bar} {' ' * pad}{carets}")
    out.append(bar)
    if d.fix is not None:
        out.append(f"{' ' * gutter} = help: {d.fix.title}")
    return out


def render(diagnostics: Sequence[Diagnostic], summary: Summary, sources: Optional[SourceLines] = None) -> str:
    sources = sources or SourceLines()
    color = summary.color
    blocks = []
    for d in diagnostics:
        mark = _paint(" [*]", _CYAN, color) if d.fix is not None else ""
        head = f"{_paint(location(d), _BOLD, color)}: {_paint(d.code, _RED, color)}{mark} {d.message}"
        blocks.append("\n".join([head, *_snippet(d, sources.lines(d.filename, d.cell), color)]))
    blocks.append(_paint(summary_line(diagnostics, summary), _BOLD, color) if diagnostics else summary_line(diagnostics, summary))
    return "\n\n".join(blocks) + "\n"
