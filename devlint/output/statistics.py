"""`--statistics`: one line per rule that fired, most frequent first, as ruff
prints it (`count  CODE  [*] name`), or a JSON list with `--output-format json`."""

from __future__ import annotations

import json
from collections import Counter
from typing import Sequence

from .. import registry
from ..diagnostics import Diagnostic
from ..engine import SYNTAX_ERROR
from ..suppression import UNUSED_NOQA
from .text import Summary, summary_line


def _rows(diagnostics: Sequence[Diagnostic]) -> list[dict]:
    counts = Counter(d.code for d in diagnostics)
    fixable = {d.code for d in diagnostics if d.fix is not None}
    names = {code: rule.name for code, rule in registry.by_code().items()}
    names.update(dict([SYNTAX_ERROR, UNUSED_NOQA]))
    # Most frequent first; codes break ties so the order is stable.
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        {
            "code": code,
            "name": names.get(code, ""),
            "count": count,
            "fixable": code in fixable,
        }
        for code, count in ordered
    ]


def render(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    rows = _rows(diagnostics)
    if not rows:
        return summary_line(diagnostics, summary) + "\n"
    width = max(len(str(r["count"])) for r in rows)
    lines = [
        f"{str(r['count']).rjust(width)}\t{r['code']}\t{'[*]' if r['fixable'] else '[ ]'} {r['name']}"
        for r in rows
    ]
    lines.append(summary_line(diagnostics, summary))
    return "\n".join(lines) + "\n"


def render_json(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    return json.dumps(_rows(diagnostics), indent=2) + "\n"
