"""More hostile snippets than tests/test_verify_isolation.py's: one that kills
the supervisor it was forked from and hangs, one that spins the CPU ignoring
every catchable signal, one that floods binary output without a newline (and
megabytes of stderr), one that closes every file descriptor. The verifier
reports each, judges the rest, and leaves no process behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
if os.name != "posix":  # pragma: no cover
    pytest.skip("the verifier needs a POSIX system", allow_module_level=True)

SNIPPETS = {
    "parricide.py": """
        import os, pathlib, signal, time
        pathlib.Path({pids!r}, "parricide").write_text(str(os.getpid()))
        os.kill(os.getppid(), signal.SIGKILL)  # the supervisor that forked it
        time.sleep(300)
    """,
    "spin.py": """
        import os, pathlib, signal
        pathlib.Path({pids!r}, "spin").write_text(str(os.getpid()))
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
            signal.signal(s, signal.SIG_IGN)
        while True:
            pass
    """,
    "binary.py": """
        import os
        for _ in range(32):
            os.write(1, b"\\xff\\x00" * (1 << 19))
        os.write(2, b"e" * (1 << 22))
    """,
    "closefds.py": """
        import os
        os.closerange(0, 4096)
        raise SystemExit(3)
    """,
    "fine.py": """
        import torch
        print(torch.ones(2).sum().item())
    """,
}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("hostile")
    pids = tmp_path / "pids"
    pids.mkdir()
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    for name, body in SNIPPETS.items():
        (snippets / name).write_text(textwrap.dedent(body).lstrip().replace("{pids!r}", repr(str(pids))))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "devlint", "verify", str(snippets), "--format", "json", "-v", "--timeout", "3", "-j", "2"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    elapsed = time.monotonic() - started
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    data = json.loads(out.stdout)
    outcomes = {Path(row["origin"]).name: row["runs"][0]["outcome"] for row in data["rules"]}
    statuses = {Path(row["origin"]).name: row["status"] for row in data["rules"]}
    return outcomes, statuses, pids, elapsed


def test_a_snippet_that_kills_its_supervisor_is_reported_and_killed(result):
    outcomes, _, pids, _ = result
    outcome = outcomes["parricide.py"]
    assert outcome["kind"] == "error" and "supervisor" in outcome["error"]
    assert not _alive(int((pids / "parricide").read_text()))


def test_a_cpu_spinner_deaf_to_signals_times_out_and_is_killed(result):
    outcomes, _, pids, _ = result
    assert outcomes["spin.py"]["kind"] == "timeout"
    assert not _alive(int((pids / "spin").read_text()))


def test_binary_output_without_newlines_is_capped(result):
    outcomes, *_ = result
    outcome = outcomes["binary.py"]
    assert outcome["kind"] == "ok"
    assert outcome["output_bytes"] == (32 << 20) + (4 << 20)
    assert outcome["output_truncated"]


def test_a_snippet_without_file_descriptors_still_reports_its_exit(result):
    outcomes, *_ = result
    assert outcomes["closefds.py"]["kind"] == "exit" and outcomes["closefds.py"]["exit_code"] == 3


def test_the_verifier_survives_them_all(result):
    outcomes, statuses, _, elapsed = result
    assert outcomes["fine.py"]["kind"] == "ok" and statuses["fine.py"] == "clean"
    assert elapsed < 150
