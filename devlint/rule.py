"""The base class every rule derives from.

A rule declares its metadata as class attributes, documents itself in ruff's
sections in its docstring, and implements `visit_<Node>` / `leave_<Node>`
methods that the engine calls during its single walk of the file. It reports
through `self.report`; the semantic context is `self.ctx`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, ClassVar, Optional, Sequence

import libcst as cst

from .claims import Claim
from .diagnostics import Applicability, FixAvailability
from .semantics import Context
from .semantics.tree import never_runs

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


@dataclass(frozen=True)
class NodeFix:
    """A fix as libcst sees it: replace these nodes with new ones."""

    title: str
    applicability: Applicability
    replacements: tuple[tuple[cst.CSTNode, cst.CSTNode], ...]


@dataclass
class Report:
    """A finding still tied to its node; positions are computed after the walk,
    only for files that have findings."""

    rule: type["Rule"]  # the class, not the instance: an instance holds the report list
    node: cst.CSTNode
    message: str
    fix: Optional[NodeFix]
    condition: Optional[Callable[[], bool]]  # re-checked once the whole file is known


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    claim: ClassVar[Optional[Claim]] = None
    # Raw-text substrings of which a file must hold one for this rule to fire.
    # Files (or files' parts) holding none are never parsed for it.
    triggers: ClassVar[tuple[str, ...]] = ()

    def __init__(self, ctx: Context, sink: list[Report]) -> None:
        self.ctx = ctx
        self._sink = sink

    def report(
        self,
        node: cst.CSTNode,
        message: Optional[str] = None,
        *,
        fix: Optional[NodeFix] = None,
        condition: Optional[Callable[[], bool]] = None,
    ) -> None:
        if never_runs(self.ctx.stack):
            return  # `if False:` (code an author switched off) raises nothing
        self._sink.append(Report(type(self), node, message or self.message, fix, condition))

    def fix(self, title: str, replacements: Sequence[tuple[cst.CSTNode, cst.CSTNode]]) -> NodeFix:
        """A fix at this rule's declared applicability."""
        applicability = (
            Applicability.SAFE if self.fix_availability is FixAvailability.SAFE else Applicability.UNSAFE
        )
        return NodeFix(title, applicability, tuple(replacements))

    @classmethod
    def hooks(cls) -> dict[str, str]:
        """`visit_Call` -> ("visit", "Call") for every hook the rule defines."""
        return {n: n for n in dir(cls) if re.match(r"^(visit|leave)_[A-Z]\w*$", n)}

    @classmethod
    def docs(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")
