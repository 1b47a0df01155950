"""`# noqa` on a line, `# devlint: noqa` for a file, unused directives."""

from __future__ import annotations

from pathlib import Path

from cli_run import DEV201_LINE, codes, devlint

HEAD = "import torch\nx = torch.randn(3)\n"


def lint(root: Path, *args: str):
    out = devlint("--output-format", "concise", "--no-cache", "--select", "DEV101,DEV201", *args, cwd=root)
    assert out.returncode in (0, 1), out.stderr
    return out


LINE_COMMENTS = [  # (comment, silences DEV201?)
    ("# noqa", True),
    ("# noqa: DEV201", True),
    ("# NOQA:DEV201", True),
    ("#noqa:dev201", True),
    ("# noqa: DEV2", True),
    ("# noqa: DEV101, DEV201", True),
    ("# noqa:DEV101,DEV201", True),
    ("# noqa: DEV101 DEV201", True),
    ("# noqa: E501,DEV201  -- dtype first on purpose", True),
    ("# noqa: DEV20", True),
    ("# noqa: DEV101", False),
    ("# noqa: E501", False),
    ("# noqa: DEV202", False),
    ("# no qa", False),
]


def test_line_noqa_follows_flake8(tmp_path):
    lines = [f"{DEV201_LINE}  {comment}" for comment, _ in LINE_COMMENTS]
    (tmp_path / "a.py").write_text(HEAD + "\n".join(lines) + "\n")
    reported = {row for _, row, _ in codes(lint(tmp_path, "a.py"))}
    for n, (comment, silenced) in enumerate(LINE_COMMENTS, start=3):
        assert (n not in reported) is silenced, comment


def test_noqa_only_silences_its_own_line(tmp_path):
    (tmp_path / "a.py").write_text(f"{HEAD}{DEV201_LINE}  # noqa: DEV201\n{DEV201_LINE}\n")
    assert codes(lint(tmp_path, "a.py")) == [("a.py", 4, "DEV201")]


FILE_DIRECTIVES = [  # (directive, what is still reported)
    ("# devlint: noqa", []),
    ("# DEVLINT: NOQA", []),
    ("#devlint:noqa:DEV2", [(5, "DEV101")]),
    ("# devlint: noqa: DEV1", [(4, "DEV201")]),
    ("# devlint: noqa: DEV101, DEV201", []),
]


def test_file_level_noqa(tmp_path):
    for n, (directive, _) in enumerate(FILE_DIRECTIVES):
        (tmp_path / f"f{n}.py").write_text(f"{directive}\n{HEAD}{DEV201_LINE}\ny = torch.ones(1).cuda()\n")
    found = codes(lint(tmp_path, "."))
    for n, (directive, expected) in enumerate(FILE_DIRECTIVES):
        assert [(row, code) for f, row, code in found if f == f"f{n}.py"] == expected, directive


def test_file_level_noqa_must_stand_on_its_own_line(tmp_path):
    (tmp_path / "a.py").write_text(f"{HEAD}{DEV201_LINE}\nz = 1  # devlint: noqa\n")
    assert codes(lint(tmp_path, "a.py")) == [("a.py", 3, "DEV201")]


def test_silenced_findings_are_not_fixed(tmp_path):
    text = f"{HEAD}{DEV201_LINE}  # noqa: DEV201\n"
    (tmp_path / "a.py").write_text(text)
    lint(tmp_path, "--fix", "a.py")
    assert (tmp_path / "a.py").read_text() == text


UNUSED = (
    "import torch\n"
    "x = torch.randn(3)  # noqa: DEV201\n"                          # unused
    f"{DEV201_LINE}  # noqa: DEV201, E501\n"                        # used; E501 is another linter's
    f"{DEV201_LINE}  # noqa: DEV101,DEV201\n"                       # DEV101 unused
    "z = torch.zeros(1)  # noqa: DEV2 -- reason\n"                  # unused, keeps the reason
    "# devlint: noqa: DEV1\n"                                       # unused file-level
    "w = torch.zeros(1)  # noqa\n"                                  # bare: may be another linter's
    "v = torch.zeros(1)  # noqa: DEV999\n"                          # names no enabled rule: left alone
)
FIXED = (
    "import torch\n"
    "x = torch.randn(3)\n"
    f"{DEV201_LINE}  # noqa: DEV201, E501\n"
    f"{DEV201_LINE}  # noqa: DEV201\n"
    "z = torch.zeros(1)  # -- reason\n"
    "w = torch.zeros(1)  # noqa\n"
    "v = torch.zeros(1)  # noqa: DEV999\n"
)


def test_unused_noqa_is_reported_only_when_asked(tmp_path):
    (tmp_path / "a.py").write_text(UNUSED)
    assert codes(lint(tmp_path, "a.py")) == []
    out = lint(tmp_path, "--report-unused-noqa", "a.py")
    assert codes(out) == [("a.py", 2, "DEV001"), ("a.py", 4, "DEV001"), ("a.py", 5, "DEV001"), ("a.py", 6, "DEV001")]
    assert "a.py:2:21: DEV001 [*] Unused `noqa` directive (unused: `DEV201`)" in out.stdout
    assert "(unused: `DEV101`)" in out.stdout
    assert "Unused file-level `devlint: noqa` directive" in out.stdout
    assert out.returncode == 1


def test_fix_removes_unused_noqa_and_is_idempotent(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(UNUSED)
    diff = lint(tmp_path, "--report-unused-noqa", "--diff", "a.py")
    assert "-x = torch.randn(3)  # noqa: DEV201\n+x = torch.randn(3)\n" in diff.stdout
    assert path.read_text() == UNUSED
    out = lint(tmp_path, "--report-unused-noqa", "--fix", "a.py")
    assert path.read_text() == FIXED
    assert "Fixed 4 problems." in out.stdout and out.returncode == 0
    again = lint(tmp_path, "--report-unused-noqa", "--fix", "a.py")
    assert path.read_text() == FIXED and "Fixed" not in again.stdout


def test_plain_fix_leaves_noqa_comments_alone(tmp_path):
    (tmp_path / "a.py").write_text(UNUSED)
    lint(tmp_path, "--fix", "a.py")
    assert (tmp_path / "a.py").read_text() == UNUSED


def test_unused_noqa_obeys_ignore(tmp_path):
    (tmp_path / "a.py").write_text(UNUSED)
    assert codes(lint(tmp_path, "--report-unused-noqa", "--ignore", "DEV001", "a.py")) == []


def test_file_level_noqa_silences_a_syntax_error_too(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ndef f(:\n    return torch.ones(1).cuda()\n")
    assert codes(lint(tmp_path, "a.py")) == [("a.py", 2, "DEV000")]
    (tmp_path / "a.py").write_text("# devlint: noqa\nimport torch\ndef f(:\n    return torch.ones(1).cuda()\n")
    assert codes(lint(tmp_path, "a.py")) == []
