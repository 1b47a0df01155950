"""One parametrised test drives every fixture (flake8-bugbear style): bad.py's
annotations are reported exactly, good.py is silent under every rule, and
--fix turns bad.py into fixed.py, idempotently."""

from __future__ import annotations

import pytest

from devlint import registry
from devlint.engine import lint_source
from devlint.fixes import fix_source

from fixture_files import expected_findings, fixture_dirs

ALL = registry.all_rules()
DIRS = fixture_dirs()


@pytest.mark.parametrize("folder", DIRS, ids=[d.name for d in DIRS])
def test_bad_reports_exactly_the_annotations(folder):
    text = (folder / "bad.py").read_text(encoding="utf-8")
    expected = expected_findings(text)
    assert expected, "bad.py must annotate at least one offending line"
    assert all(code == folder.name for _, code in expected if code == folder.name) and any(
        code == folder.name for _, code in expected
    ), f"bad.py must exercise {folder.name}"
    found = {(d.start.row, d.code) for d in lint_source(text, "bad.py", ALL).diagnostics}
    assert found == expected, f"missing: {sorted(expected - found)}, unexpected: {sorted(found - expected)}"


@pytest.mark.parametrize("folder", DIRS, ids=[d.name for d in DIRS])
def test_good_is_silent(folder):
    text = (folder / "good.py").read_text(encoding="utf-8")
    found = [(d.start.row, d.code, d.message) for d in lint_source(text, "good.py", ALL).diagnostics]
    assert found == []


FIXABLE = [d for d in DIRS if (d / "fixed.py").exists()]


@pytest.mark.parametrize("folder", FIXABLE, ids=[d.name for d in FIXABLE])
def test_fix_turns_bad_into_fixed(folder):
    bad = (folder / "bad.py").read_text(encoding="utf-8")
    fixed = (folder / "fixed.py").read_text(encoding="utf-8")
    result = fix_source(bad, "bad.py", ALL, unsafe=True)
    assert result.fixed_text == fixed
    again = fix_source(fixed, "fixed.py", ALL, unsafe=True)
    assert again.fixed_text is None, "a second --fix must change nothing"
