"""Tab indentation that CPython reads and libcst's tokenizer does not.

CPython measures indentation with tabs to the next multiple of eight columns
(and refuses only indentation whose meaning depends on the tab width).
libcst's native tokenizer mis-reads some consistent mixes of tabs and spaces
(`"  \\t"` for one level, `"    \\t\\t"` for the next: "no matching outer
block for dedent"; Instagram/LibCST#829, #951). For a file CPython compiles,
expanding the tabs of every line's leading whitespace to eight columns keeps
its block structure and line numbers, so the linter reads the expanded copy
and maps columns back. Lines inside a string are left alone: there the
whitespace is the string's value.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from .diagnostics import Location

_FSTRING_START = getattr(tokenize, "FSTRING_START", None)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


@dataclass(frozen=True)
class ExpandedIndent:
    """The expanded text, and per changed row the old and new indent widths."""

    text: str
    widths: dict[int, tuple[int, int]]

    def original(self, loc: Location) -> Location:
        """Where a location of the expanded text is in the original."""
        change = self.widths.get(loc.row)
        if change is None:
            return loc
        old, new = change
        if loc.column - 1 >= new:
            return Location(loc.row, loc.column - (new - old))
        return Location(loc.row, min(loc.column, old + 1))


def expand_indent_tabs(text: str) -> ExpandedIndent | None:
    """`text` with tabs in its lines' indentation expanded, or None when there
    is nothing to expand or the text cannot be tokenized."""
    lines = list(io.StringIO(text, newline=""))
    in_string = _rows_inside_strings(text)
    if in_string is None:
        return None
    widths: dict[int, tuple[int, int]] = {}
    for row, line in enumerate(lines, start=1):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)]
        if "\t" not in indent or row in in_string:
            continue
        expanded = indent.expandtabs(8)
        lines[row - 1] = expanded + body
        widths[row] = (len(indent), len(expanded))
    if not widths:
        return None
    return ExpandedIndent("".join(lines), widths)


def _rows_inside_strings(text: str) -> set[int] | None:
    """Rows that begin inside a string literal (a multi-line string's later
    rows), whose leading whitespace belongs to the string."""
    rows: set[int] = set()
    fstrings: list[int] = []  # rows where the open f-strings began (3.12+)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if tok.type == _FSTRING_START:
                fstrings.append(tok.start[0])
            elif tok.type == _FSTRING_END and fstrings:
                rows.update(range(fstrings.pop() + 1, tok.end[0] + 1))
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return rows
