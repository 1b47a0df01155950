"""A snippet's accidents stay the snippet's: one that hangs, one that kills
itself with a signal, one that prints megabytes, one that writes files, one
that forks without end, one that escapes into a session of its own. The
verifier reports each, survives, and leaves no process and no file behind."""

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
    "hang.py": """
        import subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        print("helper", child.pid, flush=True)
        time.sleep(300)
    """,
    "crash.py": """
        import os, signal
        print("about to crash", flush=True)
        os.kill(os.getpid(), signal.SIGSEGV)
    """,
    "loud.py": """
        import sys
        block = "x" * (1 << 20)
        for _ in range(40):
            sys.stdout.write(block)
    """,
    "writer.py": """
        import os, pathlib
        pathlib.Path("out.txt").write_text("hello")
        os.makedirs("deep/er", exist_ok=True)
        pathlib.Path("deep/er/data.bin").write_bytes(b"0" * 4096)
        os.chmod("deep", 0o500)  # a read-only folder must not stop the clean-up
        cache = pathlib.Path.home() / ".cache" / "thing"
        cache.parent.mkdir(parents=True)
        cache.write_text("cached")
        import tempfile
        tempfile.NamedTemporaryFile(delete=False).write(b"left over")
        print("cwd", os.getcwd(), "home", pathlib.Path.home())
    """,
    "bomb.py": """
        import os, time
        made = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(300)
                    os._exit(0)
                made += 1
        finally:
            print("forked", made, flush=True)
    """,
    "daemon.py": """
        import os, time
        if os.fork() == 0:
            os.setsid()  # a session of its own: killing the group cannot reach it
            if os.fork() == 0:
                print("daemon", os.getpid(), flush=True)
                time.sleep(300)
                os._exit(0)
            os._exit(0)
        time.sleep(0.5)
    """,
    "fine.py": """
        import torch
        print(torch.ones(2).sum().item())
    """,
}
MAX_PROCESSES = 48


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _verify(tmp_path: Path, *args: str):
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    for name, body in SNIPPETS.items():
        (snippets / name).write_text(textwrap.dedent(body).lstrip())
    work = tmp_path / "work"
    work.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    env["TMPDIR"] = str(tmp)
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "devlint", "verify", str(snippets), "--format", "json", "-v", "--timeout", "4",
         "--max-processes", str(MAX_PROCESSES), "-j", "2", *args],
        capture_output=True, text=True, cwd=work, env=env, timeout=300,
    )
    elapsed = time.monotonic() - started
    assert out.returncode == 1, out.stderr  # some snippets failed: reported, not fatal
    data = json.loads(out.stdout)
    runs = {}
    for row in data["rules"]:
        for run in row["runs"]:
            runs.setdefault(Path(run["file"]).name, []).append(run)
    return data, runs, work, tmp, snippets, elapsed


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return _verify(tmp_path_factory.mktemp("isolation"))


def _outcome(runs, name):
    assert runs[name], name
    return runs[name][0]["outcome"]


def test_a_hanging_snippet_times_out_and_its_group_is_killed(result):
    _, runs, *_ = result
    outcome = _outcome(runs, "hang.py")
    assert outcome["kind"] == "timeout"
    assert "timed out after 4s" in outcome["summary"]
    assert not _group_alive(outcome["pid"])
    helper = int(outcome["output"].split()[1])
    assert not _alive(helper)


def test_a_snippet_killed_by_a_signal_is_reported(result):
    _, runs, *_ = result
    outcome = _outcome(runs, "crash.py")
    assert outcome["kind"] == "signal" and outcome["signal"] == "SIGSEGV"
    assert "about to crash" in outcome["output"]
    assert not _group_alive(outcome["pid"])


def test_megabytes_of_output_are_counted_not_kept(result):
    _, runs, *_ = result
    outcome = _outcome(runs, "loud.py")
    assert outcome["kind"] == "ok"
    assert outcome["output_bytes"] == 40 << 20
    assert outcome["output_truncated"] and len(outcome["output"]) <= 64 * 1024


def test_files_a_snippet_writes_vanish_with_it(result):
    _, runs, work, tmp, snippets, _ = result
    outcome = _outcome(runs, "writer.py")
    assert outcome["kind"] == "ok", outcome
    words = outcome["output"].split()
    cwd, home = Path(words[1]), Path(words[3])
    assert cwd != home and str(cwd).startswith(str(tmp)) and str(home).startswith(str(tmp))
    assert not cwd.exists() and not home.exists()
    assert list(work.iterdir()) == []  # the user's working directory is untouched
    assert list(tmp.iterdir()) == []  # every temporary directory is gone
    assert sorted(p.name for p in snippets.iterdir()) == sorted(SNIPPETS)


def test_a_fork_bomb_is_bounded_by_the_process_limit(result):
    _, runs, *_ = result
    outcome = _outcome(runs, "bomb.py")
    assert outcome["kind"] == "exception", outcome["summary"]
    assert outcome["exception"]["type"] == "BlockingIOError"
    forked = int(outcome["output"].split("forked")[1].split()[0])
    assert 0 < forked <= MAX_PROCESSES  # the budget: processes a snippet may add
    assert outcome["leftovers"] >= forked
    assert not _group_alive(outcome["pid"])


def test_an_orphan_in_its_own_session_is_killed_too(result):
    _, runs, *_ = result
    outcome = _outcome(runs, "daemon.py")
    daemon = int(outcome["output"].split()[1])
    if sys.platform.startswith("linux"):
        assert outcome["leftovers"] >= 1
        assert not _alive(daemon)


def test_the_verifier_survives_and_judges_the_rest(result):
    data, runs, *_, elapsed = result
    assert _outcome(runs, "fine.py")["kind"] == "ok"
    statuses = {Path(row["origin"]).name: row["status"] for row in data["rules"]}
    assert statuses == {
        "hang.py": "CONTRADICTED", "crash.py": "CONTRADICTED", "loud.py": "clean", "writer.py": "clean",
        "bomb.py": "CONTRADICTED", "daemon.py": "clean", "fine.py": "clean",
    }
    assert elapsed < 120


def test_a_fresh_interpreter_per_snippet_isolates_the_same_way(tmp_path):
    SNIPPETS_SMALL = ("crash.py", "writer.py", "fine.py")
    snippets = tmp_path / "snippets"
    snippets.mkdir()
    for name in SNIPPETS_SMALL:
        (snippets / name).write_text(textwrap.dedent(SNIPPETS[name]).lstrip())
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    env["TMPDIR"] = str(tmp)
    out = subprocess.run(
        [sys.executable, "-m", "devlint", "verify", str(snippets), "--fresh", "--format", "json", "-v"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )
    assert out.returncode == 1, out.stderr
    data = json.loads(out.stdout)
    kinds = {Path(row["origin"]).name: row["runs"][0]["outcome"]["kind"] for row in data["rules"]}
    assert kinds == {"crash.py": "signal", "writer.py": "ok", "fine.py": "ok"}
    assert list(tmp.iterdir()) == []
