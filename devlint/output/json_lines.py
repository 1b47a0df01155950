"""`json-lines`: one JSON object a line, each shaped as in `json`."""

from __future__ import annotations

import json
from typing import Sequence

from ..diagnostics import Diagnostic
from .json_format import to_dict


def render(diagnostics: Sequence[Diagnostic], summary: object = None) -> str:
    return "".join(json.dumps(to_dict(d)) + "\n" for d in diagnostics)
