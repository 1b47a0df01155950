"""A rule's runtime claim: what the flagged code really does when it runs, and
where that can be shown. Plain data, read by the verifier (`devlint verify`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

BACKENDS = ("cpu", "no-accel", "cuda", "multi-gpu", "mps")


@dataclass(frozen=True)
class Claim:
    """`bad.py`'s cells fail this way on `backends`; good and fixed cells run clean.

    Exactly one outcome is given:
    - `raises`: an exception type name, with `match` a regex its message must match;
    - `warns`: a warning category name, with `match` a regex for its message;
    - `postcondition`: the cell asserts what correct code guarantees, so the
      bad cell fails with AssertionError from an `assert` after the bug.
    """

    backends: tuple[str, ...]
    summary: str
    raises: Optional[str] = None
    warns: Optional[str] = None
    match: str = ""
    postcondition: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.backends) - set(BACKENDS)
        if unknown:
            raise ValueError(f"unknown backend(s) {sorted(unknown)}")
        if sum(bool(x) for x in (self.raises, self.warns, self.postcondition)) != 1:
            raise ValueError("a claim names exactly one outcome: raises, warns or postcondition")
