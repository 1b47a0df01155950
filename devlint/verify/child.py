"""The verifier's side of the process boundary: a small supervisor that runs
one snippet at a time in a sandboxed child process.

This file is run as a script with `python -I` (isolated mode) in a scrubbed
environment; it imports only the standard library, never devlint. Modes:

- `serve [MODULE...]`: import the given modules once (normally `torch`), then
  read JSON requests, one a line, on stdin. For each, fork a child that enters
  the sandbox and runs the snippet; supervise it (wall-clock timeout, output
  read with a cap, its own session and process group, killed as a whole); and
  answer with JSON lines on stdout: `{"event": "started", "pid": ...}`, then
  `{"event": "done", ...}`. Forking from a process that has imported torch
  (but never touched a device) saves the seconds `import torch` costs per
  snippet; each child is still a separate process, in isolated mode, that
  starts from torch's pristine import-time state.
- `detect`: print, as JSON, what this interpreter's torch can see (versions,
  CUDA / ROCm / MPS devices). The verifier sends the same question to a
  supervisor as a request (`"op": "detect"`): a forked child answers it, so
  the supervisor itself never initialises CUDA (a process that forks must
  not have).

The child side of a request (`_run_in_child`): new session, stdin from
/dev/null, stdout and stderr into one pipe, a fresh working directory, HOME
and TMPDIR (all inside the request's private directory), core dumps off, a
file-size limit and a process limit (RLIMIT_NPROC; when the supervisor runs
as root, which the kernel exempts from that limit, the child first moves its
real uid to `nobody` and drops CAP_SYS_ADMIN/CAP_SYS_RESOURCE while keeping
root's file access, so the limit holds). The snippet is compiled under its
real file name, so tracebacks point into the user's file; its outcome
(exception with frames, warnings, exit status) is written as JSON to
`result.json` in the private directory.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

RESULT_NAME = "result.json"
NOBODY = 65534
MAX_FRAMES = 60
MAX_WARNINGS = 200
MAX_TEXT = 4000

# -- protocol helpers ---------------------------------------------------------


def _send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _libc():
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (OSError, ImportError):
        return None


def _prctl(option: int, arg: int) -> bool:
    libc = _libc()
    if libc is None or not sys.platform.startswith("linux"):
        return False
    try:
        return libc.prctl(option, arg, 0, 0, 0) == 0
    except (AttributeError, OSError):
        return False


PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
CAP_SYS_ADMIN = 21
CAP_SYS_RESOURCE = 24


# -- the sandbox, entered by the child ------------------------------------------


def _drop_nproc_exemption() -> bool:
    """Root is exempt from RLIMIT_NPROC. Keep root's file access (effective uid
    0) but move the real uid to `nobody` and drop the two capabilities that
    also exempt a process, so that the process limit binds. Linux only."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

        caps = (CAP_SYS_ADMIN, CAP_SYS_RESOURCE)
        for cap in caps:  # from the bounding set: no exec can regain them
            libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
        header, data = Header(0x20080522, 0), (Data * 2)()
        if libc.capget(ctypes.byref(header), data) != 0:
            return False
        for cap in caps:
            word, bit = divmod(cap, 32)
            mask = ~(1 << bit) & 0xFFFFFFFF
            data[word].effective &= mask
            data[word].permitted &= mask
            data[word].inheritable &= mask
        if libc.capset(ctypes.byref(header), data) != 0:
            return False
        os.setresuid(NOBODY, 0, 0)
        return True
    except (OSError, AttributeError, ImportError):
        return False


def _tasks_of(uid: int) -> int:
    """Tasks (processes and threads) whose real uid is `uid`: what RLIMIT_NPROC counts."""
    count = 0
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as f:
                status = f.read()
        except OSError:
            continue
        real_uid = threads = None
        for line in status.splitlines():
            if line.startswith(b"Uid:"):
                real_uid = int(line.split()[1])
            elif line.startswith(b"Threads:"):
                threads = int(line.split()[1])
        if real_uid == uid:
            count += threads or 1
    return count


def _limit(kind: int, value: int) -> bool:
    """Set soft and hard limit to `value` (or the hard limit, when lower)."""
    import resource

    try:
        _, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(kind, (value, value))
        return True
    except (ValueError, OSError):
        return False


