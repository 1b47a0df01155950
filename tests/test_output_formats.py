"""Every --output-format, through the real command."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from cli_run import BAD, DEV101_LINE, DEV201_LINE, devlint
from fixture_files import FIXTURES

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
REPO = FIXTURES.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TEXT = BAD + DEV101_LINE + "\n\n# end\n"  # DEV201 at 3:5, DEV101 at 4:5


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TEXT)
    (tmp_path / "src" / "clean.py").write_text("import torch\n")
    return tmp_path


def run(project: Path, fmt: str, *args: str, env=None) -> subprocess.CompletedProcess:
    out = devlint("--select", "DEV101,DEV201", *(["--output-format", fmt] if fmt else []), *args, "src/", cwd=project, env=env)
    assert out.returncode == 1, out.stderr
    return out


def test_full_is_the_default_finding_line_first_then_source_and_caret(project):
    out = run(project, "")
    assert out.stdout == run(project, "full").stdout
    blocks = out.stdout.split("\n\n")
    first = blocks[0].splitlines()
    assert first[0].startswith("src/train.py:3:5: DEV201 [*] ")
    assert first[1].strip() == "|"
    assert f"3 | {DEV201_LINE}" in first
    caret = first[first.index(f"3 | {DEV201_LINE}") + 1]
    # The carets sit under `x.to(...)`: column 5 to the end of the call.
    assert caret.index("^") == len("3 | ") + 4 and caret.count("^") == len(DEV201_LINE) - 4
    assert caret.rstrip().endswith("DEV201")
    assert any(line.strip().startswith("= help: ") for line in first)
    assert blocks[1].splitlines()[0].startswith("src/train.py:4:5: DEV101 [*] ")
    assert out.stdout.splitlines()[-1].startswith("Found 2 problems in 1 file.")
    assert not ANSI.search(out.stdout)  # not a terminal: no colour


def test_full_is_coloured_on_a_terminal_only(project):
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "DEVLINT_OUTPUT_FORMAT")}
    env["TERM"] = "xterm"
    proc = subprocess.Popen(
        [sys.executable, "-m", "devlint", "--select", "DEV201", "src/"], cwd=project, env=env,
        stdin=subprocess.DEVNULL, stdout=secondary, stderr=subprocess.PIPE,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(primary)
    shown = b"".join(chunks).decode()
    assert ANSI.search(shown), shown
    assert "src/train.py:3:5" in ANSI.sub("", shown)
    assert not ANSI.search(devlint("--select", "DEV201", "src/", cwd=project, env={"NO_COLOR": "1"}).stdout)


def test_concise_and_its_alias_text(project):
    out = run(project, "concise")
    assert out.stdout.splitlines() == [
        "src/train.py:3:5: DEV201 [*] " + out.stdout.splitlines()[0].split(" [*] ", 1)[1],
        "src/train.py:4:5: DEV101 [*] " + out.stdout.splitlines()[1].split(" [*] ", 1)[1],
        "Found 2 problems in 1 file. [*] 2 fixable (1 with `--fix`, 1 more with `--unsafe-fixes`).",
    ]
    assert run(project, "text").stdout == out.stdout


def test_environment_variable_picks_the_format_and_the_flag_wins(project):
    env = {"DEVLINT_OUTPUT_FORMAT": "json"}
    assert json.loads(run(project, "", env=env).stdout)[0]["code"] == "DEV201"
    assert run(project, "concise", env=env).stdout.startswith("src/train.py:3:5: DEV201")
    bad = devlint("src/", cwd=project, env={"DEVLINT_OUTPUT_FORMAT": "nope"})
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_grouped(project):
    lines = run(project, "grouped").stdout.splitlines()
    assert lines[0] == "src/train.py:"
    assert re.match(r"^  3:5 DEV201 \[\*\] ", lines[1]) and re.match(r"^  4:5 DEV101 \[\*\] ", lines[2])
    assert lines[3] == "" and lines[4].startswith("Found 2 problems")


def test_json_lines_match_json(project):
    as_json = json.loads(run(project, "json").stdout)
    lines = run(project, "json-lines").stdout.splitlines()
    assert [json.loads(line) for line in lines] == as_json and len(lines) == 2


GITHUB = re.compile(
    r"^::error file=(?P<file>[^,:]+),line=(?P<line>\d+),col=(?P<col>\d+),endLine=(?P<endLine>\d+),"
    r"endColumn=(?P<endColumn>\d+),title=(?P<title>[^,:]+)::(?P<message>.+)$"
)


def test_github_annotations(project):
    lines = run(project, "github").stdout.splitlines()
    assert len(lines) == 2
    first = GITHUB.match(lines[0])
    assert first, lines[0]
    assert first["file"] == "src/train.py" and (first["line"], first["col"]) == ("3", "5")
    assert first["endLine"] == "3" and int(first["endColumn"]) == 5 + len(DEV201_LINE) - 4
    assert first["title"] == "devlint (DEV201)" and "DEV201" in first["message"]


def test_github_escapes_properties_and_data(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a,b:c%.py").write_text(BAD)
    line = run(tmp_path, "github").stdout.strip()
    assert line.startswith("::error file=src/a%2Cb%3Ac%25.py,line=3,")
    assert GITHUB.match(line)


def test_junit(project):
    root = ET.fromstring(run(project, "junit").stdout)
    assert root.tag == "testsuites" and root.get("failures") == "2"
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == "src/train.py" and suite.get("tests") == "2"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["devlint.DEV201", "devlint.DEV101"]
    assert cases[0].get("line") == "3" and cases[0].find("failure") is not None
    clean = devlint("--output-format", "junit", "src/clean.py", cwd=project)
    assert clean.returncode == 0 and ET.fromstring(clean.stdout).get("failures") == "0"


def test_sarif_of_the_fixtures_validates_against_the_2_1_0_schema():
    out = devlint("--output-format", "sarif", "fixtures/", cwd=REPO)
    assert out.returncode == 1, out.stderr
    log = json.loads(out.stdout)
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    assert log["version"] == "2.1.0"
    (run_,) = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
    dev201 = rules[ids.index("DEV201")]
    assert "## What it does" in dev201["help"]["markdown"] and dev201["name"] == "to-dtype-before-device"
    results = run_["results"]
    assert results and len(results) == len(json.loads(devlint("--output-format", "json", "fixtures/", cwd=REPO).stdout))
    for result in results:
        assert result["ruleId"] == ids[result["ruleIndex"]]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert location["artifactLocation"]["uri"].startswith("fixtures/DEV")  # relative to the repository
        region = location["region"]
        assert {"startLine", "startColumn", "endLine", "endColumn"} <= set(region)


def test_sarif_uris_are_relative_to_the_repository_root_from_a_subfolder(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "pkg" / "src").mkdir(parents=True)
    (tmp_path / "pkg" / "src" / "train.py").write_text(BAD)
    out = devlint("--output-format", "sarif", "src/", cwd=tmp_path / "pkg")
    result = json.loads(out.stdout)["runs"][0]["results"][0]
    assert result["ruleId"] == "DEV201"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/src/train.py"
