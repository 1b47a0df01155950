"""Every rule is complete: unique code and name, docs in ruff's sections,
fixtures, a runtime claim, and a module named after it."""

from __future__ import annotations

import re
import sys

import pytest

from devlint import registry
from devlint.diagnostics import FixAvailability
from devlint.rule import DOC_SECTIONS

from fixture_files import FIXTURES

RULES = registry.all_rules()


def test_codes_and_names_are_unique():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_is_complete(rule):
    assert re.fullmatch(r"DEV[1-9]\d{2}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    module = sys.modules[rule.__module__].__name__.rsplit(".", 1)[-1]
    assert module == f"{rule.code.lower()}_{rule.name.replace('-', '_')}"
    docs = rule.docs()
    for section in DOC_SECTIONS:
        assert f"## {section}" in docs, f"{rule.code} docs lack '## {section}'"
    assert rule.message and rule.claim is not None
    folder = FIXTURES / rule.code
    assert (folder / "bad.py").is_file() and (folder / "good.py").is_file()
    has_fixed = (folder / "fixed.py").is_file()
    assert has_fixed == (rule.fix_availability is not FixAvailability.NONE)


def test_every_fixture_folder_belongs_to_a_rule():
    codes = {r.code for r in RULES}
    folders = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert folders <= codes