def _enter_sandbox(req: dict) -> dict:
    """Limits, directories and environment; returns what was applied."""
    import resource

    applied: dict = {}
    base = req["dir"]
    work, home, tmp = (os.path.join(base, n) for n in ("work", "home", "tmp"))
    for d in (work, home, tmp):
        os.makedirs(d, exist_ok=True)
    os.chdir(work)
    os.environ["HOME"] = home
    for var in ("TMPDIR", "TEMP", "TMP"):
        os.environ[var] = tmp
    import tempfile

    tempfile.tempdir = None  # forget a temp dir cached before the fork
    applied["core"] = _limit(resource.RLIMIT_CORE, 0)
    if req.get("max_file_bytes"):
        applied["fsize"] = _limit(resource.RLIMIT_FSIZE, int(req["max_file_bytes"]))
    budget = req.get("max_processes")
    if budget and hasattr(resource, "RLIMIT_NPROC"):
        if os.getuid() == 0:
            if not _drop_nproc_exemption():
                applied["nproc"] = "unavailable: running as root and the exemption could not be dropped"
                return applied
        if not sys.platform.startswith("linux"):
            # The limit counts every process of the user, which only Linux's
            # /proc lets us count cheaply: a blind limit could forbid any fork.
            applied["nproc"] = "unavailable: cannot count the user's processes here"
            return applied
        in_use = _tasks_of(os.getuid())
        applied["nproc"] = in_use + int(budget) if _limit(resource.RLIMIT_NPROC, in_use + int(budget)) else "failed"
    return applied


# -- running the snippet, in the child ---------------------------------------------


def _frames(tb, keep_from: int = 0) -> list:
    import traceback

    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(tb)][keep_from:]
    if len(frames) > MAX_FRAMES:  # deep recursion: keep both ends
        frames = frames[:10] + frames[-(MAX_FRAMES - 10):]
    return [list(f) for f in frames]


def _worker_frames(message: str) -> list:
    """The frames of an exception a worker process raised, as torch's DataLoader
    re-raises it in the main process: its message ends with the worker's
    "Original Traceback (most recent call last):" as text."""
    import re

    _, marker, original = message.partition("Original Traceback (most recent call last):")
    if not marker:
        return []
    return [[m.group(1), int(m.group(2)), m.group(3)]
            for m in re.finditer(r'^\s*File "([^"]+)", line (\d+), in (\S+)', original, re.M)]


def _describe_exception(exc: BaseException, target: str) -> dict:
    frames = _frames(exc.__traceback__, keep_from=1)  # drop the harness's own exec frame
    if isinstance(exc, SyntaxError) and exc.filename == target and exc.lineno:
        frames.append([target, exc.lineno, "<module>"])
    # A DataLoader worker's failure surfaces at the loop that iterates the
    # loader; where it happened (a Dataset's __getitem__, a collate_fn) is in
    # the worker's traceback, which comes after the frames seen here.
    frames += _worker_frames(_safe_str(exc))
    in_target = [f for f in frames if f[0] == target]
    return {
        "type": type(exc).__name__,
        "qualname": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "mro": [c.__name__ for c in type(exc).__mro__],
        "message": _safe_str(exc)[:MAX_TEXT],
        "frames": frames,
        "target_line": in_target[-1][1] if in_target else None,
        "innermost_in_target": bool(frames) and frames[-1][0] == target,
    }


def _safe_str(obj) -> str:
    try:
        return str(obj)
    except Exception:  # a broken __str__
        return f"<unprintable {type(obj).__name__}>"


def _run_in_child(req: dict, out_fd: int) -> None:
    """Never returns: the child's exit status carries the outcome."""
    code = 70
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        for fd in (null, out_fd):
            if fd > 2:
                os.close(fd)
        import io

        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), line_buffering=True, errors="backslashreplace")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), line_buffering=True, errors="backslashreplace")
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        result_path = os.path.join(req["dir"], RESULT_NAME)
        sandbox = _enter_sandbox(req)
        if req.get("op") == "detect":
            info = detect()
            with open(result_path, "w", encoding="utf-8") as f:
                json.dump({"status": "ok", "exit_code": 0, "detect": info, "sandbox": sandbox}, f)
            code = 0
        else:
            code = _execute(req, result_path, sandbox)
    except BaseException:  # the harness itself failed: say so on the snippet's stderr
        try:
            import traceback

            traceback.print_exc()
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)


