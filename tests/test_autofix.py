"""--fix writes files the way they were: mode, encoding, BOM, newlines; --diff writes nothing."""

from __future__ import annotations

import os
import stat
import sys

import pytest

from cli_run import BAD, DEV201_LINE, devlint

FIXED_LINE = "x = x.to('cpu', torch.float16)"


def fix(tmp_path, *args):
    out = devlint("--fix", "--select", "DEV201", "--no-cache", *args, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    return out


def test_fix_keeps_mode(tmp_path):
    path = tmp_path / "a.py"
    path.write_text(BAD)
    os.chmod(path, 0o751)
    fix(tmp_path, "a.py")
    assert path.read_text() == BAD.replace(DEV201_LINE, FIXED_LINE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]  # no temporary file left behind


@pytest.mark.parametrize(
    "name, data",
    [
        ("crlf", BAD.replace("\n", "\r\n").encode()),
        ("bom", b"\xef\xbb\xbf" + BAD.encode()),
        ("latin1", ("# -*- coding: latin-1 -*-\n# caf\u00e9\n" + BAD).encode("latin-1")),
        ("bom_crlf_unicode", b"\xef\xbb\xbf" + ("# \u00fcber \u2713\n" + BAD).replace("\n", "\r\n").encode()),
    ],
)
def test_fix_keeps_encoding_bom_and_newlines(tmp_path, name, data):
    path = tmp_path / "a.py"
    path.write_bytes(data)
    out = fix(tmp_path, "a.py")
    assert "Fixed 1 problem." in out.stdout
    encoding = "latin-1" if name == "latin1" else "utf-8"
    expected = data.replace(DEV201_LINE.encode(encoding), FIXED_LINE.encode(encoding))
    assert path.read_bytes() == expected


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_fix_through_a_symlink_rewrites_the_target(tmp_path):
    (tmp_path / "real.py").write_text(BAD)
    (tmp_path / "link").mkdir()
    os.symlink(tmp_path / "real.py", tmp_path / "link" / "a.py")
    fix(tmp_path, "link/a.py")
    assert os.path.islink(tmp_path / "link" / "a.py")
    assert (tmp_path / "real.py").read_text() == BAD.replace(DEV201_LINE, FIXED_LINE)


def test_diff_writes_nothing_and_unsafe_fixes_need_the_flag(tmp_path):
    path = tmp_path / "a.py"
    text = BAD + "y = torch.ones(1).cuda()\n"
    path.write_text(text)
    out = devlint("--diff", "--select", "DEV101,DEV201", "a.py", cwd=tmp_path)
    assert out.returncode == 0 and path.read_text() == text
    assert f"-{DEV201_LINE}\n+{FIXED_LINE}\n" in out.stdout
    assert out.stdout.startswith("--- a/a.py\n+++ b/a.py\n")  # git's labels: `git apply` takes it
    (tmp_path / "elsewhere").mkdir()
    absolute = devlint("--diff", "--select", "DEV201", str(path), cwd=tmp_path / "elsewhere")
    assert absolute.stdout.startswith(f"--- {path}\n+++ {path}\n")  # not `a//tmp/...`
    assert not [line for line in out.stdout.splitlines() if line.startswith("+y")]  # DEV101's fix is unsafe
    out = devlint("--diff", "--unsafe-fixes", "--select", "DEV101,DEV201", "a.py", cwd=tmp_path)
    assert "+y = torch.ones(1).to(" in out.stdout
    out = devlint("--fix", "--select", "DEV101,DEV201", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert "Fixed 1 problem." in out.stdout and "DEV101 [*]" in out.stdout
    assert "[*] 1 fixable with `--fix --unsafe-fixes`." in out.stdout


def test_a_fix_keeps_the_continuation_lines_of_the_block_it_is_in(tmp_path):
    # libcst indents a continuation line as "the block's indentation, then
    # more": the replacement must be generated inside that block.
    source = (
        "import torch\n\n\n"
        "def build(params):\n"
        "    generator = Generator(params.a, params.b,\n"
        "                    params.c, params.d).cuda()\n"
        "    return generator\n"
    )
    path = tmp_path / "build.py"
    path.write_text(source)
    out = devlint("check", "--select", "DEV101", "--fix", "--unsafe-fixes", "--no-cache", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert path.read_text() == source.replace(
        ".cuda()", '.to("cuda" if torch.cuda.is_available() else "cpu")'
    )
