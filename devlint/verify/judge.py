"""What counts: when a run confirms a rule's claim, and when a cell ran clean.

A bad cell confirms a claim when, on one of the claim's backends:

- `raises`: the cell raised an exception of the claimed type (its class or
  any base class has that name; `A|B` allows either) whose message matches
  the claim's `match` regex, and the innermost frame in the cell's file is on
  a line annotated `# error: CODE` for that rule — the flagged line itself
  raised, not something before or after it — or on a line the cell marks
  `# raises: CODE`, where the flagged bug surfaces (DEV304's host tensor is
  made on one line and meets the GPU tensors on another);
- `warns`: the cell emitted a warning of the claimed category whose message
  matches `match`, and the innermost frame in the cell's file when it was
  emitted is on an annotated line;
- `postcondition`: the cell failed with an AssertionError raised by an
  `assert` statement of the file itself (the innermost frame of the whole
  traceback is in the file, on an `assert`), in the prelude or in the cell
  after its first annotated line.

Anything else — running clean, another exception, a message that does not
match, the right exception from an unannotated line, a timeout, a crash —
contradicts the claim. A cell annotated with several codes confirms each of
them when it satisfies the claim of any one of them.

A good or fixed cell runs clean when its process exits normally (status 0,
`sys.exit(0)` included) and, for a `warns` claim, emits no warning of the
claimed kind from the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from ..claims import Claim
from .cells import Cell, SnippetFile
from .sandbox import Outcome


@dataclass(frozen=True)
class Verdict:
    ok: bool
    text: str


def expectation(claim: Claim) -> str:
    """The claimed outcome, in words."""
    pattern = f" matching /{claim.match}/" if claim.match else ""
    if claim.raises:
        return f"raises {claim.raises}{pattern}"
    if claim.warns:
        return f"warns {claim.warns}{pattern}"
    return "its own `assert` after the flagged line fails"


def _names(spec: str) -> set[str]:
    return {n.strip().rsplit(".", 1)[-1] for n in spec.split("|") if n.strip()}


def _type_matches(spec: str, mro: Iterable[str]) -> bool:
    return bool(_names(spec) & set(mro))


def _message_matches(pattern: str, message: str) -> bool:
    if not pattern:
        return True
    try:
        return re.search(pattern, message) is not None
    except re.error:
        return False


def _first_line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def _lines(lines: set[int]) -> str:
    return ", ".join(str(n) for n in sorted(lines)) or "none"


def check_claim(
    outcome: Outcome, code: str, claim: Claim, lines: set[int],
    snippet: Optional[SnippetFile] = None, cell: Optional[Cell] = None,
) -> Verdict:
    """Does this run show `claim` on the lines flagged with `code`?"""
    mark = f"`# error: {code}`" if cell is not None else f"{code}'s finding"
    surfaces = lines | cell.failure_lines_of(code) if cell is not None else lines
    if cell is not None and surfaces != lines:
        mark += f" or `# raises: {code}`"
    if claim.raises:
        exc = outcome.exception or {}
        if outcome.kind != "exception":
            return Verdict(False, f"{outcome.describe()}; expected it to raise {claim.raises}")
        kind, message, line = exc.get("type"), exc.get("message") or "", exc.get("target_line")
        if not _type_matches(claim.raises, exc.get("mro") or [kind]):
            return Verdict(False, f"{outcome.describe()}; expected {claim.raises}")
        if not _message_matches(claim.match, message):
            return Verdict(False, f"raised {kind} but its message does not match /{claim.match}/: {_first_line(message)}")
        if line not in surfaces:
            where = f"line {line}" if line else "outside the file"
            return Verdict(False, f"raised {kind} from {where}, not from a line with {mark} ({_lines(surfaces)})")
        return Verdict(True, f"raised {kind} at line {line}: {_first_line(message)}")
    if claim.warns:
        hits = [
            w for w in outcome.warnings
            if _type_matches(claim.warns, w.get("mro") or [w.get("category")])
            and _message_matches(claim.match, w.get("message") or "")
        ]
        for w in hits:
            if w.get("target_line") in surfaces:
                return Verdict(True, f"warned {w['category']} at line {w['target_line']}: {_first_line(w.get('message'))}")
        if hits:
            w = hits[0]
            where = f"line {w.get('target_line')}" if w.get("target_line") else "outside the file"
            return Verdict(False, f"warned {w['category']} from {where}, not from a line with {mark} ({_lines(surfaces)})")
        return Verdict(False, f"emitted no {claim.warns}{' matching /' + claim.match + '/' if claim.match else ''}; it {outcome.describe()}")
    # postcondition
    if snippet is None or cell is None:
        return Verdict(False, "the claim is a postcondition, which a fixture's own `assert` shows; a plain run cannot")
    exc = outcome.exception or {}
    if outcome.kind != "exception" or "AssertionError" not in (exc.get("mro") or []):
        return Verdict(False, f"{outcome.describe()}; expected its own `assert` to fail")
    line = exc.get("target_line")
    if not exc.get("innermost_in_target"):
        frames = exc.get("frames") or []
        inner = f"{frames[-1][0]}:{frames[-1][1]}" if frames else "elsewhere"
        return Verdict(False, f"raised AssertionError in {inner}, not from an `assert` of the file")
    in_prelude = line is not None and line <= snippet.prelude_end
    in_cell = line is not None and cell.start <= line <= cell.end
    if line not in snippet.assert_lines or not (in_prelude or in_cell):
        return Verdict(False, f"raised AssertionError at line {line}, which is not an `assert` of this cell")
    if in_cell and lines and line < min(lines):
        return Verdict(False, f"the `assert` at line {line} failed before the flagged line {min(lines)}")
    return Verdict(True, f"its `assert` at line {line} failed: the postcondition does not hold")


def check_bad(
    outcome: Outcome, snippet: SnippetFile, cell: Cell, claims: Sequence[tuple[str, Claim]],
) -> Verdict:
    """A bad cell: the first claim among `claims` (its annotated codes, the row's
    own first) that the run shows confirms it; otherwise the first one's reason."""
    verdicts = [check_claim(outcome, code, claim, cell.lines_of(code), snippet, cell) for code, claim in claims]
    for verdict in verdicts:
        if verdict.ok:
            return verdict
    return verdicts[0] if verdicts else Verdict(False, "no claim to check")


def check_clean(outcome: Outcome, claims: Sequence[Claim] = ()) -> Verdict:
    """A good or fixed cell (or an unannotated snippet) must run clean."""
    if outcome.kind != "ok":
        return Verdict(False, outcome.describe())
    for claim in claims:
        if not claim.warns:
            continue
        for w in outcome.warnings:
            if (
                w.get("target_line") is not None
                and _type_matches(claim.warns, w.get("mro") or [w.get("category")])
                and _message_matches(claim.match, w.get("message") or "")
            ):
                return Verdict(False, f"emitted the claimed {w['category']} at line {w['target_line']}: {_first_line(w.get('message'))}")
    return Verdict(True, outcome.describe())
