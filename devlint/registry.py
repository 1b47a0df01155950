"""The central code registry: every rule module under devlint/rules/, by code."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Iterable

from . import rules as _rules_pkg
from .rule import Rule


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(_rules_pkg.__path__):
        module = importlib.import_module(f"{_rules_pkg.__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__:
                found.append(obj)
    return tuple(sorted(found, key=lambda r: r.code))


def by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


def matches(code: str, selector: str) -> bool:
    """`ALL`, a family prefix (`DEV1`), or a full code select a rule."""
    selector = selector.strip().upper()
    return selector == "ALL" or code.startswith(selector)


def is_known_selector(selector: str) -> bool:
    return any(matches(r.code, selector) for r in all_rules()) or selector.strip().upper() in ("ALL", "DEV0", "DEV000")


def select(selectors: Iterable[str], ignores: Iterable[str]) -> tuple[type[Rule], ...]:
    sel, ign = list(selectors), list(ignores)
    return tuple(
        r for r in all_rules() if any(matches(r.code, s) for s in sel) and not any(matches(r.code, i) for i in ign)
    )
