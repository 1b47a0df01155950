"""The real command, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_files import FIXTURES

BAD = "import torch\nx = torch.randn(3)\nx = x.to(torch.float16, 'cpu')\n"


def devlint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "devlint", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(BAD)
    (tmp_path / "src" / "clean.py").write_text("import torch\nx = torch.zeros(2)\n")
    return tmp_path


def test_findings_print_relative_path_line_col_code_and_summary(project):
    out = devlint("src/", cwd=project)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0].startswith("src/train.py:3:5: DEV201 [*] ")
    assert lines[-1].startswith("Found 1 problem in 1 file.")


def test_check_subcommand_is_the_default(project):
    assert devlint("check", "src/", cwd=project).stdout == devlint("src/", cwd=project).stdout


def test_no_path_lints_the_current_directory(project):
    out = devlint(cwd=project)
    assert "src/train.py:3:5: DEV201" in out.stdout


def test_clean_code_exits_zero(project):
    out = devlint("src/clean.py", cwd=project)
    assert out.returncode == 0 and "All checks passed!" in out.stdout


def test_select_and_ignore_take_codes_and_prefixes(project):
    assert devlint("--select", "DEV1", "src/", cwd=project).returncode == 0
    assert devlint("--ignore", "DEV2", "src/", cwd=project).returncode == 0
    assert devlint("--select", "DEV201", "src/", cwd=project).returncode == 1
    assert devlint("--select", "ALL", "--ignore", "DEV201", "src/", cwd=project).returncode == 0


def test_json_output_shape(project):
    out = devlint("--output-format", "json", "src/", cwd=project)
    (item,) = json.loads(out.stdout)
    assert item["code"] == "DEV201" and item["name"] == "to-dtype-before-device"
    assert item["filename"] == "src/train.py"
    assert item["location"] == {"row": 3, "column": 5}
    assert item["end_location"]["row"] == 3
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"][0]["content"] == "x.to('cpu', torch.float16)"


def test_statistics_count_findings_per_rule_most_frequent_first(project):
    (project / "src" / "more.py").write_text(
        "import torch\na = torch.ones(2)\na = a.to(torch.float16, 'cpu')\na = a.to(torch.float16, 'cpu')\nb = torch.zeros(2)\nb.to('cpu')\n"
    )
    out = devlint("--statistics", "src/", cwd=project)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    # Three DEV201 (two here, one in train.py) before one DEV301; the finding lines themselves are not printed.
    assert lines[0].split("\t") == ["3", "DEV201", "[*] to-dtype-before-device"]
    assert lines[1].split("\t") == ["1", "DEV301", "[*] discarded-tensor-move"]
    assert lines[2].startswith("Found 4 problems in 2 files.")
    rows = json.loads(devlint("--statistics", "--output-format", "json", "src/", cwd=project).stdout)
    assert [(r["code"], r["count"], r["fixable"]) for r in rows] == [("DEV201", 3, True), ("DEV301", 1, True)]
    assert devlint("--statistics", "src/clean.py", cwd=project).stdout == "All checks passed!\n"


@pytest.mark.parametrize(
    "args, reason",
    [
        (("does-not-exist/",), "does-not-exist/: no such file or directory"),
        (("--select", "XYZ9", "."), "unknown rule code or prefix 'XYZ9'"),
        (("--output-format", "nope", "."), "nope"),
        (("rule", "DEV999"), "unknown rule code 'DEV999'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(project, args, reason):
    out = devlint(*args, cwd=project)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith("devlint: error: ") and reason in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_syntax_error_is_a_finding_and_the_run_goes_on(project):
    (project / "src" / "broken.py").write_text("import torch\ndef f(:\n    return torch.ones(1).cuda()\n")
    out = devlint("src/", cwd=project)
    assert out.returncode == 1
    assert "src/broken.py:2:" in out.stdout and "DEV000" in out.stdout
    assert "src/train.py:3:5: DEV201" in out.stdout


def test_fix_rewrites_the_file(project):
    out = devlint("--fix", "src/", cwd=project)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (project / "src" / "train.py").read_text() == BAD.replace("torch.float16, 'cpu'", "'cpu', torch.float16")
    assert "Fixed 1 problem." in out.stdout


def test_rules_lists_every_rule_and_rule_prints_docs_and_fixtures():
    listing = devlint("rules").stdout
    assert "DEV101" in listing and "unguarded-cuda" in listing
    doc = devlint("rule", "DEV201").stdout
    assert "## What it does" in doc and "## Fixture: bad.py" in doc
    assert (FIXTURES / "DEV201" / "bad.py").read_text().splitlines()[1] in doc


def test_shipped_fixtures_report_every_annotation():
    out = devlint("--output-format", "json", str(FIXTURES))
    found = {(Path(d["filename"]).parent.name, Path(d["filename"]).name, d["location"]["row"], d["code"]) for d in json.loads(out.stdout)}
    assert not [f for f in found if f[1] == "good.py"]
    assert any(f[1] == "bad.py" for f in found)


def test_many_files_use_worker_processes_and_match_one_worker(tmp_path):
    for i in range(40):
        (tmp_path / f"m{i}.py").write_text(BAD if i % 3 == 0 else "import torch\n")
    many = devlint("-j", "2", ".", cwd=tmp_path).stdout
    one = devlint("-j", "1", ".", cwd=tmp_path).stdout
    assert many == one and "Found 14 problems in 14 files." in many


def test_a_screened_file_is_linted_in_its_own_child_even_from_a_worker(tmp_path):
    # A line over the screening limit sends the file to an isolated child; in a
    # parallel run that child is started from a worker process.
    long_line = "LABELS = [" + ", ".join(f"'label_{i}'" for i in range(400)) + "]\n"
    (tmp_path / "big.py").write_text("import torch\n" + long_line + "x = torch.randn(2)\nx = x.to(torch.float16, 'cpu')\n")
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text("import torch\n")
    out = devlint("-j", "2", "--output-format", "concise", ".", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert "big.py:4:5: DEV201" in out.stdout and "could not be linted" not in out.stdout + out.stderr
