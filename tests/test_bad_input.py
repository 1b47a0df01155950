"""Bad input through the real command line: each case gets a clear one-line
message, the exit code it deserves, never a traceback -- and the run goes on
(a good file linted beside the bad one still gets its finding).

devlint parses only files that mention torch and contain a trigger of an
enabled rule, so every bad file here is realistic: it imports torch and holds
a line that DEV101 reports.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

from cli_run import devlint
from devlint.diagnostics import Location
from devlint.indentation import expand_indent_tabs

FINDING = "x = torch.ones(1).cuda()"  # DEV101 at column 5
GOOD = f"import torch\n{FINDING}\n"
GOOD_HIT = "ok.py:2:5: DEV101"


def lint(tmp_path: Path, *args: str, env: Optional[dict] = None, preexec_fn=None) -> subprocess.CompletedProcess:
    """`devlint --no-cache --output-format concise ARGS ok.py` in tmp_path, checked
    for what every run owes: no traceback, every stderr line one `devlint: error:`."""
    (tmp_path / "ok.py").write_text(GOOD)
    cmd = [sys.executable, "-m", "devlint", "--no-cache", "--output-format", "concise", *args, "ok.py"]
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    full_env.update(env or {})
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, env=full_env, timeout=300,
                         preexec_fn=preexec_fn)
    assert "Traceback" not in out.stdout + out.stderr, out.stderr
    for line in out.stderr.splitlines():
        assert line.startswith("devlint: error: "), out.stderr
    assert GOOD_HIT in out.stdout, (out.stdout, out.stderr)  # the run went on
    return out


def error_line(out: subprocess.CompletedProcess) -> str:
    (line,) = out.stderr.splitlines()
    return line


def write(tmp_path: Path, name: str, content: "str | bytes") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", newline="")
    else:
        path.write_bytes(content)
    return path


# ---------------------------------------------------------------- syntax


def test_syntax_error_is_dev000_on_its_line(tmp_path):
    write(tmp_path, "bad.py", f"import torch\n{FINDING}\ndef f(:\n    pass\n")
    out = lint(tmp_path, "bad.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "bad.py:3:7: DEV000 SyntaxError: invalid syntax" in out.stdout


PYTHON2 = {  # one file per construct, all in one run
    "print.py": ("print 'loading'", "Missing parentheses in call to 'print'"),
    "exec.py": ("exec 'y = 1'", "Missing parentheses in call to 'exec'"),
    "octal.py": ("mode = 0755", "leading zeros in decimal integer literals are not permitted"),
    "backtick.py": ("s = `x`", "invalid syntax"),
}


def test_python2_code_is_dev000_on_its_line(tmp_path):
    for name, (line, _) in PYTHON2.items():
        write(tmp_path, name, f"import torch\n{line}\n{FINDING}\n")
    out = lint(tmp_path, *PYTHON2)
    assert out.returncode == 1 and out.stderr == ""
    for name, (_, message) in PYTHON2.items():
        (hit,) = [l for l in out.stdout.splitlines() if l.startswith(name)]
        assert hit.startswith(f"{name}:2:") and "DEV000" in hit and message in hit, hit


# Tabs after spaces, consistent for CPython (tab stops every 8 columns), which
# libcst's tokenizer refuses ("no matching outer block for dedent").
MIXED_TABS = (
    "import torch\n"
    "class A:\n"
    "  \tdef f(self):\n"
    '    \t\tdoc = """\n'
    "\t\tkept\n"
    '\t\t"""\n'
    "    \t\treturn torch.ones(2).cuda()\n"
)


def test_tab_indentation_python_reads_is_linted_in_place(tmp_path):
    path = write(tmp_path, "tabs.py", MIXED_TABS)
    out = lint(tmp_path, "tabs.py")
    assert out.returncode == 1 and out.stderr == ""
    # Column 14 of the original line: four spaces and two tabs are six characters.
    assert "tabs.py:7:14: DEV101" in out.stdout and "DEV000" not in out.stdout
    fixed = devlint("--no-cache", "--output-format", "concise", "--fix", "--unsafe-fixes", "tabs.py", cwd=tmp_path)
    assert fixed.returncode == 1 and "tabs.py:7:14: DEV101" in fixed.stdout, fixed.stdout + fixed.stderr
    # The fix was written for the expanded copy's indentation: not applied.
    assert path.read_text() == MIXED_TABS


