"""benchmarks/precision.py: counts per rule and project, a reproducible
sample, the verdict format, and `--check` against a fresh run."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("precision", ROOT / "benchmarks" / "precision.py")
precision = importlib.util.module_from_spec(_spec)
sys.modules["precision"] = precision
_spec.loader.exec_module(precision)

PIN = "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, pin_memory=True)\n"
DTYPE = "import torch\nx = torch.randn(3)\nx = x.to(torch.float16, 'cpu')\n"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "alpha" / "pkg").mkdir(parents=True)
    (root / "beta").mkdir()
    (root / ".wheels").mkdir()  # hidden: not a project
    (root / "alpha" / "pkg" / "loaders.py").write_text(PIN)
    (root / "beta" / "cast.py").write_text(DTYPE)
    return root


def test_report_counts_per_rule_and_project_and_check_passes(corpus: Path, tmp_path: Path):
    out = tmp_path / "precision.md"
    assert precision.main(["--corpus", str(corpus), "--output", str(out), "-j", "1"]) == 0
    text = out.read_text()
    projs, counts = precision.parse_counts(text)
    assert projs == ["alpha", "beta"]
    assert counts["DEV403"] == {"alpha": 1, "beta": 0}
    assert counts["DEV201"] == {"alpha": 0, "beta": 1}
    assert all(sum(c.values()) == 0 for code, c in counts.items() if code not in ("DEV403", "DEV201"))
    assert "`alpha/pkg/loaders.py:3:" in text  # the sample lists the finding
    assert precision.main(["--corpus", str(corpus), "--output", str(out), "--check", "-j", "1"]) == 0


def test_check_fails_when_the_counts_change(corpus: Path, tmp_path: Path):
    out = tmp_path / "precision.md"
    precision.main(["--corpus", str(corpus), "--output", str(out), "-j", "1"])
    (corpus / "beta" / "more.py").write_text(PIN)
    assert precision.main(["--corpus", str(corpus), "--output", str(out), "--check", "-j", "1"]) == 1


def test_findings_saved_and_loaded_render_the_same(corpus: Path, tmp_path: Path):
    first, second, raw = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "f.json"
    precision.main(["--corpus", str(corpus), "--output", str(first), "--save-findings", str(raw), "-j", "1"])
    precision.main(["--corpus", str(corpus), "--output", str(second), "--load-findings", str(raw)])
    assert first.read_text() == second.read_text()


def test_the_sample_is_reproducible_and_at_most_thirty():
    findings = [precision.Finding("DEV999", "p", f"p/f{i}.py", i, 1, "m") for i in range(100)]
    once = precision.sample("DEV999", findings)
    assert len(once) == 30 and once == precision.sample("DEV999", list(reversed(findings)))
    assert precision.sample("DEV999", findings[:7]) == sorted(findings[:7], key=lambda f: (f.filename, f.row, f.column))


@pytest.mark.parametrize(
    "line, expected",
    [
        ("verdicts: TP=28 FP=2 sample=30", (28, 2, 30, None)),
        ("- `verdicts: TP=4 FP=0 sample=4 total=4`", (4, 0, 4, 4)),
        ("Verdicts: TP = 1, FP = 0, sample = 1", (1, 0, 1, None)),
    ],
)
def test_the_verdict_line_format(line, expected):
    m = precision.VERDICT_LINE.search(line)
    assert m is not None
    total = m.group("total")
    assert (int(m.group("tp")), int(m.group("fp")), int(m.group("sample")), int(total) if total else None) == expected


def test_false_positive_items_are_read_one_line_each(tmp_path: Path, monkeypatch):
    (tmp_path / "DEV999.md").write_text(
        "# audit\n\nverdicts: TP=1 FP=2 sample=3\n\n"
        "- FP a/b.py:3 — first,\n  continued here\n- FP c/d.py:9 — second\n- TP e/f.py:1 — not a false positive\n"
    )
    monkeypatch.setattr(precision, "VERDICTS_DIR", tmp_path)
    assert precision.read_false_positives("DEV999") == ["FP a/b.py:3 — first, continued here", "FP c/d.py:9 — second"]
    assert precision.read_verdict("DEV999") == precision.Verdict(1, 2, 3, None)
