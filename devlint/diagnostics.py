"""Findings as plain, picklable data: what a rule reports and what a fix edits."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class Applicability(str, Enum):
    """How far a fix can be trusted (ruff's terms)."""

    SAFE = "safe"  # keeps the program's meaning: applied by --fix
    UNSAFE = "unsafe"  # may change behaviour: needs --unsafe-fixes


class FixAvailability(str, Enum):
    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Location:
    row: int  # 1-based
    column: int  # 1-based, in characters


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) with `content`."""

    start: Location
    end: Location
    content: str


@dataclass(frozen=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    start: Location
    end: Location
    fix: Optional[Fix] = None
    # Where a notebook cell holds the finding: rows are then cell-relative.
    cell: Optional[int] = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.start.row, self.start.column, self.code)


def diff_labels(filename: str) -> tuple[str, str]:
    """The `---`/`+++` names of a fix's diff: git's `a/`, `b/` for a relative
    path (so `git apply` takes it), the path itself when it is absolute."""
    if filename.startswith("/"):
        return filename, filename
    return f"a/{filename}", f"b/{filename}"
