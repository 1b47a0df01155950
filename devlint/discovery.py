"""Which files to lint: `.py`, `.pyi` and `.ipynb` files under the given paths.

Folders matching `exclude` / `extend-exclude` (by default: VCS, virtual
environment, build and cache folders) are not entered, nor are files and
folders that git ignores (`respect-gitignore`). A file named on the command
line is always linted unless `force-exclude` is set, in which case the same
exclusions apply to it (what pre-commit, which passes every staged file, needs).
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path
from typing import Iterable, Iterator, Optional

from .config import Config, FileFilter

# Never source code, whatever `exclude` says.
ALWAYS_SKIP = frozenset({".git", ".hg", ".svn", ".bzr", "__pycache__", ".devlint_cache"})
EXTENSIONS = (".py", ".pyi", ".ipynb")


class PathError(Exception):
    """A path given on the command line that cannot be linted."""


def _is_venv(path: str) -> bool:
    return os.path.exists(os.path.join(path, "pyvenv.cfg"))


class GitIgnored:
    """What git ignores, asked once per repository (`git ls-files --others
    --ignored --exclude-standard --directory`). Outside a git work tree, or
    without git, nothing is ignored."""

    def __init__(self) -> None:
        self._tops: dict[str, Optional[str]] = {}
        self._ignored: dict[str, frozenset[str]] = {}

    def _top(self, folder: str) -> Optional[str]:
        """The work tree holding `folder` (nearest folder above with a `.git`)."""
        walked = []
        current = folder
        while current not in self._tops:
            walked.append(current)
            if os.path.exists(os.path.join(current, ".git")):
                self._tops[current] = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                self._tops[current] = None
                break
            current = parent
        top = self._tops[current]
        for f in walked:
            self._tops[f] = top
        return top

    def _listing(self, top: str) -> frozenset[str]:
        if top not in self._ignored:
            try:
                out = subprocess.run(
                    ["git", "-C", top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
                    capture_output=True, timeout=60, check=True,
                ).stdout
                entries = frozenset(os.fsdecode(e) for e in out.split(b"\0") if e)
            except (OSError, subprocess.SubprocessError):
                entries = frozenset()
            self._ignored[top] = entries
        return self._ignored[top]

    def ignored(self, real: str, is_dir: bool, parents: bool = False) -> bool:
        """Whether git ignores `real` (a resolved path). `parents`: also when a folder above it is ignored."""
        top = self._top(os.path.dirname(real))
        if top is None:
            return False
        listing = self._listing(top)
        if not listing:
            return False
        rel = os.path.relpath(real, top).replace(os.sep, "/")
        if (rel + "/" if is_dir else rel) in listing:
            return True
        if parents:
            parts = rel.split("/")[:-1]
            return any("/".join(parts[: i + 1]) + "/" in listing for i in range(len(parts)))
        return False


def _why_missing(path: Path) -> str:
    if not os.path.islink(path):
        return "no such file or directory"
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
    return f"broken symbolic link (to {os.readlink(path)}, which does not exist)"


def discover(paths: Iterable[str], file_filter: Optional[FileFilter] = None) -> Iterator[Path]:
    """Files to lint, in a stable order, each once."""
    file_filter = file_filter if file_filter is not None else FileFilter.build(Config())
    exclude = file_filter.exclude
    git = GitIgnored() if file_filter.respect_gitignore else None
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise PathError(f"{raw}: {_why_missing(path)}")
        real = os.path.realpath(path)
        if path.is_file():
            if real in seen:
                continue
            seen.add(real)
            if file_filter.force_exclude and (
                exclude.matches(real, whole=True)
                or any(part in ALWAYS_SKIP for part in Path(real).parts[:-1])
                or (git is not None and git.ignored(real, is_dir=False, parents=True))
            ):
                continue
            yield path
            continue
        if file_filter.force_exclude and (exclude.matches(real, whole=True) or (git is not None and git.ignored(real, True, True))):
            continue
        for root, dirs, files in os.walk(path):
            real_root = os.path.realpath(root)
            kept = []
            for d in sorted(dirs):
                if d in ALWAYS_SKIP or d.endswith(".egg-info") or exclude.matches_name(d):
                    continue
                full = os.path.join(root, d)
                if _is_venv(full):
                    continue
                real_dir = os.path.join(real_root, d)
                if exclude.paths is not None and exclude.matches(real_dir):
                    continue
                if git is not None and git.ignored(real_dir, is_dir=True):
                    continue
                kept.append(d)
            dirs[:] = kept
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                full = Path(root) / name
                real_file = os.path.realpath(full) if os.path.islink(full) else os.path.join(real_root, name)
                if real_file in seen or not full.is_file():
                    continue
                if exclude.matches(real_file):
                    continue
                if git is not None and git.ignored(real_file, is_dir=False):
                    continue
                seen.add(real_file)
                yield full
