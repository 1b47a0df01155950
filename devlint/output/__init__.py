"""One module per output format; `FORMATS` maps a format's name to its writer."""

from __future__ import annotations

from typing import Callable, Sequence

from ..diagnostics import Diagnostic
from . import json_format, text

Writer = Callable[[Sequence[Diagnostic], "text.Summary"], str]

FORMATS: dict[str, Writer] = {
    "text": text.render,
    "concise": text.render,
    "json": json_format.render,
}
