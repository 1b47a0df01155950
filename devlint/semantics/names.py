"""Resolve local names to qualified names, whatever the import style.

``import torch as th`` makes ``th.cuda.is_available`` resolve to
``torch.cuda.is_available``; ``from torch.cuda import is_available`` makes the
bare ``is_available`` resolve to the same. Much cheaper than libcst's
QualifiedNameProvider: imports are recorded as the walk meets them.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    # `type(...) is`: libcst's node classes are ABCs, whose failing isinstance is slow.
    if type(node) is cst.Name:
        return node.value  # type: ignore[attr-defined]
    parts: list[str] = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)  # type: ignore[attr-defined]
    return ".".join(reversed(parts))


def _import_target(node: cst.BaseExpression) -> str:
    return dotted(node) or ""


class ImportTable:
    """Local name -> qualified module path, for every import seen so far."""

    __slots__ = ("aliases", "star")

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        # `from helpers import *` seen: an unbound `torch` came through it.
        self.star = False

    def add_import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = _import_target(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.aliases[alias.asname.name.value] = full
            else:
                # `import torch.nn` binds `torch`.
                top = full.split(".", 1)[0]
                self.aliases[top] = top

    def add_import_from(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.star = True
            return
        if node.relative or node.module is None:
            return
        module = _import_target(node.module)
        for alias in node.names:
            name = _import_target(alias.name)
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{module}.{name}"

    def qualify(self, node: cst.BaseExpression) -> Optional[str]:
        """The qualified name of an imported Name/Attribute chain, else None."""
        path = dotted(node)
        if path is None:
            return None
        head, _, rest = path.partition(".")
        base = self.aliases.get(head)
        if base is None:
            if head != "torch" or not self.star:
                return None
            base = "torch"  # `from utils import *` that re-exports torch: nothing else binds it
        return f"{base}.{rest}" if rest else base

    def is_torch(self, node: cst.BaseExpression) -> bool:
        q = self.qualify(node)
        return q is not None and (q == "torch" or q.startswith("torch."))

    @property
    def imports_torch(self) -> bool:
        return any(v == "torch" or v.startswith("torch.") for v in self.aliases.values())


def is_variable_use(parent: Optional[cst.CSTNode], node: cst.BaseExpression) -> bool:
    """Is `node` (a Name or Attribute, child of `parent`) a read of a variable —
    not a keyword (`f(mask=...)`), an attribute's name (`x.mask`), a binding
    target, a parameter, a definition's or an import's name?"""
    if isinstance(parent, cst.Arg):
        return parent.keyword is not node
    if isinstance(parent, cst.Attribute):
        return parent.attr is not node
    if isinstance(parent, (cst.AssignTarget, cst.Param, cst.FunctionDef, cst.ClassDef, cst.ImportAlias,
                           cst.AsName, cst.NameItem, cst.CompFor, cst.For)):
        if isinstance(parent, cst.For):
            return parent.target is not node
        if isinstance(parent, cst.CompFor):
            return parent.target is not node
        return False
    if isinstance(parent, (cst.AugAssign, cst.AnnAssign)):
        return parent.target is not node or isinstance(parent, cst.AugAssign)
    return True


def string_key(node: cst.Subscript) -> Optional[str]:
    """The key of `cfg["use_gpu"]` (one plain string index), else None."""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        value = index.value.evaluated_value
        return value if isinstance(value, str) else None
    return None
