"""Suppression comments, in flake8's grammar (case-insensitive).

On a line:
    `# noqa`                      every finding on the line
    `# noqa: DEV101, DEV201`      only these codes (or prefixes: `# noqa: DEV1`;
                                  commas or spaces between codes)
On a line of its own, anywhere in the file:
    `# devlint: noqa`             every finding in the file
    `# devlint: noqa: DEV1`       these codes in the whole file

`unused_directives` finds suppressions that silence nothing (`--report-unused-noqa`,
code DEV001) with a fix that removes them. A bare `# noqa` is never reported:
other linters (flake8, ruff) read it too, so devlint cannot tell it is unused.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from .diagnostics import Applicability, Diagnostic, Edit, Fix, Location

_CODES = r"[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*"
NOQA = re.compile(rf"#\s*noqa(?::[\s]?(?P<codes>{_CODES}))?", re.I)
FILE_NOQA = re.compile(rf"^[ \t]*(?P<directive>#[ \t]*devlint[ \t]*:[ \t]*noqa(?:[ \t]*:[ \t]*(?P<codes>{_CODES}))?)[ \t]*$", re.I | re.M)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)
_NEWLINE = re.compile(r"\r\n|\r|\n")
_DEVLINT_CODE = re.compile(r"DEV[0-9]+\Z")

UNUSED_NOQA = ("DEV001", "unused-noqa")
# Findings devlint makes without a rule: always "enabled" for unused-noqa purposes.
BUILTIN_CODES = ("DEV000",)

_filtering = True


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Within this block `filter_noqa` keeps every finding, so that the caller
    can see what each directive silenced (for --report-unused-noqa)."""
    global _filtering
    previous, _filtering = _filtering, False
    try:
        yield
    finally:
        _filtering = previous


def _codes(group: Optional[str]) -> frozenset[str]:
    return frozenset(c.upper() for c in _CODE.findall(group)) if group else frozenset()


def line_noqa(line: str) -> Optional[frozenset[str]]:
    """None: no noqa; empty set: blanket noqa; else the codes named."""
    if "noqa" not in line.lower():
        return None
    m = NOQA.search(line)
    if m is None:
        return None
    return _codes(m.group("codes"))


def file_noqa(text: str) -> Optional[frozenset[str]]:
    """The file-level directives merged: None: none; empty set: the whole file; else codes."""
    found: Optional[set[str]] = None
    for m in FILE_NOQA.finditer(text):
        codes = _codes(m.group("codes"))
        if not codes:
            return frozenset()
        found = (found or set()) | codes
    return frozenset(found) if found is not None else None


def _silences(codes: frozenset[str], code: str) -> bool:
    return not codes or any(code.startswith(c) for c in codes)


