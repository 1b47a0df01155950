"""[tool.devlint] in pyproject.toml, through the real command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_run import BAD, DEV101_LINE, codes, devlint

BOTH = BAD + DEV101_LINE + "\n"  # DEV201 on line 3, DEV101 on line 4


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def lint(root: Path, *args: str) -> list[tuple[str, int, str]]:
    out = devlint("--output-format", "concise", "--no-cache", *args, cwd=root)
    assert out.returncode in (0, 1), out.stderr
    return sorted(codes(out))


def test_select_ignore_and_extend_select_from_the_file(tmp_path):
    write(tmp_path, {"a.py": BOTH, "pyproject.toml": '[tool.devlint]\nselect = ["DEV2"]\n'})
    assert lint(tmp_path, "a.py") == [("a.py", 3, "DEV201")]
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nselect = ["DEV2"]\nextend-select = ["DEV101"]\n')
    assert lint(tmp_path, "a.py") == [("a.py", 3, "DEV201"), ("a.py", 4, "DEV101")]
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nselect = ["DEV1", "DEV2"]\nignore = ["DEV201"]\n')
    assert ("a.py", 3, "DEV201") not in lint(tmp_path, "a.py")
    assert ("a.py", 4, "DEV101") in lint(tmp_path, "a.py")


def test_command_line_overrides_the_file(tmp_path):
    write(tmp_path, {"a.py": BOTH, "pyproject.toml": '[tool.devlint]\nselect = ["DEV2"]\nignore = ["DEV201"]\n'})
    assert lint(tmp_path, "a.py") == []
    # --select replaces the file's selection (its ignore too); --ignore adds to it.
    assert lint(tmp_path, "--select", "DEV201", "a.py") == [("a.py", 3, "DEV201")]
    assert lint(tmp_path, "--select", "DEV101,DEV201", "--ignore", "DEV101", "a.py") == [("a.py", 3, "DEV201")]
    assert lint(tmp_path, "--extend-select", "DEV101", "a.py") == [("a.py", 4, "DEV101")]


def test_per_file_ignores_take_globs(tmp_path):
    write(tmp_path, {
        "src/a.py": BOTH, "tests/test_a.py": BOTH, "tests/deep/test_b.py": BOTH,
        "pyproject.toml": '[tool.devlint]\nselect = ["DEV101", "DEV201"]\n'
                          '[tool.devlint.per-file-ignores]\n"tests/**/*.py" = ["DEV1"]\n"test_b.py" = ["DEV201"]\n',
    })
    found = lint(tmp_path, ".")
    assert ("src/a.py", 4, "DEV101") in found and ("src/a.py", 3, "DEV201") in found
    assert ("tests/test_a.py", 3, "DEV201") in found
    assert not [f for f in found if f[0].startswith("tests/") and f[2] == "DEV101"]
    assert not [f for f in found if f[0] == "tests/deep/test_b.py"]
    # And from the command line:
    assert lint(tmp_path, "--per-file-ignores", "src/*:DEV2", "src/") == [("src/a.py", 4, "DEV101")]


def test_exclude_and_extend_exclude(tmp_path):
    write(tmp_path, {"src/a.py": BAD, "legacy/old.py": BAD, "build/gen.py": BAD, "src/vendored_x.py": BAD})
    everything = {f[0] for f in lint(tmp_path, ".")}
    assert everything == {"src/a.py", "legacy/old.py", "src/vendored_x.py"}  # build/ is excluded by default
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["legacy", "src/vendored_*.py"]\n')
    assert {f[0] for f in lint(tmp_path, ".")} == {"src/a.py"}
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nexclude = ["legacy"]\n')  # replaces the defaults
    assert {f[0] for f in lint(tmp_path, ".")} == {"src/a.py", "build/gen.py", "src/vendored_x.py"}
    assert {f[0] for f in lint(tmp_path, "--extend-exclude", "src", ".")} == {"build/gen.py"}


def test_explicit_files_are_linted_unless_force_exclude(tmp_path):
    write(tmp_path, {"legacy/old.py": BAD, "pyproject.toml": '[tool.devlint]\nextend-exclude = ["legacy"]\n'})
    assert lint(tmp_path, "legacy/old.py") == [("legacy/old.py", 3, "DEV201")]
    assert lint(tmp_path, "--force-exclude", "legacy/old.py") == []
    (tmp_path / "pyproject.toml").write_text('[tool.devlint]\nextend-exclude = ["legacy"]\nforce-exclude = true\n')
    assert lint(tmp_path, "legacy/old.py") == []
    assert lint(tmp_path, "--no-force-exclude", "legacy/old.py") == [("legacy/old.py", 3, "DEV201")]


def git_init(root: Path) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def test_gitignored_files_are_skipped_by_default(tmp_path):
    git_init(tmp_path)
    write(tmp_path, {"a.py": BAD, "generated/g.py": BAD, "scratch.py": BAD, ".gitignore": "generated/\nscratch.py\n"})
    assert {f[0] for f in lint(tmp_path, ".")} == {"a.py"}
    assert {f[0] for f in lint(tmp_path, "--no-respect-gitignore", ".")} == {"a.py", "generated/g.py", "scratch.py"}
    (tmp_path / "pyproject.toml").write_text("[tool.devlint]\nrespect-gitignore = false\n")
    assert {f[0] for f in lint(tmp_path, ".")} == {"a.py", "generated/g.py", "scratch.py"}
    assert {f[0] for f in lint(tmp_path, "--respect-gitignore", ".")} == {"a.py"}
    # An ignored file named explicitly is linted, unless exclusions are forced.
    assert {f[0] for f in lint(tmp_path, "--respect-gitignore", "scratch.py")} == {"scratch.py"}
    assert lint(tmp_path, "--respect-gitignore", "--force-exclude", "scratch.py", "generated/g.py") == []


def test_nearest_pyproject_with_a_devlint_table_wins(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.devlint]\nselect = ["DEV1"]\n',
        "pkg/pyproject.toml": '[project]\nname = "pkg"\n',  # no [tool.devlint]: not a devlint config
        "pkg/a.py": BOTH,
        "other/pyproject.toml": '[tool.devlint]\nselect = ["DEV2"]\n',
        "other/b.py": BOTH,
    })
    assert lint(tmp_path, "pkg/a.py") == [("pkg/a.py", 4, "DEV101")]
    assert lint(tmp_path, "other/") == [("other/b.py", 3, "DEV201")]
    assert lint(tmp_path / "other", ".") == [("b.py", 3, "DEV201")]
    assert lint(tmp_path / "pkg") == [("a.py", 4, "DEV101")]


def test_config_option_names_the_file(tmp_path):
    write(tmp_path, {
        "pyproject.toml": '[tool.devlint]\nselect = ["DEV1"]\n', "a.py": BOTH,
        "ci/devlint.toml": 'select = ["DEV2"]\n', "ci/pyproject.toml": '[tool.devlint]\nignore = ["DEV1", "DEV2"]\n',
    })
    assert lint(tmp_path, "--config", "ci/devlint.toml", "a.py") == [("a.py", 3, "DEV201")]
    assert lint(tmp_path, "--config", "ci/pyproject.toml", "a.py") == []


@pytest.mark.parametrize(
    "table, key",
    [
        ('selekt = ["DEV1"]', "selekt"),
        ('select = "DEV1"', "select"),
        ('select = ["NOPE9"]', "select"),
        ('respect-gitignore = "yes"', "respect-gitignore"),
        ('per-file-ignores = ["tests/*"]', "per-file-ignores"),
        ('per-file-ignores = {"tests/*" = ["XYZ1"]}', "per-file-ignores"),
        ('extend_select = ["DEV1"]', "extend_select"),
    ],
)
def test_bad_configuration_is_exit_2_naming_key_and_file(tmp_path, table, key):
    write(tmp_path, {"pyproject.toml": f"[tool.devlint]\n{table}\n", "a.py": BAD})
    out = devlint("a.py", cwd=tmp_path)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert str(tmp_path / "pyproject.toml") in out.stderr and f"`{key}" in out.stderr
    assert "Traceback" not in out.stderr


def test_invalid_toml_and_missing_config_file_are_exit_2(tmp_path):
    write(tmp_path, {"pyproject.toml": "[tool.devlint\n", "a.py": BAD})
    out = devlint("a.py", cwd=tmp_path)
    assert out.returncode == 2 and "pyproject.toml" in out.stderr and "invalid TOML" in out.stderr
    out = devlint("--config", "missing.toml", "a.py", cwd=tmp_path)
    assert out.returncode == 2 and "missing.toml" in out.stderr
