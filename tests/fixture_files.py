"""Reading the fixtures: which rules have them, and what bad.py expects."""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ANNOTATION = re.compile(r"#\s*error:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")


def fixture_dirs() -> list[Path]:
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir() and re.fullmatch(r"DEV\d{3}", p.name))


def expected_findings(text: str) -> set[tuple[int, str]]:
    """{(line, code)} from the `# error: DEV...` annotations."""
    out = set()
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = ANNOTATION.search(line)
        if m:
            out.update((lineno, c.strip()) for c in m.group("codes").split(","))
    return out
