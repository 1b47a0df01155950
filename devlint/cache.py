"""Results cached per file, in `.devlint_cache/` of the project (the folder of
the configuration file, else the current directory).

An entry is keyed by a hash of the file's bytes, devlint's version (and a
fingerprint of its installed source, so an edited rule never reads stale
results), the rules enabled for that file and the options that change what a
lint reports. Entries live in a folder per devlint version and fingerprint. Entries are content-addressed and immutable, written to a
temporary file and renamed into place, so any number of devlint processes can
share the folder: a reader sees a whole entry or none. An unreadable entry is a
miss. Only files that needed a parse are cached; the rest are cheaper to check
again than to look up.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional, Sequence

from . import __version__
from .diagnostics import Applicability, Diagnostic, Edit, Fix, Location

FOLDER = ".devlint_cache"
_FORMAT = 1
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by devlint.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n"
)


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """devlint's version and the state of its source files (cheap: stat only)."""
    package = Path(__file__).resolve().parent
    h = hashlib.blake2b(f"{__version__}:{_FORMAT}".encode(), digest_size=16)
    for path in sorted(package.rglob("*.py")):
        try:
            st = path.stat()
        except OSError:
            continue
        h.update(f"{path.relative_to(package)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


STALE_AFTER_S = 3600


def _prune(folder: Path, current: Path) -> None:
    """Remove the entries of other devlint versions or sources, once an hour has
    passed since they were last written (another installation may still be running)."""
    try:
        siblings = [p for p in folder.iterdir() if p.is_dir() and p != current]
        now = time.time()
        for path in siblings:
            if now - path.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(path, ignore_errors=True)
    except OSError:
        pass


@dataclass(frozen=True)
class Cache:
    """A cache folder; picklable, so worker processes read and write it directly."""

    folder: str
    salt: str

    @classmethod
    def open(cls, folder: Path) -> Optional["Cache"]:
        """The cache in `folder`, created with its `.gitignore` and `CACHEDIR.TAG`;
        None when it cannot be created (a read-only tree lints uncached)."""
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for name, content in ((".gitignore", "# Created by devlint automatically.\n*\n"), ("CACHEDIR.TAG", CACHEDIR_TAG)):
                if not (folder / name).exists():
                    _write_atomic(folder / name, content.encode())
        except OSError:
            return None
        salt = fingerprint()
        current = folder / f"{__version__}-{salt[:12]}"
        _prune(folder, current)
        return cls(str(current), salt)

    def key(self, data: bytes, parts: Sequence[str]) -> str:
        h = hashlib.blake2b(digest_size=20)
        h.update(self.salt.encode())
        h.update("\0".join(parts).encode())
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return Path(self.folder, key[:2], key[2:] + ".json")

    def get(self, key: str, filename: str) -> Optional[list[Diagnostic]]:
        try:
            with open(self._path(key), "rb") as handle:
                entry = json.loads(handle.read())
            return [_load(item, filename) for item in entry["diagnostics"]]
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            return None

    def put(self, key: str, diagnostics: Sequence[Diagnostic]) -> None:
        path = self._path(key)
        data = json.dumps({"diagnostics": [_dump(d) for d in diagnostics]}, separators=(",", ":")).encode()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(path, data)
        except OSError:
            pass  # a cache that cannot be written is only slower


def _dump(d: Diagnostic) -> list[Any]:
    fix = None
    if d.fix is not None:
        fix = [d.fix.title, d.fix.applicability.value,
               [[e.start.row, e.start.column, e.end.row, e.end.column, e.content] for e in d.fix.edits]]
    return [d.code, d.name, d.message, d.start.row, d.start.column, d.end.row, d.end.column, d.cell, fix]


def _load(item: list[Any], filename: str) -> Diagnostic:
    code, name, message, row, col, end_row, end_col, cell, fix = item
    loaded_fix = None
    if fix is not None:
        title, applicability, edits = fix
        loaded_fix = Fix(title, Applicability(applicability), tuple(
            Edit(Location(a, b), Location(c, d), content) for a, b, c, d, content in edits
        ))
    return Diagnostic(code, name, message, filename, Location(row, col), Location(end_row, end_col), loaded_fix, cell)
