"""One module per output format; `FORMATS` maps a format's name to its writer:
`writer(diagnostics, summary) -> str`."""

from __future__ import annotations

from typing import Callable, Sequence

from ..diagnostics import Diagnostic
from . import full, github, grouped, json_format, json_lines, junit, sarif, text

Writer = Callable[[Sequence[Diagnostic], "text.Summary"], str]

FORMATS: dict[str, Writer] = {
    "full": full.render,
    "concise": text.render,
    "text": text.render,  # the old name of `concise`
    "grouped": grouped.render,
    "json": json_format.render,
    "json-lines": json_lines.render,
    "sarif": sarif.render,
    "github": github.render,
    "junit": junit.render,
}
# Formats for people: with --diff they give way to the diff.
HUMAN = frozenset({"full", "concise", "text", "grouped"})
DEFAULT = "full"
