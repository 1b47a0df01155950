"""Source text for the nodes a fix puts in, indented like the code they replace.

libcst stores a continuation line inside brackets as "the block's indentation,
then this much more" (`ParenthesizedWhitespace(indent=True)`). Generated on
its own (`Module.code_for_node`), a node has no enclosing block, so every
continuation line of a multi-line call it holds would lose that indentation.
Here the node is generated with the indentation of the blocks around the node
it replaces."""

from __future__ import annotations

from typing import Iterable

import libcst as cst

try:  # libcst's code generator state; without it, generate without block indentation
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - a libcst that moved it
    CodegenState = None  # type: ignore[assignment,misc]


def block_indents(module: cst.Module, targets: Iterable[cst.CSTNode]) -> dict[int, tuple[str, ...]]:
    """For each target node (by id), the indentation tokens of the blocks
    around it. One walk of the tree, only for files with fixes."""
    wanted = {id(t) for t in targets}
    found: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[cst.CSTNode, tuple[str, ...]]] = [(module, ())]
    while stack and len(found) < len(wanted):
        node, indents = stack.pop()
        if id(node) in wanted:
            found[id(node)] = indents
        if isinstance(node, cst.IndentedBlock):
            indents = (*indents, module.default_indent if node.indent is None else node.indent)
        stack.extend((child, indents) for child in node.children)
    return found


def code_in_block(module: cst.Module, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
    """`node`'s source as it reads inside blocks indented by `indents`."""
    if CodegenState is None or not indents:
        return module.code_for_node(node)
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return "".join(state.tokens)
