"""A JSON list of findings, in ruff's shape."""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..diagnostics import Diagnostic, Location


def _loc(loc: Location) -> dict[str, int]:
    return {"row": loc.row, "column": loc.column}


def to_dict(d: Diagnostic) -> dict[str, Any]:
    fix = None
    if d.fix is not None:
        fix = {
            "applicability": d.fix.applicability.value,
            "message": d.fix.title,
            "edits": [
                {"content": e.content, "location": _loc(e.start), "end_location": _loc(e.end)} for e in d.fix.edits
            ],
        }
    out = {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "filename": d.filename,
        "location": _loc(d.start),
        "end_location": _loc(d.end),
        "fix": fix,
    }
    if d.cell is not None:
        out["cell"] = d.cell
    return out


def render(diagnostics: Sequence[Diagnostic], summary: object = None) -> str:
    return json.dumps([to_dict(d) for d in diagnostics], indent=2) + "\n"
