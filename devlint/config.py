"""`[tool.devlint]` in pyproject.toml: finding it, validating it, and merging
it with the command line.

One configuration governs a run, resolved once: the nearest `pyproject.toml`
with a `[tool.devlint]` table, searched from the folder that holds every path
given on the command line (the current directory when none is given) up to
the filesystem root; or the file named by `--config`. Paths and globs in it
are relative to the folder the file is in. Command-line flags override it.

An unknown key or a bad value is a `ConfigError` naming the key and the file;
the CLI turns it into exit code 2.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

from . import registry

TABLE = "devlint"
PYPROJECT = "pyproject.toml"

# Folders nobody wants linted; `exclude` replaces this list, `extend-exclude` adds to it.
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr", ".direnv", ".eggs", ".git", ".hg", ".mypy_cache", ".nox", ".pants.d", ".pytest_cache",
    ".ruff_cache", ".svn", ".tox", ".venv", ".hypothesis", ".ipynb_checkpoints", "__pypackages__",
    "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)


# Codes devlint reports outside the rule modules: syntax errors, unused noqa directives.
BUILTIN_CODES = ("DEV000", "DEV001")


def is_known_selector(selector: str) -> bool:
    """A rule code or prefix, `ALL`, or one of the built-in codes."""
    return registry.is_known_selector(selector) or selector.strip().upper() in BUILTIN_CODES


class ConfigError(Exception):
    """A configuration file that cannot be used; the message names file and key."""


@dataclass(frozen=True)
class Config:
    """The `[tool.devlint]` table as validated data (keys with `_` for `-`)."""

    path: Optional[Path] = None  # the file it came from; None: built-in defaults
    select: Optional[tuple[str, ...]] = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: Optional[tuple[str, ...]] = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False

    @property
    def root(self) -> Path:
        """The folder that relative paths and globs are resolved against."""
        return self.path.parent if self.path is not None else Path.cwd()


# ---------------------------------------------------------------------------
# Reading and validating


def _selector_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}`: expected a list of rule codes, got {value!r}")
    out = tuple(v.strip().upper() for v in value)
    for v in out:
        if not is_known_selector(v):
            raise ConfigError(f"{where}: `{key}`: unknown rule code or prefix '{v}'")
    return out


def _glob_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: `{key}`: expected a list of glob patterns, got {value!r}")
    return tuple(v.strip() for v in value)


def _bool(value: Any, key: str, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}`: expected true or false, got {value!r}")
    return value


def _per_file_ignores(value: Any, key: str, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}`: expected a table of glob = [codes], got {value!r}")
    return tuple((pattern, _selector_list(codes, f"{key}.{pattern}", where)) for pattern, codes in value.items())


_KEYS = {
    "select": _selector_list,
    "ignore": _selector_list,
    "extend-select": _selector_list,
    "per-file-ignores": _per_file_ignores,
    "exclude": _glob_list,
    "extend-exclude": _glob_list,
    "respect-gitignore": _bool,
    "force-exclude": _bool,
}


def parse_table(table: Mapping[str, Any], path: Path, where: str) -> Config:
    values: dict[str, Any] = {}
    for key, raw in table.items():
        check = _KEYS.get(key)
        if check is None:
            hint = ""
            close = [k for k in _KEYS if k.replace("-", "_") == key or k == key.replace("_", "-")]
            if close:
                hint = f" (did you mean `{close[0]}`?)"
            raise ConfigError(f"{where}: unknown key `{key}`{hint}")
        values[key.replace("-", "_")] = check(raw, key, where)
    return Config(path=path, **values)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def _devlint_table(data: Mapping[str, Any]) -> Optional[Any]:
    tool = data.get("tool")
    return tool.get(TABLE) if isinstance(tool, dict) else None


def load(path: Path) -> Config:
    """Read an explicit configuration file: a pyproject.toml (its `[tool.devlint]`
    table) or any other TOML file whose top level is the table itself."""
    data = _read_toml(path)
    if path.name == PYPROJECT or "tool" in data:
        table = _devlint_table(data)
        where = f"{path}: [tool.{TABLE}]"
        if table is None:
            raise ConfigError(f"{path}: no [tool.{TABLE}] table")
    else:
        table, where = data, str(path)
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    return parse_table(table, path.resolve(), where)


def find(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml at or above `start` that has a [tool.devlint] table."""
    for folder in (start, *start.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file():
            try:
                with open(candidate, "rb") as handle:
                    head = handle.read()
            except OSError:
                continue
            if f"tool.{TABLE}".encode() in head or f'tool."{TABLE}"'.encode() in head:
                if _devlint_table(_read_toml(candidate)) is not None:
                    return candidate
    return None


def common_folder(paths: Sequence[str]) -> Path:
    """The deepest folder that holds every path given (the current directory when none)."""
    if not paths:
        return Path.cwd()
    folders = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))) for p in paths]
    try:
        return Path(os.path.commonpath(folders))
    except ValueError:  # different drives
        return Path.cwd()


def resolve(paths: Sequence[str], explicit: Optional[str] = None) -> Config:
    """The configuration for a run, found once."""
    if explicit is not None:
        return load(Path(explicit))
    found = find(common_folder(paths))
    return load(found) if found is not None else Config()


# ---------------------------------------------------------------------------
# Globs, as ruff reads them: a pattern without a `/` matches a file or folder
# name anywhere; one with a `/` matches the path relative to the config's folder.


