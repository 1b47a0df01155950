"""Guard the hot path by counting work, not by timing it: one parse and one
walk per file that can hold a finding, none for text that cannot."""

from __future__ import annotations

import gc

import libcst as cst
import pytest

from devlint import registry
from devlint.engine import WORK, lint_source, parse_module
from devlint.rule import Report
from devlint.semantics import Context
from devlint.semantics import tree

from fixture_files import fixture_dirs

ALL = registry.all_rules()


def test_one_parse_and_one_walk_per_file_and_none_for_files_without_torch():
    files = [p for d in fixture_dirs() for p in sorted(d.glob("*.py"))]
    WORK.clear()
    for path in files:
        lint_source(path.read_text(encoding="utf-8"), str(path), ALL)
    assert WORK["parses"] == len(files) and WORK["walks"] == len(files)

    WORK.clear()
    lint_source("import numpy as np\nx = np.zeros(3)\nx.to('cuda')\n" * 50, "plain.py", ALL)
    assert WORK["parses"] == 0 and WORK["walks"] == 0


def test_prefilter_never_changes_findings_on_the_fixtures():
    for d in fixture_dirs():
        for path in sorted(d.glob("*.py")):
            text = path.read_text(encoding="utf-8")
            with_filter = lint_source(text, str(path), ALL).diagnostics
            without = lint_source(text, str(path), ALL, prefilter=False).diagnostics
            assert with_filter == without, path


def test_prefilter_never_changes_findings_on_any_cell_alone():
    """Each cell with only the prelude's imports: a trigger that some other
    cell (or the prelude) happens to contain cannot hide a missing one."""
    from devlint.verify.cells import read_snippets

    checked = 0
    for d in fixture_dirs():
        for path in sorted(d.glob("*.py")):
            snippets = read_snippets(path)
            lines = snippets.text.splitlines()
            imports = [line for line in lines[: snippets.prelude_end] if line.startswith(("import ", "from "))]
            for cell in snippets.cells:
                text = "\n".join(imports + lines[cell.start - 1 : cell.end]) + "\n"
                with_filter = lint_source(text, str(path), ALL).diagnostics
                without = lint_source(text, str(path), ALL, prefilter=False).diagnostics
                assert with_filter == without, (path, cell.index)
                checked += bool(without)
    assert checked > 100


def test_a_call_trigger_also_shows_as_the_import_that_renames_it():
    source = (
        "import torch.nn as nn\nfrom torch import Tensor as T\n\n"
        "class Anchors(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.a = T([1.0, 2.0])\n\n"
        "    def forward(self, x):\n        return x * self.a\n"
    )
    with_filter = lint_source(source, "renamed.py", ALL).diagnostics
    assert [d.code for d in with_filter] == ["DEV302"]
    assert with_filter == lint_source(source, "renamed.py", ALL, prefilter=False).diagnostics


def test_tree_children_skip_whitespace_but_keep_every_expression():
    import libcst as cst

    module = cst.parse_module("x = f(a, b=c)  # note\n")
    names = [n.value for n in tree.iter_subtree(module) if isinstance(n, cst.Name)]
    assert names == ["x", "f", "a", "b", "c"]
    assert not any(isinstance(n, (cst.Comment, cst.SimpleWhitespace)) for n in tree.iter_subtree(module))


def test_a_linted_tree_is_freed_by_reference_counting():
    """Nothing of a file's walk may sit in a reference cycle: the cyclic
    collector would then traverse every dead tree again (a fifth of a run on
    transformers). Findings, fixes and conditions included (bad.py files)."""
    files = [p for d in fixture_dirs() for p in sorted(d.glob("*.py"))]
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        findings = sum(len(lint_source(p.read_text(encoding="utf-8"), str(p), ALL).diagnostics) for p in files)
        gc.collect()
        kept = [o for o in gc.garbage if isinstance(o, (cst.CSTNode, Context, Report))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert findings > 0
    assert kept == []


def test_parsing_without_validation_builds_the_same_tree_and_restores_validation():
    """The engine skips libcst's per-node validation while its parser runs (the
    parser's output is valid by construction); the tree must be the one libcst
    builds, and nodes made afterwards -- the rules' fixes -- still validated."""
    for path in (p for d in fixture_dirs() for p in sorted(d.glob("*.py"))):
        text = path.read_text(encoding="utf-8")
        tree = parse_module(text)
        assert tree.code == text and tree.deep_equals(cst.parse_module(text)), path
    with pytest.raises(cst.CSTValidationError):
        cst.Name("not a name")