def _execute(req: dict, result_path: str, sandbox: dict) -> int:
    import random
    import types
    import warnings

    target = req["filename"]
    random.seed()
    recorded: list = []
    original_show = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        frame, target_line = sys._getframe(1), None
        while frame is not None:
            if frame.f_code.co_filename == target:
                target_line = frame.f_lineno
                break
            frame = frame.f_back
        if len(recorded) < MAX_WARNINGS:
            recorded.append({
                "category": category.__name__,
                "mro": [c.__name__ for c in category.__mro__],
                "message": _safe_str(message)[:MAX_TEXT],
                "filename": filename,
                "lineno": lineno,
                "target_line": target_line,
            })
        original_show(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    warnings.simplefilter("always")

    main_file = req.get("main_file")
    if not main_file:
        # __main__'s file holds exactly this program (prelude + cell): a
        # process started with the "spawn" method re-runs __main__ from its
        # file, and must re-run this cell, not every cell of the fixture.
        os.makedirs(os.path.join(req["dir"], "program"), exist_ok=True)
        main_file = os.path.join(req["dir"], "program", os.path.basename(target))
        with open(main_file, "w", encoding="utf-8") as f:
            f.write(req["source"])
    main = types.ModuleType("__main__")
    main.__file__ = main_file
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv = list(req.get("argv") or [target])
    for entry in reversed(req.get("sys_path") or []):
        sys.path.insert(0, entry)

    outcome: dict = {"status": "ok", "exit_code": 0, "sandbox": sandbox}
    try:
        code = compile(req["source"], target, "exec", dont_inherit=True)
        exec(code, main.__dict__)
    except SystemExit as exc:
        status = exc.code
        exit_code = 0 if status is None else status if isinstance(status, int) else 1
        if exit_code:
            outcome = {"status": "exit", "exit_code": exit_code, "sandbox": sandbox}
        if not isinstance(status, (int, type(None))):
            print(status, file=sys.stderr)
    except BaseException as exc:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        outcome = {"status": "exception", "exit_code": 1, "exception": _describe_exception(exc, target), "sandbox": sandbox}
    outcome["warnings"] = recorded
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(outcome, f)
    _interpreter_shutdown()
    return int(outcome["exit_code"]) & 0xFF or (1 if outcome["status"] != "ok" else 0)


def _interpreter_shutdown() -> None:
    """What the interpreter does at exit: wait for non-daemon threads, run atexit."""
    try:
        import threading

        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
    except BaseException:
        pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass


# -- supervising a child, in the server ------------------------------------------------


def _children_of(pid: int) -> list:
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.append(int(entry))
    return found


def _killpg(pgid: int) -> bool:
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap_all() -> int:
    reaped = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped += 1


def _clean_up_leftovers(pgid: int) -> int:
    """Kill what the snippet left running: its process group, and (where this
    process is a child subreaper) any orphan that escaped into a session of
    its own. Returns how many leftover processes were found."""
    group_alive = _killpg(pgid)
    found: set = set()
    deadline = time.monotonic() + 15.0
    while time.monotonic() < deadline:
        orphans = _children_of(os.getpid()) if sys.platform.startswith("linux") else []
        for pid in orphans:
            _killpg(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        found.update(orphans)
        _reap_all()
        # Done when nothing is reparented to us and the group has no member
        # left (a member whose parent is still dying is not our child yet).
        if not orphans and not _killpg(pgid):
            break
        time.sleep(0.02)
    return max(len(found), 1 if group_alive else 0)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def _supervise(pid: int, read_fd: int, timeout: float, cap: int) -> dict:
    started = time.monotonic()
    deadline = started + timeout
    head = bytearray()
    total = 0
    status = None
    timed_out = False
    eof = False
    while status is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            _killpg(pid)
            try:
                os.kill(pid, signal.SIGKILL)  # in case it left its own group
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        if not eof:
            ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.05))
            if ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    eof = True
                total += len(chunk)
                if len(head) < cap:
                    head += chunk[: cap - len(head)]
        else:
            time.sleep(min(remaining, 0.01))
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
    duration = time.monotonic() - started
    leftovers = _clean_up_leftovers(pid)
    # Drain what is still buffered; every writer is dead or gone by now.
    os.set_blocking(read_fd, False)
    drain_deadline = time.monotonic() + 1.0
    while time.monotonic() < drain_deadline:
        try:
            chunk = os.read(read_fd, 65536)
        except BlockingIOError:
            ready, _, _ = select.select([read_fd], [], [], 0.05)
            if not ready and _children_of(os.getpid()) == []:
                break
            continue
        if not chunk:
            break
        total += len(chunk)
        if len(head) < cap:
            head += chunk[: cap - len(head)]
    os.close(read_fd)
    exit_info: dict
    if os.WIFSIGNALED(status):
        exit_info = {"signal": os.WTERMSIG(status), "signal_name": _signal_name(os.WTERMSIG(status))}
    else:
        exit_info = {"code": os.WEXITSTATUS(status)}
    return {
        "exit": exit_info,
        "timed_out": timed_out,
        "duration": round(duration, 3),
        "output": head.decode("utf-8", "replace"),
        "output_bytes": total,
        "output_truncated": total > len(head),
        "leftovers": leftovers,
    }


