"""Scopes the walk passes through: module, class, function — and what each binds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from .values import UNKNOWN, Value


@dataclass
class ClassInfo:
    name: str
    node: cst.ClassDef
    bases: tuple[str, ...]  # qualified names where resolvable, else the local dotted name
    is_module: bool = False  # an nn.Module subclass (directly or through local classes)
    is_dataset: bool = False  # a torch Dataset / IterableDataset subclass
    # `self.<attr>` assignments seen in the class' methods, and the method names it defines.
    attrs: dict[str, Value] = field(default_factory=dict)
    members: set[str] = field(default_factory=set)
    # Facts derived from the class' body on demand, cached (see semantics/classes.py).
    facts: dict[str, object] = field(default_factory=dict)


@dataclass
class Scope:
    kind: str  # "module" | "class" | "function"
    node: cst.CSTNode
    names: dict[str, Value] = field(default_factory=dict)
    # Function scopes: parameter name -> its default expression (None when it has none).
    params: dict[str, Optional[cst.BaseExpression]] = field(default_factory=dict)
    cls: Optional[ClassInfo] = None  # class scopes: the class; method scopes: their class
    # Keys of `names` that are `<name>.<attr>` (a device kept on a plain object: `args.device`).
    attribute_keys: set[str] = field(default_factory=set)

    def bind(self, name: str, value: Value) -> None:
        self.names[name] = value

    def lookup(self, name: str) -> Optional[Value]:
        return self.names.get(name)


def function_name(node: cst.CSTNode) -> Optional[str]:
    return node.name.value if isinstance(node, (cst.FunctionDef, cst.ClassDef)) else None


def is_unknown(value: Optional[Value]) -> bool:
    return value is None or value is UNKNOWN
