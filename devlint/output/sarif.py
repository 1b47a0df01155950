"""`sarif`: SARIF 2.1.0, as GitHub code scanning reads it.

Every rule that ran is described (short description: its message; full
description: its "What it does"; help: its whole documentation, as text and
Markdown). Results carry the rule's code as a stable `ruleId`, a URI relative
to the repository's root (`%SRCROOT%`: the git work tree holding the current
directory, else the current directory) and a region with end line and column
(columns count Unicode code points). A notebook's rows are cell-relative: the
cell is named in the message and in the result's properties.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Optional, Sequence
from urllib.parse import quote

from .. import __version__
from ..diagnostics import Diagnostic, Location
from .text import Summary

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Findings devlint makes outside the rule modules.
BUILTIN_RULES = {
    "DEV000": ("syntax-error", "The file could not be parsed.",
               "devlint reports a file it cannot parse instead of linting it. Fix the syntax error."),
    "DEV001": ("unused-noqa", "A `noqa` directive silences nothing.",
               "With `--report-unused-noqa`, devlint reports suppression comments that silence no finding; "
               "`--fix` removes them."),
}
_SECTION = re.compile(r"^## (.+)$", re.M)


def _sections(docs: str) -> dict[str, str]:
    parts = _SECTION.split(docs)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _descriptor(code: str, name: str, short: str, full: str, help_text: str, level: str) -> dict[str, Any]:
    return {
        "id": code,
        "name": name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": full or short},
        "help": {"text": help_text or full or short, "markdown": help_text or full or short},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": ["pytorch", "devices"]},
    }


def _level(code: str) -> str:
    return "warning" if code.startswith(("DEV5", "DEV001")) else "error"


def _rule_descriptor(rule: Any) -> dict[str, Any]:
    docs = rule.docs()
    what = _sections(docs).get("What it does", "")
    return _descriptor(rule.code, rule.name, rule.message, what, docs, _level(rule.code))


def source_root() -> Path:
    """The git work tree holding the current directory, else the current directory."""
    cwd = Path.cwd().resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def _artifact(filename: str, root: Path) -> dict[str, str]:
    path = Path(os.path.abspath(filename))
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        return {"uri": path.resolve().as_uri()}
    return {"uri": quote(rel.as_posix()), "uriBaseId": "%SRCROOT%"}


def _region(start: Location, end: Location) -> dict[str, int]:
    region = {"startLine": max(start.row, 1), "startColumn": max(start.column, 1)}
    if (end.row, end.column) >= (start.row, start.column):
        region.update(endLine=max(end.row, 1), endColumn=max(end.column, 1))
    return region


def _result(d: Diagnostic, index: Optional[int], root: Path) -> dict[str, Any]:
    message = d.message if d.cell is None else f"cell {d.cell}, line {d.start.row}: {d.message}"
    artifact = _artifact(d.filename, root)
    result: dict[str, Any] = {
        "ruleId": d.code,
        "level": _level(d.code),
        "message": {"text": message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": _region(d.start, d.end)}}],
    }
    if index is not None:
        result["ruleIndex"] = index
    if d.cell is not None:
        result["properties"] = {"cell": d.cell}
    if d.fix is not None and d.cell is None:
        result["fixes"] = [{
            "description": {"text": d.fix.title},
            "artifactChanges": [{
                "artifactLocation": artifact,
                "replacements": [
                    {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}
                    for e in d.fix.edits
                ],
            }],
        }]
    return result


def render(diagnostics: Sequence[Diagnostic], summary: Summary) -> str:
    root = source_root()
    rules = [_rule_descriptor(r) for r in summary.rules]
    known = {r["id"] for r in rules}
    for d in diagnostics:
        if d.code not in known:
            name, short, full = BUILTIN_RULES.get(d.code, (d.name, d.message, d.message))
            rules.append(_descriptor(d.code, name, short, full, full, _level(d.code)))
            known.add(d.code)
    index = {r["id"]: i for i, r in enumerate(rules)}
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "devlint", "version": __version__, "semanticVersion": __version__, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root.as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": [_result(d, index.get(d.code), root) for d in diagnostics],
        }],
    }
    return json.dumps(log, indent=2) + "\n"
