"""Libraries that exist only for NVIDIA GPUs.

A function or class that imports one of them (Transformer Engine, apex,
flash-attn, Megatron, CuPy, PyCUDA) is CUDA code by nature: it cannot run
where there is no GPU, so a hardcoded CUDA device inside it is no
portability bug. The guard layer treats such a function or class like one
named for CUDA.
"""

from __future__ import annotations

import libcst as cst

from .names import dotted
from .tree import iter_subtree

CUDA_ONLY_PACKAGES = frozenset({"transformer_engine", "apex", "flash_attn", "megatron", "cupy", "pycuda"})


def _top_level(module: cst.BaseExpression) -> str:
    return (dotted(module) or "").split(".", 1)[0]


def imports_cuda_only_library(node: cst.CSTNode) -> bool:
    """Does this function or class (anywhere in its body) import a CUDA-only package?"""
    for sub in iter_subtree(node):
        if isinstance(sub, cst.Import):
            if any(_top_level(alias.name) in CUDA_ONLY_PACKAGES for alias in sub.names):
                return True
        elif isinstance(sub, cst.ImportFrom) and not sub.relative and sub.module is not None:
            if _top_level(sub.module) in CUDA_ONLY_PACKAGES:
                return True
    return False