def filter_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The findings no directive silences (the engine calls this for every file with findings)."""
    if not _filtering or "noqa" not in text.lower():
        return list(diagnostics)
    whole = file_noqa(text)
    lines = _NEWLINE.split(text)
    kept = []
    for d in diagnostics:
        if whole is not None and _silences(whole, d.code):
            continue
        line = lines[d.start.row - 1] if 0 < d.start.row <= len(lines) else ""
        codes = line_noqa(line)
        if codes is None or not _silences(codes, d.code):
            kept.append(d)
    return kept


# ---------------------------------------------------------------------------
# Unused directives


@dataclass
class _Directive:
    row: int
    start: int  # 0-based column of the `#`
    end: int  # 0-based column after the directive
    codes: tuple[str, ...]  # as written, upper-cased, in order
    codes_span: Optional[tuple[int, int]]
    file_level: bool
    used: set[str]


def _directives(lines: Sequence[str]) -> list[_Directive]:
    out = []
    for row, line in enumerate(lines, start=1):
        if "noqa" not in line.lower():
            continue
        m = FILE_NOQA.match(line)
        if m is not None:
            codes = tuple(c.upper() for c in _CODE.findall(m.group("codes") or ""))
            span = m.span("codes") if m.group("codes") else None
            out.append(_Directive(row, m.start("directive"), m.end("directive"), codes, span, True, set()))
            continue
        m = NOQA.search(line)
        if m is not None:
            codes = tuple(c.upper() for c in _CODE.findall(m.group("codes") or ""))
            span = m.span("codes") if m.group("codes") else None
            out.append(_Directive(row, m.start(), m.end(), codes, span, False, set()))
    return out


def unused_directives(
    text: str, diagnostics: Sequence[Diagnostic], enabled: Sequence[str], filename: str
) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split unfiltered findings into (kept, unused-directive findings).

    `enabled` are the rule codes that ran on this file: a directive naming only
    rules that did not run is left alone (another configuration may need it).
    """
    if "noqa" not in text.lower():
        return list(diagnostics), []
    lines = _NEWLINE.split(text)
    directives = _directives(lines)
    if not directives:
        return list(diagnostics), []
    file_level = [d for d in directives if d.file_level]
    by_row = {d.row: d for d in directives if not d.file_level}
    kept = []
    for diag in diagnostics:
        silenced = False
        line_directive = by_row.get(diag.start.row)
        for directive in (*file_level, *([line_directive] if line_directive else [])):
            if _silences(frozenset(directive.codes), diag.code):
                directive.used.update([c for c in directive.codes if diag.code.startswith(c)] or ["*"])
                silenced = True
        if not silenced:
            kept.append(diag)
    if any(d.code == "DEV000" for d in diagnostics):
        return kept, []  # an unparsable file says nothing about what its directives silence
    known = tuple(enabled) + BUILTIN_CODES
    unused = []
    for directive in directives:
        if directive.file_level and not directive.codes:
            if not directive.used:
                unused.append(_unused(directive, lines, filename, (), remove_all=True))
            continue
        if not directive.codes:
            continue  # a bare `# noqa` may serve other linters
        stale = [
            c for c in directive.codes
            if _DEVLINT_CODE.match(c) and c not in directive.used and any(k.startswith(c) for k in known)
        ]
        if stale:
            remaining = [c for c in directive.codes if c not in stale]
            unused.append(_unused(directive, lines, filename, tuple(stale), remove_all=not remaining, remaining=remaining))
    return kept, unused


def _unused(
    directive: _Directive, lines: Sequence[str], filename: str, stale: tuple[str, ...],
    remove_all: bool, remaining: Sequence[str] = (),
) -> Diagnostic:
    row, line = directive.row, lines[directive.row - 1]
    if directive.file_level:
        what = "file-level `devlint: noqa` directive"
    else:
        what = "`noqa` directive"
    message = f"Unused {what}" + (f" (unused: {', '.join(f'`{c}`' for c in stale)})" if stale else "")
    if remove_all and directive.file_level:
        # The directive is the whole line: remove the line.
        if row < len(lines):
            edit = Edit(Location(row, 1), Location(row + 1, 1), "")
        else:
            edit = Edit(Location(row, 1), Location(row, len(line) + 1), "")
    elif remove_all:
        rest = line[directive.end :]
        if rest.strip():
            # Other words share the comment (`# noqa: DEV101 -- why`): keep them.
            edit = Edit(Location(row, directive.start + 1), Location(row, directive.end + 1), "#")
        else:
            start = len(line[: directive.start].rstrip())
            edit = Edit(Location(row, start + 1), Location(row, len(line) + 1), "")
    else:
        assert directive.codes_span is not None
        s, e = directive.codes_span
        edit = Edit(Location(row, s + 1), Location(row, e + 1), ", ".join(remaining))
    fix = Fix("Remove unused `noqa` directive", Applicability.SAFE, (edit,))
    return Diagnostic(
        UNUSED_NOQA[0], UNUSED_NOQA[1], message, filename,
        Location(row, directive.start + 1), Location(row, directive.end + 1), fix,
    )