def _translate(pattern: str) -> str:
    """A glob with `**` (any number of folders), `*`, `?` and `[...]` as a regex."""
    out, i, n = [], 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class GlobSet:
    """Compiled patterns relative to `root` (an absolute, resolved folder path)."""

    root: str
    names: Optional["re.Pattern[str]"] = None  # matched against one path component
    paths: Optional["re.Pattern[str]"] = None  # matched against the root-relative path

    @classmethod
    def build(cls, root: Path, patterns: Iterable[str]) -> "GlobSet":
        names, paths = [], []
        for p in patterns:
            p = p.replace(os.sep, "/")
            if p.startswith("./"):
                p = p[2:]
            if "/" in p.rstrip("/"):
                paths.append(_translate(p.strip("/")))
            else:
                names.append(fnmatch.translate(p.rstrip("/")))
        return cls(
            os.path.realpath(root),
            re.compile("|".join(names)) if names else None,
            re.compile(f"(?:{'|'.join(paths)})(?:/.*)?\\Z") if paths else None,
        )

    def __bool__(self) -> bool:
        return self.names is not None or self.paths is not None

    def relative(self, path: str) -> Optional[str]:
        """`path` (absolute) relative to root, with `/`; None when outside it."""
        rel = os.path.relpath(path, self.root)
        if rel == "." or rel.startswith(".." + os.sep) or rel == "..":
            return None
        return rel.replace(os.sep, "/")

    def matches_name(self, name: str) -> bool:
        return self.names is not None and self.names.match(name) is not None

    def matches(self, path: str, whole: bool = False) -> bool:
        """Whether `path` (absolute) matches. `whole`: also test each folder above
        it up to the root (for a file named explicitly, whose folders were never walked)."""
        if self.names is not None:
            if self.matches_name(os.path.basename(path)):
                return True
        rel = self.relative(path)
        if rel is None:
            return False
        if whole and self.names is not None and any(self.matches_name(part) for part in rel.split("/")[:-1]):
            return True
        return self.paths is not None and self.paths.match(rel) is not None


# ---------------------------------------------------------------------------
# Rule selection and the options that follow from it


@dataclass(frozen=True)
class Selection:
    """Which rules run on which file."""

    codes: tuple[str, ...]  # enabled everywhere (before per-file ignores)
    ignore: tuple[str, ...]  # selectors switched off everywhere (also filters DEV000)
    per_file: tuple[tuple[GlobSet, tuple[str, ...]], ...] = ()

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """Selectors switched off for this file (absolute path) by per-file-ignores."""
        out: list[str] = []
        for globs, selectors in self.per_file:
            if globs.matches(path):
                out.extend(selectors)
        return tuple(out)


def selection(
    config: Config,
    cli_select: Sequence[str] = (),
    cli_ignore: Sequence[str] = (),
    cli_extend_select: Sequence[str] = (),
    cli_per_file_ignores: Sequence[tuple[str, tuple[str, ...]]] = (),
) -> Selection:
    """`--select` replaces the file's select, extend-select and ignore; `--ignore`
    and `--extend-select` add to the file's."""
    if cli_select:
        selectors, ignores = list(cli_select), list(cli_ignore)
    else:
        selectors = list(config.select if config.select is not None else ("ALL",)) + list(config.extend_select)
        ignores = list(config.ignore) + list(cli_ignore)
    selectors += list(cli_extend_select)
    codes = tuple(r.code for r in registry.select(selectors, ignores))
    root = config.root
    per_file = tuple(
        (GlobSet.build(root, [pattern]), tuple(codes_))
        for pattern, codes_ in (*config.per_file_ignores, *cli_per_file_ignores)
    )
    return Selection(codes, tuple(ignores), per_file)


@dataclass(frozen=True)
class FileFilter:
    """Which discovered files are linted: excludes, .gitignore, force-exclude."""

    exclude: GlobSet
    respect_gitignore: bool = True
    force_exclude: bool = False

    @classmethod
    def build(
        cls,
        config: Config,
        exclude: Optional[Sequence[str]] = None,
        extend_exclude: Sequence[str] = (),
        respect_gitignore: Optional[bool] = None,
        force_exclude: Optional[bool] = None,
    ) -> "FileFilter":
        base = tuple(exclude) if exclude is not None else (
            config.exclude if config.exclude is not None else DEFAULT_EXCLUDE
        )
        patterns = (*base, *config.extend_exclude, *extend_exclude)
        return cls(
            GlobSet.build(config.root, patterns),
            config.respect_gitignore if respect_gitignore is None else respect_gitignore,
            config.force_exclude if force_exclude is None else force_exclude,
        )


def parse_per_file_ignore(value: str) -> tuple[str, tuple[str, ...]]:
    """`--per-file-ignores 'tests/*:DEV101,DEV2'` -> ('tests/*', ('DEV101', 'DEV2'))."""
    pattern, sep, codes = value.rpartition(":")
    if not sep or not pattern:
        raise ValueError(f"expected GLOB:CODES, got '{value}'")
    return pattern, tuple(c.strip().upper() for c in codes.split(",") if c.strip())


__all__ = [
    "Config", "ConfigError", "DEFAULT_EXCLUDE", "FileFilter", "GlobSet", "Selection",
    "common_folder", "find", "load", "parse_per_file_ignore", "resolve", "selection",
]
