"""Applying fixes safely: non-overlapping text edits, re-parsed after every
pass, repeated until nothing changes, and written atomically."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from pathlib import Path
from typing import Optional, Sequence

from .diagnostics import Fix, Location
from .engine import FileResult, compile_error, lint_source, parse_module
from .rule import Rule

_NEWLINE = re.compile(r"\r\n|\r|\n")


def _line_offsets(text: str) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(text))
    return starts


def apply_edits(text: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """Apply non-overlapping fixes (earlier ones win); returns (text, fixes applied)."""
    starts = _line_offsets(text)

    def offset(loc: Location) -> int:
        return starts[loc.row - 1] + loc.column - 1

    chosen: list[tuple[int, int, str]] = []
    applied = 0
    taken: list[tuple[int, int]] = []
    for fix in fixes:
        spans = [(offset(e.start), offset(e.end), e.content) for e in fix.edits]
        if any(s < te and ts < e or s == ts for s, e, _ in spans for ts, te in taken):
            continue
        chosen.extend(spans)
        taken.extend((s, e) for s, e, _ in spans)
        applied += 1
    for start, end, content in sorted(chosen, key=lambda x: x[0], reverse=True):
        text = text[:start] + content + text[end:]
    return text, applied


def parses(text: str, original: Optional[str] = None) -> bool:
    """Does `text` parse, by libcst (so devlint can lint it again) and by
    CPython? libcst's node validator is left out: it refuses some code CPython
    takes (`assert(x if c else y)`). CPython is not asked when it refuses the
    `original` as well (code for a newer Python than the one running)."""
    try:
        parse_module(text)
    except Exception:
        return False
    return compile_error(text) is None or (original is not None and compile_error(original) is not None)


MAX_FIX_PASSES = 10


def fix_source(text: str, filename: str, rules: Sequence[type[Rule]], unsafe: bool) -> FileResult:
    """Apply fixes until nothing changes (bounded); a fix whose result does not
    parse is dropped. Returns the final lint of the fixed text."""
    total = 0
    for _ in range(MAX_FIX_PASSES):
        result = lint_source(text, filename, rules)
        fixes = [d.fix for d in result.diagnostics if d.fix is not None and (unsafe or d.fix.applicability == "safe")]
        if not fixes:
            break
        new_text, applied = apply_edits(text, fixes)
        if not parses(new_text, text):
            # Keep only the fixes that parse on their own.
            good = [f for f in fixes if parses(apply_edits(text, [f])[0], text)]
            new_text, applied = apply_edits(text, good)
            if not good or not parses(new_text, text):
                break
        if new_text == text:
            break
        text, total = new_text, total + applied
    result = lint_source(text, filename, rules)
    if total:
        result.fixed_text, result.fixes_applied = text, total
    return result


class FileChanged(OSError):
    """The file on disk is no longer the text the fixes were computed from."""


def write_atomic(path: Path, data: bytes, original: Optional[bytes] = None) -> bool:
    """Write through a temporary file in the same folder and an atomic rename,
    keeping the file's mode (and owner, where allowed): a crash leaves the old
    file or the new, never half. A symbolic link is followed: the file it
    points to is rewritten, the link kept. A read-only file is not replaced.

    With `original` (the bytes the fixes were computed from), the file is
    checked just before the rename: if it already holds `data` (another
    devlint got there first) nothing is written and False is returned; if it
    holds anything else (an editor saved it meanwhile) FileChanged is raised
    and the file is left alone. Returns whether the file was written."""
    path = Path(os.path.realpath(path))
    st = os.stat(path)
    if not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "Permission denied (the file is read-only)", str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".devlint-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, st.st_mode & 0o7777)
        if hasattr(os, "chown") and (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except OSError:
                pass  # not ours to give away: the new file stays ours
        if original is not None:
            current = path.read_bytes()
            if current == data:
                os.unlink(tmp)
                return False
            if current != original:
                raise FileChanged(errno.EAGAIN, "the file changed while devlint was fixing it; nothing was written", str(path))
        os.replace(tmp, path)
        return True
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
