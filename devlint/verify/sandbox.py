"""Running snippets in child processes, from the verifier's side.

Every snippet runs in a process of its own, forked by a supervisor
(`child.py serve`, started as `python -I` in a scrubbed environment) that
enforces the wall-clock timeout, reads the output with a cap, kills the
snippet's whole process group (and any escaped orphan) when it ends or times
out, and reports the outcome. Each snippet gets a private directory (its
working directory, HOME and TMPDIR live there) that is removed as soon as the
snippet has run, and the whole temporary root is removed when the verifier
is done, on error too.

With `fresh=True` a new supervisor (hence a new interpreter that has imported
nothing) is started for every snippet; otherwise each worker thread keeps
one supervisor per environment that has imported torch once, and forks the
snippets from it.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

CHILD = Path(__file__).with_name("child.py")

# Variables a snippet's environment keeps from the user's; everything else goes.
PASS_THROUGH = (
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
    "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "SYSTEMROOT",
)
# Set for every snippet: one thread per process keeps parallel cells cheap.
FIXED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

START_TIMEOUT = 180.0  # a supervisor importing torch on a loaded machine
SNIPPETS_PER_WORKER = 12  # below this many snippets per worker, fewer workers finish sooner
GRACE = 60.0  # beyond a snippet's own timeout, before the supervisor counts as hung


@dataclass(frozen=True)
class Limits:
    timeout: float = 60.0  # seconds of wall-clock time per snippet
    output_cap: int = 64 * 1024  # bytes of output kept per snippet; the rest is counted, not stored
    max_processes: int = 256  # RLIMIT_NPROC budget: processes and threads a snippet may add
    max_file_bytes: int = 1 << 30  # RLIMIT_FSIZE: the largest file a snippet may write


@dataclass(frozen=True)
class Environment:
    """A way to start a snippet's process: extra environment variables."""

    key: str
    overrides: tuple[tuple[str, str], ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Job:
    key: object  # the caller's key for the outcome
    environment: Environment
    filename: str  # the snippet is compiled under this (real, absolute) name
    source: str
    argv: tuple[str, ...] = ()
    sys_path: tuple[str, ...] = ()
    timeout: Optional[float] = None
    main_file: Optional[str] = None  # __main__.__file__; default: a copy of `source` in the private directory


@dataclass
class Outcome:
    """What happened when one snippet ran."""

    kind: str  # ok | exception | exit | signal | timeout | error
    exception: Optional[dict] = None
    warnings: list = field(default_factory=list)
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    timeout: float = 0.0
    duration: float = 0.0
    output: str = ""
    output_bytes: int = 0
    output_truncated: bool = False
    leftovers: int = 0
    sandbox: dict = field(default_factory=dict)
    error: Optional[str] = None
    pid: Optional[int] = None
    report: dict = field(default_factory=dict)  # the child's own report (result.json)

    @classmethod
    def from_reply(cls, reply: dict, timeout: float) -> "Outcome":
        result = reply.get("result") or {}
        exit_info = reply.get("exit") or {}
        common = dict(
            warnings=result.get("warnings") or [], timeout=timeout, duration=reply.get("duration", 0.0),
            output=reply.get("output", ""), output_bytes=reply.get("output_bytes", 0),
            output_truncated=bool(reply.get("output_truncated")), leftovers=reply.get("leftovers", 0),
            sandbox=result.get("sandbox") or {}, pid=reply.get("pid"), signal=exit_info.get("signal_name"),
            exit_code=exit_info.get("code"), report=result,
        )
        if result.get("status") == "exception":
            return cls("exception", exception=result.get("exception"), **common)
        if reply.get("timed_out"):
            return cls("timeout", **common)
        if "signal" in exit_info:
            return cls("signal", **common)
        if result.get("status") == "exit" or exit_info.get("code"):
            common["exit_code"] = result.get("exit_code", exit_info.get("code"))
            return cls("exit", **common)
        return cls("ok", **common)

    @classmethod
    def failed(cls, error: str) -> "Outcome":
        return cls("error", error=error)

    def describe(self) -> str:
        if self.kind == "ok":
            text = "ran clean"
        elif self.kind == "exception":
            exc = self.exception or {}
            message = (exc.get("message") or "").strip().splitlines()
            where = f"at line {exc['target_line']}" if exc.get("target_line") else "outside the file"
            text = f"raised {exc.get('type')} {where}" + (f": {message[0][:200]}" if message else "")
        elif self.kind == "exit":
            text = f"exited with status {self.exit_code}"
        elif self.kind == "signal":
            text = f"killed by {self.signal}"
        elif self.kind == "timeout":
            text = f"timed out after {self.timeout:g}s (its process group was killed)"
        else:
            text = f"could not be run: {self.error}"
        if self.output_truncated:
            text += f" [output capped: {self.output_bytes} bytes written, {len(self.output.encode())} kept]"
        if self.leftovers:
            text += f" [{self.leftovers} leftover process(es) killed]"
        return text

    def to_json(self) -> dict:
        data = {
            "kind": self.kind, "summary": self.describe(), "duration": self.duration,
            "output": self.output, "output_bytes": self.output_bytes, "output_truncated": self.output_truncated,
            "leftovers": self.leftovers,
        }
        for name in ("exception", "exit_code", "signal", "error", "pid"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.warnings:
            data["warnings"] = self.warnings
        if self.sandbox:
            data["sandbox"] = self.sandbox
        return data


class SupervisorError(Exception):
    """The supervisor process died or stopped answering."""


def scrubbed_env(overrides: Mapping[str, str], home: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.setdefault("LANG", "C.UTF-8")
    env.update(FIXED)
    env.update({"HOME": str(home), "TMPDIR": str(home)})
    env.update(overrides)
    return env


def remove_tree(path: Path) -> None:
    """Remove a directory a snippet may have made awkward (read-only dirs)."""

    def retry(func: Callable, target: str, _exc: object) -> None:
        try:
            parent = os.path.dirname(target)
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IRWXU)
            func(target)
        except OSError:
            pass

    if os.path.lexists(path):
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=retry)
        else:
            shutil.rmtree(path, onerror=retry)


def _killpg(pid: Optional[int]) -> None:
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Supervisor:
    """One `child.py serve` process, used by one thread at a time."""

    def __init__(self, environment: Environment, workdir: Path, preload: Sequence[str], paths: Sequence[str]) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.cell_pid: Optional[int] = None
        self._buffer = b""
        args = [sys.executable, "-I", str(CHILD), "serve", *[f"--path={p}" for p in paths], *preload]
        with open(workdir / "stderr", "wb") as stderr:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=workdir,
                env=scrubbed_env(dict(environment.overrides), workdir), start_new_session=True, close_fds=True,
            )
        ready = self._read(time.monotonic() + START_TIMEOUT)
        if ready is None or ready.get("event") != "ready":
            self.kill()
            raise SupervisorError(f"the supervisor did not start: {self._stderr_tail()}")
        self.preload_errors: dict = ready.get("preload_errors") or {}
        self.threads: int = int(ready.get("threads") or 1)

    def _stderr_tail(self) -> str:
        try:
            data = (self.workdir / "stderr").read_bytes()[-2000:]
        except OSError:
            return "no output"
        lines = data.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def _read(self, deadline: float) -> Optional[dict]:
        """The supervisor's next line, or None: timed out, or it died (or was
        killed and closed by the verifier, from another thread)."""
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
                ready, _, _ = select.select([fd], [], [], remaining)
                chunk = os.read(fd, 65536) if ready else None
            except (OSError, ValueError):
                return None
            if chunk is None:
                continue
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return json.loads(line)
        except ValueError:
            return None

    def run(self, request: dict, timeout: float) -> dict:
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            self.kill()
            raise SupervisorError(f"the supervisor died: {self._stderr_tail()}") from None
        started = self._read(time.monotonic() + GRACE)
        if started is None or started.get("event") != "started":
            self.kill()
            raise SupervisorError(f"the supervisor did not start the snippet: {self._stderr_tail()}")
        self.cell_pid = started.get("pid")
        done = self._read(time.monotonic() + timeout + GRACE)
        if done is None or done.get("event") != "done":
            self.kill()
            raise SupervisorError(f"the supervisor stopped answering: {self._stderr_tail()}")
        self.cell_pid = None
        return done

    def kill(self) -> None:
        """Kill the supervisor and the snippet it is running (safe from any thread)."""
        _killpg(self.cell_pid)
        _killpg(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        """Ask the supervisor to stop (it exits when its stdin closes), then make sure."""
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()
        try:
            if self.proc.stdout:
                self.proc.stdout.close()
        except OSError:
            pass


class Sandbox:
    """Runs jobs in sandboxed child processes, a few at a time. A context
    manager: leaving it stops every supervisor and removes every file.

    Supervisors are pooled per environment: a worker takes an idle one (or
    starts one) and gives it back after the snippet has run."""

    def __init__(
        self, limits: Limits = Limits(), jobs: int = 2, fresh: bool = False,
        preload: Sequence[str] = ("torch",), paths: Sequence[str] = (),
    ) -> None:
        self.limits = limits
        self.jobs = max(1, jobs)
        self.fresh = fresh
        self.preload = tuple(preload)
        self.paths = tuple(paths)
        self.root = Path(tempfile.mkdtemp(prefix="devlint-verify-"))
        self._idle: dict[str, list[Supervisor]] = {}
        self._all: list[Supervisor] = []
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closed = True
        with self._lock:
            supervisors, self._all, self._idle = self._all, [], {}
        for sup in supervisors:
            sup.close()
        remove_tree(self.root)

    def warm_up(self, modules: Sequence[str]) -> None:
        """Supervisors started from now on import these torch modules too, so
        that each snippet does not pay for them again."""
        self.preload = ("torch", *(m for m in modules if m != "torch"))

    # -- the pool of supervisors --

    def _start(self, environment: Environment, preload: Sequence[str]) -> Supervisor:
        workdir = Path(tempfile.mkdtemp(prefix="supervisor-", dir=self.root))
        try:
            sup = Supervisor(environment, workdir, preload, self.paths)
        except BaseException:
            remove_tree(workdir)
            raise
        with self._lock:
            self._all.append(sup)
        return sup

    def _retire(self, sup: Supervisor) -> None:
        sup.close()
        with self._lock:
            if sup in self._all:
                self._all.remove(sup)
        remove_tree(sup.workdir)

    def _acquire(self, environment: Environment) -> tuple[Supervisor, bool]:
        """A supervisor for this environment, and whether it is a fresh one
        (to be retired after one snippet)."""
        if not self.fresh:
            with self._lock:
                idle = self._idle.get(environment.key) or []
                while idle:
                    sup = idle.pop()
                    if sup.proc.poll() is None:
                        return sup, False
            sup = self._start(environment, self.preload)
            if sup.threads > 1 and self.preload != ("torch",):
                # An import started a thread: forking from it is unsafe. Warm up on torch alone.
                self._retire(sup)
                sup = self._start(environment, ("torch",))
            if sup.threads == 1:
                return sup, False
            self._retire(sup)
            self.fresh = True  # importing torch itself starts threads here: never fork from it
        return self._start(environment, ()), True

    def _release(self, environment: Environment, sup: Supervisor, fresh: bool) -> None:
        if fresh or self._closed:
            self._retire(sup)
            return
        with self._lock:
            self._idle.setdefault(environment.key, []).append(sup)

    # -- running --

    def _request(self, job: Job, celldir: Path, timeout: float, op: str = "run") -> dict:
        return {
            "op": op, "dir": str(celldir), "filename": job.filename, "source": job.source,
            "argv": list(job.argv) or [job.filename], "sys_path": list(job.sys_path), "timeout": timeout,
            "main_file": job.main_file,
            "output_cap": self.limits.output_cap, "max_processes": self.limits.max_processes,
            "max_file_bytes": self.limits.max_file_bytes,
        }

    def _run(self, job: Job, op: str = "run") -> Outcome:
        if self._closed:
            return Outcome.failed("the verifier was stopped")
        timeout = job.timeout or self.limits.timeout
        celldir = Path(tempfile.mkdtemp(prefix="cell-", dir=self.root))
        try:
            try:
                sup, fresh = self._acquire(job.environment)
            except SupervisorError as exc:
                return Outcome.failed(str(exc))
            try:
                reply = sup.run(self._request(job, celldir, timeout, op), timeout)
            except SupervisorError as exc:
                self._retire(sup)
                return Outcome.failed(str(exc))
            self._release(job.environment, sup, fresh)
            return Outcome.from_reply(reply, timeout)
        finally:
            remove_tree(celldir)

    def run_one(self, job: Job) -> Outcome:
        return self._run(job)

    def detect(self, environment: Environment, timeout: float) -> Outcome:
        """Ask torch what it sees, in a child forked like a snippet (so the
        supervisor itself never initialises a device). The answer is the
        outcome's `result`: see `child.detect`."""
        return self._run(Job("detect", environment, "<detect>", "", timeout=timeout), op="detect")

    def run_all(self, jobs: Sequence[Job], progress: Optional[Callable[[Job, Outcome], None]] = None) -> dict:
        results: dict = {}
        if not jobs:
            return results
        # Another worker means another supervisor, which pays for `import
        # torch` again: worth it only with enough snippets to share out.
        workers = min(self.jobs, max(1, len(jobs) // SNIPPETS_PER_WORKER))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="devlint-verify")
        try:
            futures = {pool.submit(self.run_one, job): job for job in jobs}
            for future in as_completed(futures):
                job = futures[future]
                results[job.key] = future.result()
                if progress is not None:
                    progress(job, results[job.key])
        except BaseException:
            self._closed = True
            pool.shutdown(wait=False, cancel_futures=True)
            with self._lock:
                supervisors = list(self._all)
            for sup in supervisors:  # unblocks the workers at once
                sup.kill()
            raise
        pool.shutdown(wait=True)
        return results
