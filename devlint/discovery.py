"""Which files to lint: `.py` files under the given paths, skipping VCS,
virtual-environment, build and cache folders."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", ".bzr", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
     ".devlint_cache", ".tox", ".nox", ".venv", "venv", ".eggs", "build", "dist", "node_modules",
     "site-packages", ".ipynb_checkpoints", ".hypothesis"}
)
EXTENSIONS = (".py", ".pyi")


class PathError(Exception):
    """A path given on the command line that cannot be linted."""


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


def discover(paths: Iterable[str]) -> Iterator[Path]:
    """Files to lint, in a stable order. Explicit file arguments are always taken."""
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise PathError(f"{raw}: no such file or directory")
        if path.is_file():
            key = os.path.realpath(path)
            if key not in seen:
                seen.add(key)
                yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(
                d for d in dirs
                if d not in SKIP_DIRS and not d.endswith(".egg-info") and not _is_venv(os.path.join(root, d))
            )
            for name in sorted(files):
                if name.endswith(EXTENSIONS):
                    full = Path(root) / name
                    key = os.path.realpath(full)
                    if key not in seen and full.is_file():
                        seen.add(key)
                        yield full
