"""Libraries that exist only for NVIDIA GPUs.

A function or class that imports one of them (Transformer Engine, apex,
flash-attn, Megatron, CuPy, PyCUDA) is CUDA code by nature: it cannot run
where there is no GPU, so a hardcoded CUDA device inside it is no
portability bug. The guard layer treats such a function or class like one
named for CUDA. An import under an `if`, or in a `try` that goes on without
it, is optional (`if args.apex: from apex import amp`): the code around it
still runs without the library, and without a GPU.
"""

from __future__ import annotations

import libcst as cst

from .names import dotted
from .tree import ends_by_raising, iter_subtree

CUDA_ONLY_PACKAGES = frozenset({"transformer_engine", "apex", "flash_attn", "megatron", "cupy", "pycuda"})


def _top_level(module: cst.BaseExpression) -> str:
    return (dotted(module) or "").split(".", 1)[0]


def imports_cuda_only_library(node: cst.CSTNode) -> bool:
    """Does this function or class (anywhere in its body, not under an `if` or
    in a `try`) import a CUDA-only package?"""
    for sub in iter_subtree(node, prune=_optional):
        if isinstance(sub, cst.Import):
            if any(_top_level(alias.name) in CUDA_ONLY_PACKAGES for alias in sub.names):
                return True
        elif isinstance(sub, cst.ImportFrom) and not sub.relative and sub.module is not None:
            if _top_level(sub.module) in CUDA_ONLY_PACKAGES:
                return True
    return False


def _optional(node: cst.CSTNode) -> bool:
    """An `if`, or a `try` with a handler that goes on without the library
    (not `except ImportError: raise ImportError("install apex")`)."""
    if type(node) is cst.If:
        return True
    if type(node) in (cst.Try, cst.TryStar):
        return any(not ends_by_raising(handler.body) for handler in node.handlers)  # type: ignore[attr-defined]
    return False
