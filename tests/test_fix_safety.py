"""--fix loses nothing: every fixture's fixes keep CRLF, BOM and lone-CR
newlines; a fix whose result would not parse is never written; fixing is
idempotent; a file edited meanwhile, a read-only file and the owner are
respected; and two devlint processes fixing (and two caching) the same tree
at once leave every file correctly fixed and the cache readable.

(Mode, encoding, BOM and symlinks on a single fix: tests/test_autofix.py.)
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from cli_run import devlint
from devlint.diagnostics import FixAvailability
from devlint.fixes import FileChanged, fix_source, parses, write_atomic
from devlint.rule import Rule
from fixture_files import FIXTURES

FIXED = sorted(p.parent.name for p in FIXTURES.glob("DEV*/fixed.py"))


def _fixture_tree(root: Path, transform=lambda b: b) -> dict[Path, tuple[bytes, bytes]]:
    """Every fixture's bad.py under root/<CODE>/bad.py: {path: (before, expected after)}."""
    files = {}
    for code in FIXED:
        bad = (FIXTURES / code / "bad.py").read_bytes()
        fixed = (FIXTURES / code / "fixed.py").read_bytes()
        path = root / code / "bad.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(transform(bad))
        files[path] = (transform(bad), transform(fixed))
    return files


def _fix_all(root: Path, *extra: str) -> subprocess.CompletedProcess:
    out = devlint("--fix", "--unsafe-fixes", "--no-cache", *extra, str(root))
    assert out.returncode in (0, 1) and out.stderr == "", out.stderr
    assert "Traceback" not in out.stdout
    return out


def crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def cr(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r")


@pytest.mark.parametrize(
    "transform",
    [crlf, cr, lambda b: b"\xef\xbb\xbf" + crlf(b)],
    ids=["crlf", "lone-cr", "bom-crlf"],
)
def test_every_fixture_fix_keeps_the_newline_style(tmp_path, transform):
    # Multi-line fixes (DEV103 adds an argument line) must use the file's newline.
    files = _fixture_tree(tmp_path, transform)
    _fix_all(tmp_path)
    for path, (_, expected) in files.items():
        assert path.read_bytes() == expected, path


def test_fixing_is_idempotent(tmp_path):
    files = _fixture_tree(tmp_path)
    first = _fix_all(tmp_path)
    assert "Fixed" in first.stdout
    after = {p: p.read_bytes() for p in files}
    for path, (_, expected) in files.items():
        assert after[path] == expected, path
    second = _fix_all(tmp_path)
    assert "Fixed" not in second.stdout
    assert {p: p.read_bytes() for p in files} == after


# ---------------------------------------------------------------- never a broken file


class BreaksSyntax(Rule):
    """A rule whose fix would leave the file unparseable."""

    code = "DEV990"
    name = "test-breaks-syntax"
    message = "test"
    fix_availability = FixAvailability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda":
            self.report(node, fix=self.fix("break it", [(node, cst.Name("lambda"))]))


class RenamesOnes(Rule):
    """A rule with a sound fix: ones -> zeros."""

    code = "DEV991"
    name = "test-renames-ones"
    message = "test"
    fix_availability = FixAvailability.SAFE

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "ones":
            self.report(node, fix=self.fix("zeros", [(node.attr, cst.Name("zeros"))]))


def test_a_fix_that_would_not_parse_is_never_applied():
    text = "import torch\nx = torch.ones(1).cuda()\ny = torch.ones(2)\n"
    result = fix_source(text, "t.py", [BreaksSyntax, RenamesOnes], unsafe=False)
    assert result.fixed_text == "import torch\nx = torch.zeros(1).cuda()\ny = torch.zeros(2)\n"
    assert parses(result.fixed_text)
    # Alone, the breaking fix leaves the text as it was: nothing to write.
    assert fix_source(text, "t.py", [BreaksSyntax], unsafe=False).fixed_text is None


# ---------------------------------------------------------------- the write itself


def test_write_atomic_refuses_to_overwrite_a_concurrent_edit(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"edited by someone else\n")
    with pytest.raises(FileChanged):
        write_atomic(path, b"fixed\n", original=b"original\n")
    assert path.read_bytes() == b"edited by someone else\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


def test_write_atomic_is_a_no_op_when_another_process_wrote_the_same_fix(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"fixed\n")
    before = path.stat()
    assert write_atomic(path, b"fixed\n", original=b"original\n") is False
    assert path.stat().st_ino == before.st_ino  # not replaced
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]
    path.write_bytes(b"original\n")
    assert write_atomic(path, b"fixed\n", original=b"original\n") is True
    assert path.read_bytes() == b"fixed\n"


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="giving a file away needs root")
def test_fix_keeps_the_owner(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("import torch\nx = torch.ones(1)\nx = x.to(torch.float16, 'cpu')\n")
    os.chown(path, 65534, 65534)
    out = devlint("--fix", "--no-cache", "a.py", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "x.to('cpu', torch.float16)" in path.read_text()
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534)


def _without_dac_override() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl")


def test_read_only_file_is_not_replaced(tmp_path):
    # Replacing a file by rename needs only a writable folder: devlint checks
    # the file's own permission first. Root may write anything, so as root
    # devlint runs without the capabilities that bypass permissions.
    path = tmp_path / "a.py"
    text = "import torch\nx = torch.ones(1)\nx = x.to(torch.float16, 'cpu')\n"
    path.write_text(text)
    path.chmod(0o444)
    preexec = None
    if os.geteuid() == 0:
        try:
            subprocess.run([sys.executable, "-c", "pass"], preexec_fn=_without_dac_override, check=True)
        except (OSError, subprocess.SubprocessError):
            pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE: root may write a read-only file")
        preexec = _without_dac_override
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    out = subprocess.run([sys.executable, "-m", "devlint", "--fix", "--no-cache", "a.py"], cwd=tmp_path,
                         capture_output=True, text=True, env=env, preexec_fn=preexec, timeout=300)
    assert out.returncode == 2
    assert out.stderr == "devlint: error: a.py: cannot write the fixes back: Permission denied (the file is read-only)\n"
    assert path.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["a.py"]


# ---------------------------------------------------------------- two processes at once


def test_two_fixers_and_two_cached_linters_at_once(tmp_path):
    root, cache = tmp_path / "tree", tmp_path / "cache"
    files = {}
    for copy in range(2):  # 2 x 19 files: enough for the worker pool (24)
        files.update(_fixture_tree(root / f"copy{copy}"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    fixer = [sys.executable, "-m", "devlint", "--fix", "--unsafe-fixes", "--no-cache", "-j", "2", str(root)]
    linter = [sys.executable, "-m", "devlint", "--cache-dir", str(cache), "--output-format", "concise", "-j", "2", str(root)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for cmd in (fixer, linter, fixer, linter)]
    outs = [p.communicate(timeout=600) for p in procs]
    for proc, (stdout, stderr) in zip(procs, outs):
        assert proc.returncode in (0, 1), stderr
        assert stderr == "" and "Traceback" not in stdout
    # Every file is exactly what one fixer alone makes of it.
    for path, (_, expected) in files.items():
        assert path.read_bytes() == expected, path
    assert not [p for p in root.rglob("*") if p.name.endswith(".devlint-tmp")]
    # The cache is whole: every entry is valid JSON, nothing half-written is left ...
    entries = [p for p in cache.rglob("*.json")]
    assert entries
    for entry in entries:
        json.loads(entry.read_bytes())
    assert not [p for p in cache.rglob(".tmp-*")]
    # ... and a cached run says exactly what an uncached one does.
    cached = devlint("--cache-dir", str(cache), "--output-format", "concise", str(root))
    fresh = devlint("--no-cache", "--output-format", "concise", str(root))
    assert cached.stdout == fresh.stdout and cached.returncode == fresh.returncode
