"""Review mode: --diff-against REV, --baseline / --write-baseline."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_run import DEV101_LINE, DEV201_LINE, codes, devlint

HEAD = "import torch\nx = torch.randn(3)\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=root, check=True, capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text(f"{HEAD}{DEV201_LINE}\n")
    (tmp_path / "old.py").write_text(f"import torch\n{DEV101_LINE}\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "legacy")
    return tmp_path


def lint(root: Path, *args: str):
    out = devlint("--output-format", "concise", "--select", "DEV101,DEV201", *args, cwd=root)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    return out


def test_diff_against_reports_only_added_or_changed_lines(repo):
    # Two lines inserted above the old finding (which moves to line 5), one new finding, one new file.
    (repo / "a.py").write_text(f"{HEAD}# a comment\n\n{DEV201_LINE}\nw = torch.randn(2).to(torch.float16, 'cpu')\n")
    (repo / "new.py").write_text(f"import torch\n{DEV101_LINE}\n")
    assert codes(lint(repo, "--diff-against", "HEAD")) == [("a.py", 6, "DEV201"), ("new.py", 2, "DEV101")]
    assert len(codes(lint(repo))) == 4  # without review mode: everything
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "change")
    assert codes(lint(repo, "--diff-against", "HEAD~1")) == [("a.py", 6, "DEV201"), ("new.py", 2, "DEV101")]
    assert codes(lint(repo, "--diff-against", "HEAD")) == []


def test_a_changed_line_counts(repo):
    (repo / "old.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    assert codes(lint(repo, "--diff-against", "HEAD")) == [("old.py", 2, "DEV101")]


def test_diff_against_notebooks_by_cell(repo):
    cell = lambda src: {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
    nb = {"cells": [cell(["import torch\n"]), cell(["x = torch.randn(3)\n", f"{DEV201_LINE}"])],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "nb.ipynb").write_text(json.dumps(nb, indent=1))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "nb")
    nb["cells"].insert(1, cell(["y = torch.randn(3).to(torch.float16, 'cpu')\n"]))
    (repo / "nb.ipynb").write_text(json.dumps(nb, indent=1))
    assert codes(lint(repo, "--diff-against", "HEAD")) == [("nb.ipynb:cell 2", 1, "DEV201")]


def test_diff_against_errors(repo, tmp_path_factory):
    out = devlint("--diff-against", "no-such-rev", cwd=repo)
    assert out.returncode == 2 and "unknown revision 'no-such-rev'" in out.stderr
    elsewhere = tmp_path_factory.mktemp("plain")
    (elsewhere / "a.py").write_text(HEAD)
    out = devlint("--diff-against", "HEAD", "a.py", cwd=elsewhere)
    assert out.returncode == 2 and "not in a git work tree" in out.stderr


def test_baseline_silences_recorded_findings_even_when_code_moves(tmp_path):
    a = tmp_path / "pkg" / "a.py"
    a.parent.mkdir()
    a.write_text(f"{HEAD}def f():\n    {DEV201_LINE}\n    return x\n{DEV101_LINE}\n")
    out = lint(tmp_path, "--write-baseline", "baseline.json")
    assert out.returncode == 0 and "Wrote 2 findings" in out.stdout
    recorded = json.loads((tmp_path / "baseline.json").read_text())["findings"]
    assert {(f["code"], f["file"]) for f in recorded} == {("DEV201", "pkg/a.py"), ("DEV101", "pkg/a.py")}
    assert lint(tmp_path, "--baseline", "baseline.json").returncode == 0

    # Moved: the function below the other finding, blank lines and a comment added, indentation changed.
    a.write_text(f"{HEAD}\n\n{DEV101_LINE}\n# moved\nclass C:\n    def f(self):\n        {DEV201_LINE}\n        return x\n")
    out = lint(tmp_path, "--baseline", "baseline.json")
    assert out.returncode == 0, out.stdout
    # From another folder, the baseline's paths still match (they are relative to the baseline file).
    assert lint(tmp_path / "pkg", "--baseline", "../baseline.json", ".").returncode == 0

    # A second copy of a recorded line, and a new finding, are reported.
    a.write_text(a.read_text() + f"{DEV201_LINE}\nz = torch.ones(2).cuda()\n")
    assert codes(lint(tmp_path, "--baseline", "baseline.json")) == [("pkg/a.py", 11, "DEV201"), ("pkg/a.py", 12, "DEV101")]


def test_bad_baseline_is_exit_2(tmp_path):
    (tmp_path / "a.py").write_text(HEAD)
    (tmp_path / "b.json").write_text("[1, 2]")
    out = devlint("--baseline", "b.json", "a.py", cwd=tmp_path)
    assert out.returncode == 2 and "b.json" in out.stderr and len(out.stderr.splitlines()) == 1
    out = devlint("--baseline", "missing.json", "a.py", cwd=tmp_path)
    assert out.returncode == 2 and "missing.json" in out.stderr