def _handle(req: dict) -> None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _run_in_child(req, write_fd)
    os.close(write_fd)
    _send({"event": "started", "pid": pid})
    reply = _supervise(pid, read_fd, float(req.get("timeout", 60)), int(req.get("output_cap", 65536)))
    result = None
    try:
        with open(os.path.join(req["dir"], RESULT_NAME), "rb") as f:
            data = f.read(4 * 1024 * 1024)
        result = json.loads(data.decode("utf-8"))
    except (OSError, ValueError):
        result = None
    reply.update(event="done", pid=pid, result=result)
    _send(reply)


def serve(preload: list) -> None:
    # Orphans of a snippet are reparented here, to be killed. (No death signal
    # for the supervisor itself: Linux ties it to the *thread* that started
    # us; we stop when the verifier's end of stdin closes.)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the verifier decides when we stop
    errors = {}
    for name in preload:
        try:
            __import__(name)
        except BaseException as exc:  # noqa: BLE001 - the snippet will meet it again
            errors[name] = f"{type(exc).__name__}: {_safe_str(exc)}"[:MAX_TEXT]
    try:  # forking is only safe while this process has one thread
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        threads = threading.active_count()
    _send({"event": "ready", "pid": os.getpid(), "preload_errors": errors, "threads": threads})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("op") == "quit":
            break
        _handle(req)


# -- detection -----------------------------------------------------------------------


def detect() -> dict:
    info: dict = {"python": sys.version.split()[0], "platform": sys.platform, "executable": sys.executable}
    try:
        import torch
    except BaseException as exc:  # noqa: BLE001
        info["torch_error"] = f"{type(exc).__name__}: {_safe_str(exc)}"
        return info
    info["torch"] = torch.__version__
    info["cuda_build"] = getattr(torch.version, "cuda", None)
    info["hip_build"] = getattr(torch.version, "hip", None)
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
        info["cuda_device_count"] = int(torch.cuda.device_count()) if info["cuda_available"] else 0
        info["cuda_devices"] = [torch.cuda.get_device_name(i) for i in range(info["cuda_device_count"])]
    except BaseException as exc:  # noqa: BLE001
        info["cuda_available"] = False
        info["cuda_device_count"] = 0
        info["cuda_error"] = f"{type(exc).__name__}: {_safe_str(exc)}"
    try:
        mps = getattr(torch.backends, "mps", None)
        info["mps_built"] = bool(mps and mps.is_built())
        info["mps_available"] = bool(mps and mps.is_available())
    except BaseException:  # noqa: BLE001
        info["mps_built"] = info["mps_available"] = False
    return info


def main(argv: list) -> None:
    paths = [a[len("--path="):] for a in argv if a.startswith("--path=")]
    args = [a for a in argv if not a.startswith("--path=")]
    for entry in reversed(paths):  # where torch lives when isolated mode would not see it
        sys.path.insert(0, entry)
    if args and args[0] == "serve":
        serve(args[1:])
    elif args and args[0] == "detect":
        print(json.dumps(detect()))
    else:
        print("usage: child.py serve [--path=DIR...] [MODULE...] | detect [--path=DIR...]", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
