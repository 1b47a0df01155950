"""Is this code a fallback for older PyTorch releases?

`torch.amp.GradScaler("cuda") if TORCH_GE_2_4 else torch.cuda.amp.GradScaler()`,
`if is_torch_version(">=", "2.3"): ... else: ...`, `if hasattr(torch, "amp"):`,
`try: torch.amp.GradScaler(device) except AttributeError: torch.cuda.amp.GradScaler()`.
A deprecated spelling in such a branch is what the old releases need, and
the new spelling sits right beside it: no finding for the deprecation.
"""

from __future__ import annotations

import re
from typing import Sequence

import libcst as cst

from .names import dotted
from .tree import iter_subtree

# Identifiers that, in a condition, test which PyTorch (or Python) release runs.
VERSION_WORDS = re.compile(r"version|TORCH_(GREATER|LESS|GE|LT|GT|LE)|_TORCH_\d|TORCH_\d", re.I)
# `hasattr(torch, "amp")`, `hasattr(torch.cuda.amp, ...)`: asks the release about
# torch itself. `hasattr(self, "_cache")` asks about something else and chooses nothing.
_TORCH_OBJECT = re.compile(r"^(torch|amp|cuda|nn)\b")
# What an old release raises where a new API is missing or takes other arguments.
_FALLBACK_EXCEPTIONS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError", "Exception"})


def _asks_torch(call: cst.Call) -> bool:
    if not (isinstance(call.func, cst.Name) and call.func.value == "hasattr" and call.args):
        return False
    return bool(_TORCH_OBJECT.match(dotted(call.args[0].value) or ""))


def _tests_version(test: cst.CSTNode) -> bool:
    for node in iter_subtree(test):
        if isinstance(node, cst.Call) and _asks_torch(node):
            return True
        if isinstance(node, cst.Name) and VERSION_WORDS.search(node.value):
            return True
        if isinstance(node, cst.Attribute) and VERSION_WORDS.search(node.attr.value):
            return True
    return False


def _catches_missing_api(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for t in types:
        name = dotted(t.value if isinstance(t, cst.Element) else t) or ""
        if name.rsplit(".", 1)[-1] in _FALLBACK_EXCEPTIONS:
            return True
    return False


def is_version_fallback(chain: Sequence[cst.CSTNode]) -> bool:
    """Is the node at the top of `chain` (its ancestors, outermost first) in a
    branch chosen by the PyTorch version, or in an `except` that catches a
    missing API?"""
    for i in range(len(chain) - 2, -1, -1):
        node, child = chain[i], chain[i + 1]
        if isinstance(node, (cst.If, cst.IfExp)) and child is not node.test and _tests_version(node.test):
            return True
        if isinstance(node, cst.ExceptHandler) and _catches_missing_api(node):
            return True
    return False