def test_expanding_indent_tabs_keeps_strings_and_maps_columns_back():
    expanded = expand_indent_tabs(MIXED_TABS)
    assert expanded is not None
    lines = expanded.text.splitlines()
    assert lines[2] == "        def f(self):" and lines[6].startswith(" " * 16 + "return")
    assert lines[4:6] == ["\t\tkept", '\t\t"""']  # inside the string: its value
    assert expanded.original(Location(7, 24)) == Location(7, 14)
    assert expanded.original(Location(1, 5)) == Location(1, 5)
    assert expand_indent_tabs("import torch\nx = 1\n") is None


# ---------------------------------------------------------------- encodings and newlines


def test_latin1_with_coding_line_is_linted(tmp_path):
    write(tmp_path, "latin.py", f"# -*- coding: latin-1 -*-\nimport torch\nname = 'café'\n{FINDING}\n".encode("latin-1"))
    out = lint(tmp_path, "latin.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "latin.py:4:5: DEV101" in out.stdout


def test_latin1_without_coding_line_is_one_clear_error(tmp_path):
    write(tmp_path, "latin.py", f"import torch\nname = 'café'\n{FINDING}\n".encode("latin-1"))
    out = lint(tmp_path, "latin.py")
    assert out.returncode == 2
    assert error_line(out) == (
        "devlint: error: latin.py: cannot decode file: byte 0xe9 on line 2, column 12 is not valid UTF-8; "
        "declare the file's encoding (PEP 263: `# -*- coding: latin-1 -*-`) or save it as UTF-8"
    )
    assert "1 file could not be linted." in out.stdout and "All checks passed" not in out.stdout


def test_unknown_coding_line_is_one_clear_error(tmp_path):
    write(tmp_path, "enc.py", f"# -*- coding: klingon -*-\nimport torch\n{FINDING}\n")
    out = lint(tmp_path, "enc.py")
    assert out.returncode == 2
    assert error_line(out) == "devlint: error: enc.py: cannot decode file: unknown encoding: klingon"


def test_utf8_bom_columns_are_not_shifted(tmp_path):
    write(tmp_path, "bom.py", b"\xef\xbb\xbf" + f"import torch\n{FINDING}\n".encode())
    out = lint(tmp_path, "bom.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "bom.py:2:5: DEV101" in out.stdout


def test_crlf_and_mixed_newlines_keep_line_numbers(tmp_path):
    write(tmp_path, "crlf.py", f"import torch\r\n\r\n{FINDING}\r\n")
    write(tmp_path, "mixed.py", f"import torch\r\n{FINDING}\ny = 1\r{FINDING}\r\n")
    out = lint(tmp_path, "crlf.py", "mixed.py")
    assert out.returncode == 1 and out.stderr == ""
    for hit in ("crlf.py:3:5: DEV101", "mixed.py:2:5: DEV101", "mixed.py:4:5: DEV101"):
        assert hit in out.stdout


def test_nul_byte_is_dev000_where_it_is(tmp_path):
    write(tmp_path, "nul.py", f"import torch\n{FINDING}\0\n".encode())
    out = lint(tmp_path, "nul.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "nul.py:2:25: DEV000 SyntaxError: source code cannot contain null bytes" in out.stdout


def test_string_literals_cpython_refuses_are_dev000(tmp_path):
    # libcst parses these; a rule that evaluates the literal used to crash on it.
    write(tmp_path, "nulstr.py", 'import torch\nd = torch.device("cu\0da")\n' + FINDING + "\n")
    write(tmp_path, "escape.py", 'import torch\nd = torch.device("\\N{nope}")\nif d == "cuda:0": pass\n')
    out = lint(tmp_path, "nulstr.py", "escape.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "nulstr.py:2:21: DEV000 SyntaxError: source code cannot contain null bytes" in out.stdout
    assert "escape.py:2:28: DEV000 SyntaxError: (unicode error) 'unicodeescape' codec can't decode" in out.stdout


def test_code_libcst_validation_refuses_is_linted_and_fixed(tmp_path):
    # `assert(x if c else y)`: CPython takes it, libcst's node validator does not
    # ("Must have at least one space after 'assert'"); rebuilding the tree for
    # positions or fixes used to turn the file into an internal error.
    text = (
        "import torch\n\n\ndef run(x, debris):\n"
        "    assert(x.cuda() if debris else True)\n    return x\n\n\n"
        "model = torch.load('model.pt')\n"
    )
    write(tmp_path, "paren_assert.py", text)
    out = lint(tmp_path, "paren_assert.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "paren_assert.py:5:12: DEV101" in out.stdout
    assert "paren_assert.py:9:9: DEV103" in out.stdout
    fixed = subprocess.run(
        [sys.executable, "-m", "devlint", "--no-cache", "--fix", "--unsafe-fixes", "paren_assert.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert (fixed.returncode, fixed.stderr) == (0, ""), fixed.stderr
    assert "Fixed 2 problems" in fixed.stdout
    after = (tmp_path / "paren_assert.py").read_text()
    assert 'assert(x.to("cuda" if torch.cuda.is_available() else "cpu") if debris else True)' in after
    assert "torch.load('model.pt', map_location=\"cpu\")" in after
    compile(after, "paren_assert.py", "exec")


def test_binary_junk_named_py_is_one_clear_error(tmp_path):
    write(tmp_path, "junk.py", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR torch .cuda( \xff\xfe\x00")
    out = lint(tmp_path, "junk.py")
    assert out.returncode == 2
    assert error_line(out).startswith("devlint: error: junk.py: cannot decode file: byte 0x89 on line 1, column 1")


def test_empty_file_passes(tmp_path):
    write(tmp_path, "empty.py", "")
    write(tmp_path, "blank.py", "\n\n   \n# torch .cuda( only in a comment\n")
    out = lint(tmp_path, "empty.py", "blank.py")
    assert out.returncode == 1 and out.stderr == ""
    assert not [l for l in out.stdout.splitlines() if l.startswith(("empty.py", "blank.py"))]


# ---------------------------------------------------------------- size and depth


@functools.lru_cache(maxsize=None)
def _generated(size: int) -> str:
    block = "def layer_{i}(x):\n    w = torch.randn({i}, 3)\n    return x @ w.to(x.device)\n\n"
    parts, total, i = ["import torch\n\n"], 0, 0
    while total < size:
        parts.append(block.format(i=i))
        total += len(parts[-1])
        i += 1
    return "".join(parts)


def test_twenty_megabyte_generated_file_is_refused_with_a_reason(tmp_path):
    # libcst needs ~0.8 GB and tens of seconds per MB: 20 MB would take the
    # machine down. devlint refuses to parse it, says so, and lints the rest.
    write(tmp_path, "big.py", _generated(20 * 2**20) + f"{FINDING}\n")
    out = lint(tmp_path, "big.py")
    assert out.returncode == 2
    assert error_line(out) == (
        "devlint: error: big.py: too large to lint (20.0 MB of code; the limit is 4 MB, "
        "set DEVLINT_MAX_FILE_MB to raise it, or exclude the file)"
    )


def test_twenty_megabyte_file_that_cannot_hold_a_finding_is_not_an_error(tmp_path):
    write(tmp_path, "data.py", _generated(20 * 2**20).replace("torch", "numpy"))
    out = lint(tmp_path, "data.py")
    assert out.returncode == 1 and out.stderr == ""


def test_parens_nested_thousands_deep_is_the_syntax_error_cpython_sees(tmp_path):
    # libcst's native parser overflows the stack on this and kills the process;
    # devlint parses it in a child process, where CPython's parser (which
    # guards its stack) rejects it first.
    write(tmp_path, "deep.py", f"import torch\n{FINDING}\ny = {'(' * 5000}1{')' * 5000}\n")
    out = lint(tmp_path, "deep.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "deep.py:3:205: DEV000 SyntaxError: too many nested parentheses" in out.stdout


def test_operator_chains_thousands_deep_are_syntax_errors(tmp_path):
    chains = {"unary.py": "-" * 100_000 + "1", "not.py": "not " * 50_000 + "x", "attribute.py": "a" + ".b" * 50_000}
    for name, chain in chains.items():
        write(tmp_path, name, f"import torch\n{FINDING}\ny = {chain}\n")
    out = lint(tmp_path, *chains)
    assert out.returncode == 1 and out.stderr == ""
    for name in chains:
        assert f"{name}:1:1: DEV000 SyntaxError: too complex for Python's parser" in out.stdout


def test_deep_but_valid_nesting_is_linted_in_a_child(tmp_path):
    write(tmp_path, "deep.py", f"import torch\ny = {'(' * 150}torch.ones(1).cuda(){')' * 150}\n")
    out = lint(tmp_path, "deep.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "deep.py:2:155: DEV101" in out.stdout


def test_a_parser_crash_is_reported_on_its_file_and_the_run_goes_on(tmp_path):
    # A real SIGSEGV in libcst's native parser: a 256 KB stack overflows at
    # ~60 levels (the default stack is 512 MB).
    write(tmp_path, "deep.py", f"import torch\ny = {'(' * 150}torch.ones(1).cuda(){')' * 150}\n")
    out = lint(tmp_path, "deep.py", env={"DEVLINT_STACK_MB": "0.25"})
    assert out.returncode == 2
    assert error_line(out) == (
        "devlint: error: deep.py: the parser crashed on this file "
        "(killed by SIGSEGV; brackets nested 100 or more levels deep)"
    )
    assert "1 file could not be linted." in out.stdout


def test_a_worker_that_dies_is_replaced_and_its_file_reported(tmp_path):
    # Nesting under the screening threshold, in a worker with a small stack:
    # the worker process dies; its file is named and the other 30 are linted.
    for i in range(30):
        write(tmp_path, f"pkg/f{i:02}.py", GOOD)
    write(tmp_path, "pkg/f15.py", f"import torch\ny = {'(' * 80}torch.ones(1).cuda(){')' * 80}\n")
    out = lint(tmp_path, "-j", "2", "pkg", env={"DEVLINT_STACK_MB": "0.25"})
    assert out.returncode == 2
    assert error_line(out) == "devlint: error: pkg/f15.py: devlint crashed on this file (killed by SIGSEGV)"
    hits = {l.split(":")[0] for l in out.stdout.splitlines() if ": DEV101" in l}
    assert hits == {f"pkg/f{i:02}.py" for i in range(30) if i != 15} | {"ok.py"}


def test_a_file_that_parses_too_slowly_is_given_up_on(tmp_path):
    # 1500 chained subscripts: CPython takes them, libcst needs many seconds.
    write(tmp_path, "slow.py", f"import torch\n{FINDING}\ny = a{'[0]' * 1500}\n")
    out = lint(tmp_path, "slow.py", env={"DEVLINT_ISOLATION_TIMEOUT": "1"})
    assert out.returncode == 2
    assert error_line(out) == (
        "devlint: error: slow.py: gave up after 1 s (a line longer than 2000 characters); "
        "set DEVLINT_ISOLATION_TIMEOUT to wait longer"
    )


# ---------------------------------------------------------------- the file system


def _without_dac_override() -> None:
    """In the child, before exec: drop root's power to read what it may not
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the bounding set."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _can_drop_capabilities() -> bool:
    try:
        subprocess.run([sys.executable, "-c", "pass"], preexec_fn=_without_dac_override, check=True)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def test_file_without_read_permission_is_one_clear_error(tmp_path):
    bad = write(tmp_path, "secret.py", GOOD)
    bad.chmod(0)
    preexec = None
    if os.geteuid() == 0:
        # Root reads anything, so chmod alone proves nothing: run devlint as
        # root without the capabilities that bypass file permissions.
        if not _can_drop_capabilities():
            pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE: a mode-000 file is readable")
        preexec = _without_dac_override
    try:
        out = lint(tmp_path, "secret.py", preexec_fn=preexec)
    finally:
        bad.chmod(0o644)
    assert out.returncode == 2
    assert error_line(out) == "devlint: error: secret.py: cannot read file: Permission denied"


def test_broken_symlink_named_on_the_command_line(tmp_path):
    (tmp_path / "broken.py").symlink_to(tmp_path / "gone.py")
    out = devlint("--no-cache", "broken.py", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"devlint: error: broken.py: broken symbolic link (to {tmp_path / 'gone.py'}, which does not exist)\n"


def test_symlink_loop_named_on_the_command_line(tmp_path):
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    out = devlint("--no-cache", "a.py", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == "devlint: error: a.py: symbolic link loop\n"


def test_broken_links_loops_fifos_in_a_folder_are_skipped(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "broken.py").symlink_to(src / "gone.py")
    (src / "a.py").symlink_to(src / "b.py")
    (src / "b.py").symlink_to(src / "a.py")
    (src / "loop").symlink_to(src)  # a folder link back to itself: not followed
    os.mkfifo(src / "pipe.py")  # reading it would block forever
    write(tmp_path, "src/real.py", GOOD)
    out = lint(tmp_path, "src")
    assert out.returncode == 1 and out.stderr == ""
    assert "src/real.py:2:5: DEV101" in out.stdout
    assert "Found 2 problems in 2 files." in out.stdout


def test_directory_named_like_a_python_file_is_a_directory(tmp_path):
    write(tmp_path, "x.py/inner.py", GOOD)
    out = lint(tmp_path, "x.py")
    assert out.returncode == 1 and out.stderr == ""
    assert "x.py/inner.py:2:5: DEV101" in out.stdout
    out = lint(tmp_path, ".")
    assert out.returncode == 1 and out.stderr == ""
    assert "x.py/inner.py:2:5: DEV101" in out.stdout


def test_nonexistent_path_is_exit_2_and_one_line(tmp_path):
    out = devlint("--no-cache", "nothere.py", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == "devlint: error: nothere.py: no such file or directory\n"


# ---------------------------------------------------------------- notebooks and configuration


def test_notebook_that_is_not_json_is_one_clear_error(tmp_path):
    write(tmp_path, "nb.ipynb", '{"cells": [{"cell_type": "code", "source": "import torch\n')
    out = lint(tmp_path, "nb.ipynb")
    assert out.returncode == 2
    line = error_line(out)
    assert line.startswith("devlint: error: nb.ipynb: not a notebook: invalid JSON: ")


def test_notebook_whose_only_torch_cell_does_not_parse_gets_dev000(tmp_path):
    # The rest of the notebook needs no parse; the broken cell must still be reported.
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["import torch\n", "x = torch.ones(1).cuda(\n"]}
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# title"]}, cell],
                "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    write(tmp_path, "nb.ipynb", json.dumps(notebook))
    out = lint(tmp_path, "nb.ipynb")
    assert out.returncode == 1 and out.stderr == ""
    assert "nb.ipynb:cell 2:2:23: DEV000 SyntaxError: '(' was never closed" in out.stdout


@pytest.mark.parametrize(
    "toml, message",
    [
        ('[tool.devlint]\nselekt = ["DEV1"]\n', "[tool.devlint]: unknown key `selekt`"),
        ('[tool.devlint]\nselect = "DEV1"\n', "[tool.devlint]: `select`: expected a list of rule codes, got 'DEV1'"),
        ('[tool.devlint]\nselect = ["DEV1"\n', "invalid TOML"),
    ],
)
def test_invalid_configuration_is_exit_2_naming_the_key(tmp_path, toml, message):
    write(tmp_path, "pyproject.toml", toml)
    write(tmp_path, "ok.py", GOOD)
    out = devlint("ok.py", cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"devlint: error: {tmp_path / 'pyproject.toml'}: {message}"), line
