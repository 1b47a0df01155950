"""`concise` (alias `text`): `path:line:col: CODE [*] message`, one finding a
line, then a summary. Also the `Summary` every format receives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..diagnostics import Diagnostic


@dataclass
class Summary:
    """What a format may need besides the findings."""

    files_checked: int = 0
    fixes_applied: int = 0
    fix_hint: bool = False  # whether to mention --fix for fixable findings
    color: bool = False  # ANSI colour (only when writing to a terminal)
    rules: tuple = ()  # the rule classes that ran (SARIF lists them)
    errors: int = 0  # files that could not be linted (each named on stderr)


def location(d: Diagnostic) -> str:
    cell = f":cell {d.cell}" if d.cell is not None else ""
    return f"{d.filename}{cell}:{d.start.row}:{d.start.column}"


def render(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    lines = []
    for d in diagnostics:
        mark = " [*]" if d.fix is not None else ""
        lines.append(f"{location(d)}: {d.code}{mark} {d.message}")
    lines.append(summary_line(diagnostics, summary))
    return "\n".join(lines) + "\n"


def summary_line(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    parts = []
    if summary.fixes_applied:
        parts.append(f"Fixed {summary.fixes_applied} problem{'s' if summary.fixes_applied != 1 else ''}.")
    n = len(diagnostics)
    # Never "All checks passed!" over files that could not be linted.
    errors = f" {summary.errors} file{'s' if summary.errors != 1 else ''} could not be linted." if summary.errors else ""
    if n == 0:
        if errors:
            parts.append("No problems found;" + errors)
        else:
            parts.append("All checks passed!" if not summary.fixes_applied else "No problems remain.")
        return " ".join(parts)
    files = len({d.filename for d in diagnostics})
    parts.append(f"Found {n} problem{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}.")
    fixable = sum(1 for d in diagnostics if d.fix is not None)
    if fixable:
        safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
        hint = f"{fixable} fixable"
        if safe == fixable:
            hint += " with `--fix`"
        elif safe:
            hint += f" ({safe} with `--fix`"
            hint += f", {fixable - safe} more with `--unsafe-fixes`)" if fixable > safe else ")"
        else:
            hint += " with `--fix --unsafe-fixes`"
        parts.append(f"[*] {hint}.")
    return " ".join(parts) + errors
