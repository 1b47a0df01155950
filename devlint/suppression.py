"""`# noqa` comments: flake8's grammar, case-insensitive.

`# noqa` alone silences every finding on its line; `# noqa: DEV101, DEV201`
only those codes (or prefixes, `# noqa: DEV1`).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

from .diagnostics import Diagnostic

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]*", re.I)


def line_noqa(line: str) -> Optional[frozenset[str]]:
    """None: no noqa; empty set: blanket noqa; else the codes named."""
    if "noqa" not in line.lower():
        return None
    m = NOQA.search(line)
    if m is None:
        return None
    codes = m.group("codes")
    return frozenset(c.upper() for c in _CODE.findall(codes)) if codes else frozenset()


def filter_noqa(text: str, diagnostics: Sequence[Diagnostic]) -> list[Diagnostic]:
    if "noqa" not in text.lower():
        return list(diagnostics)
    lines = text.splitlines()
    kept = []
    for d in diagnostics:
        line = lines[d.start.row - 1] if 0 < d.start.row <= len(lines) else ""
        codes = line_noqa(line)
        if codes is None or (codes and not any(d.code.startswith(c) for c in codes)):
            kept.append(d)
    return kept
