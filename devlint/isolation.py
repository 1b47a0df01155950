"""One file must never end the run: crashes, deep nesting and huge files.

libcst's native parser recurses once per nesting level on the native stack.
An expression nested a few thousand levels deep overflows the 8 MB stack of
the main thread and kills the whole process with SIGSEGV -- no Python
exception, nothing to catch. Nesting that deep is also slow (libcst's time
grows about quadratically with depth) and a file of tens of megabytes needs
tens of gigabytes of memory. Three layers keep the run alive, none of which
costs anything on ordinary files:

1. **A big stack.** Linting runs in a thread whose stack is `STACK_BYTES`
   (virtual memory: only the pages touched are ever committed), so the native
   parser needs ~64 times deeper nesting before it can overflow. One thread per
   run (and per worker process), not per file.
2. **Screening and a child process.** `screen()` looks at the text with a few
   C-speed passes (bracket nesting depth, the longest line, backslash
   continuations, the size) before a file is parsed. A file that is too large is
   reported and not parsed. A suspicious one (nesting or lines no hand-written
   code has) is linted in a child process of its own, with a time limit: if the
   child dies or runs out of time, that file is reported and the run goes on.
   CPython's own parser, which guards its stack, is asked first there, so a
   file CPython rejects outright (`too many nested parentheses`) is reported as
   the syntax error (DEV000) it is.
3. **Supervised workers.** With several worker processes, each worker streams
   one result per file to the parent, which therefore knows which file a
   worker was on when it died. That file is reported, a fresh worker takes the
   rest of its share, and the run goes on.

Environment (documented in docs/reliability.md):
- `DEVLINT_MAX_FILE_MB` (default 4): larger code is not parsed.
- `DEVLINT_ISOLATION_TIMEOUT` (seconds, default 120): time limit of a child.
- `DEVLINT_STACK_MB` (default 512): the linting thread's stack.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import re
import signal
import threading
import warnings
from collections import deque
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

STACK_BYTES = 512 * 1024 * 1024
# Bracket nesting at which a file is parsed in a child. CPython rejects 200
# (`too many nested parentheses`); no hand-written code comes near 100.
MAX_BRACKET_DEPTH = 100
# A physical line this long is generated code or an attack; either way it may
# hold a chain (`a.b.c...`, `-(-(-...`) that nests as deep as it is long.
MAX_LINE_CHARS = 2000
# Backslash continuations build one logical line from many physical ones.
MAX_CONTINUATIONS = 500
# Lines inside one bracket group (one logical line): a chain split over lines
# (`(a and\n b and\n ...)`) nests as deep as it is long.
MAX_GROUP_LINES = 2000
DEFAULT_MAX_FILE_MB = 4.0
DEFAULT_TIMEOUT_S = 120.0
# Set in an isolated child, so that it lints the file itself.
IN_CHILD = False

_OPENERS = re.compile(rb"[(\[{]+")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"()[]{}")
_NOT_BRACKETS_OR_NEWLINES = bytes(b for b in range(256) if b not in b"()[]{}\n")
_INNERMOST_GROUP = re.compile(rb"[(\[{]\n*[)\]}]")


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def max_file_chars() -> int:
    return int(_env_float("DEVLINT_MAX_FILE_MB", DEFAULT_MAX_FILE_MB) * 1024 * 1024)


def stack_bytes() -> int:
    return int(_env_float("DEVLINT_STACK_MB", STACK_BYTES / 2**20) * 2**20)


def child_timeout() -> float:
    return _env_float("DEVLINT_ISOLATION_TIMEOUT", DEFAULT_TIMEOUT_S)


# --------------------------------------------------------------------------
# Screening


def bracket_depth_at_least(data: bytes, limit: int) -> bool:
    """Whether brackets nest `limit` deep somewhere in `data` (the text,
    encoded; brackets in strings and comments count too: a false alarm only
    costs a child process). Keeps only the brackets, then deletes adjacent
    pairs, one nesting level per pass: an ordinary file is done in as many
    passes as it nests deep (under ten)."""
    skeleton = data.translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not skeleton:
            return False
        shorter = skeleton.replace(b"()", b"").replace(b"[]", b"").replace(b"{}", b"")
        if len(shorter) == len(skeleton):
            # What is left never closes: unbalanced brackets, stray ones in
            # strings. Deep only if a run of openers is that long.
            return max((len(run) for run in _OPENERS.findall(shorter)), default=0) >= limit
        skeleton = shorter
    return bool(skeleton)


def group_lines_at_least(data: bytes, limit: int, passes: int = MAX_BRACKET_DEPTH) -> bool:
    """Whether one bracket group spans `limit` lines: innermost groups are
    removed pass by pass, their lines with them; a group that holds `limit`
    newlines once its inner groups are gone is one that long. (Lines split
    among inner groups are missed: only chains matter, and a chain keeps its
    lines in one group. A stray bracket in a string or comment can pair with
    another far away: a false alarm costs a child process, no more.)"""
    skeleton = data.translate(None, _NOT_BRACKETS_OR_NEWLINES)
    if skeleton.count(b"\n") < limit:
        return False
    long_group = re.compile(rb"[(\[{]\n{%d,}[)\]}]" % limit)
    for _ in range(passes):
        if long_group.search(skeleton):
            return True
        shorter = _INNERMOST_GROUP.sub(b"", skeleton)
        if len(shorter) == len(skeleton):
            return False
        skeleton = shorter
    return False


def screen(text: str) -> Optional[str]:
    """Why this text must not be parsed in this process, or None (the usual
    answer). A few C-speed passes over the text: well under 1% of a parse."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > MAX_LINE_CHARS and max(map(len, data.split(b"\n"))) > MAX_LINE_CHARS:
        return f"a line longer than {MAX_LINE_CHARS} characters"
    if data.count(b"\\\n") > MAX_CONTINUATIONS:
        return f"more than {MAX_CONTINUATIONS} backslash continuations"
    if bracket_depth_at_least(data, MAX_BRACKET_DEPTH):
        return f"brackets nested {MAX_BRACKET_DEPTH} or more levels deep"
    if group_lines_at_least(data, MAX_GROUP_LINES):
        return f"one bracket group spans {MAX_GROUP_LINES} or more lines"
    return None


def too_large(text: str) -> Optional[str]:
    """The reason a text is too large to parse at all, or None."""
    limit = max_file_chars()
    if len(text) <= limit:
        return None
    return (
        f"too large to lint ({len(text) / 2**20:.1f} MB of code; the limit is {limit / 2**20:g} MB, "
        "set DEVLINT_MAX_FILE_MB to raise it, or exclude the file)"
    )


def decode_error(data: bytes, exc: Exception) -> str:
    """One line on a file that cannot be decoded, with where the bad byte is."""
    if isinstance(exc, SyntaxError) and "invalid or missing encoding declaration" in str(exc):
        try:  # tokenize found no declaration and the first lines are not UTF-8
            data.decode("utf-8")
        except UnicodeDecodeError as utf8:
            exc = utf8
    if isinstance(exc, UnicodeDecodeError):
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        byte = data[exc.start: exc.start + 1].hex()
        encoding = "UTF-8" if exc.encoding.replace("-", "").lower().startswith("utf8") else exc.encoding
        hint = "; declare the file's encoding (PEP 263: `# -*- coding: latin-1 -*-`) or save it as UTF-8" \
            if encoding == "UTF-8" else ""
        return f"cannot decode file: byte 0x{byte} on line {line}, column {column} is not valid {encoding}{hint}"
    if isinstance(exc, LookupError):
        return f"cannot decode file: {exc}"
    message = getattr(exc, "msg", None) or str(exc)
    return f"cannot decode file: {message}"


# --------------------------------------------------------------------------
# A big stack


def call_with_big_stack(fn: Callable[..., R], *args: Any) -> R:
    """fn(*args) in a thread with a `STACK_BYTES` stack; where no such thread
    can be made, in this one. Exceptions are re-raised here."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    try:
        old = threading.stack_size(max(stack_bytes(), 256 * 1024))
    except (ValueError, RuntimeError):
        return fn(*args)
    try:
        thread = threading.Thread(target=target, name="devlint-lint", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no memory for the stack: run here
            return fn(*args)
    finally:
        threading.stack_size(old)
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


# --------------------------------------------------------------------------
# A child process for one suspicious file


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def describe_exit(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit status {exitcode}"


def _quiet_child() -> None:
    """A child's crash is reported by its parent in one line: no fault dump
    (faulthandler, inherited from pytest or PYTHONFAULTHANDLER) on stderr, and
    Ctrl-C is the parent's to handle."""
    faulthandler.disable()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass


def _child_main(conn: Any, fn: Callable[..., Any], args: tuple) -> None:
    global IN_CHILD
    IN_CHILD = True
    _quiet_child()
    try:
        result = call_with_big_stack(fn, *args)
        conn.send(("ok", result))
    except BaseException as exc:  # reported by the parent, never a traceback
        try:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        except Exception:
            pass
    finally:
        conn.close()


def run_isolated(fn: Callable[..., R], args: tuple, timeout: Optional[float] = None) -> tuple[str, Any]:
    """Run fn(*args) in a child process: ("ok", result), ("error", message) for
    an exception, ("crash", how it died) or ("timeout", seconds). The child
    never outlives this call."""
    timeout = child_timeout() if timeout is None else timeout
    ctx = _context()
    parent, child = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child_main, args=(child, fn, args), daemon=True)
    process.start()
    child.close()
    try:
        if parent.poll(timeout):
            try:
                return parent.recv()
            except (EOFError, OSError):
                process.join(5)
                return ("crash", describe_exit(process.exitcode))
        return ("timeout", timeout)
    finally:
        parent.close()
        if process.is_alive():
            process.kill()
        process.join()


def cpython_rejects(text: str) -> Optional[tuple[int, int, str]]:
    """(line, column, message) where CPython's parser refuses a too-deep or
    too-complex text; None when it takes it, or rejects it for another reason
    (that is libcst's to report: it knows newer syntax than this Python)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings must not reach stderr
            compile(text, "<devlint>", "exec", dont_inherit=True, flags=0x400)  # ast.PyCF_ONLY_AST
    except SyntaxError as exc:
        if "nested" in (exc.msg or "") or "too complex" in (exc.msg or ""):
            return exc.lineno or 1, max(exc.offset or 1, 1), f"SyntaxError: {exc.msg}"
    except (RecursionError, MemoryError) as exc:
        return 1, 1, f"SyntaxError: too complex for Python's parser ({type(exc).__name__})"
    except ValueError:
        pass
    return None


# --------------------------------------------------------------------------
# The hook in runner.lint_path


def guard(path: Path, settings: Any, text: str, rules: Sequence[Any], name: str, python: bool,
          lint_path: Callable[[Path, Any], Any]) -> Optional[Any]:
    """None: lint this file here, as usual. Otherwise the file's FileResult:
    an error for a file too large to parse, the result of linting a suspicious
    file in a child process (or why that child failed), or -- in that child --
    the syntax error CPython's parser finds in a file nested too deeply."""
    from .engine import SYNTAX_ERROR, FileResult, could_match
    from .diagnostics import Diagnostic, Location

    if IN_CHILD:
        rejected = cpython_rejects(text) if python else None
        if rejected is None:
            return None
        line, col, message = rejected
        where = Location(line, col)
        return FileResult(name, [Diagnostic(SYNTAX_ERROR[0], SYNTAX_ERROR[1], message, name, where, where)], parsed=True)
    if not (could_match(text, rules) if settings.prefilter else rules):
        return None  # never parsed: nothing to guard against
    large = too_large(text)
    if large:
        return FileResult(name, error=large)
    reason = screen(text)
    if reason is None:
        return None
    status, value = run_isolated(lint_path, (path, settings))
    if status == "ok":
        return value
    if status == "timeout":
        return FileResult(name, error=f"gave up after {value:g} s ({reason}); set DEVLINT_ISOLATION_TIMEOUT to wait longer")
    if status == "crash":
        return FileResult(name, error=f"the parser crashed on this file ({value}; {reason})")
    return FileResult(name, error=f"internal error: {value}")


# --------------------------------------------------------------------------
# Supervised worker processes


def _worker_main(conn: Any, fn: Callable[[T], R], items: Sequence[T], failed: Callable[[T, str], R]) -> None:
    _quiet_child()

    def loop() -> None:
        while True:
            try:
                task = conn.recv()
            except (EOFError, OSError):
                return
            if task is None:
                return
            start, end = task
            for i in range(start, end):
                try:
                    result = fn(items[i])
                except Exception as exc:
                    result = failed(items[i], f"internal error: {type(exc).__name__}: {exc}")
                conn.send((i, result))

    call_with_big_stack(loop)
    conn.close()


def supervised_map(
    fn: Callable[[T], R], items: Sequence[T], jobs: int, chunksize: int, failed: Callable[[T, str], R]
) -> list[R]:
    """[fn(item) for item in items] on `jobs` worker processes. A worker that
    dies is replaced; the item it was on gets failed(item, why) and the rest of
    its share goes to the replacement. `fn`, `items` and `failed` reach the
    workers by fork where the platform has it (else they must pickle)."""
    ctx = _context()
    n = len(items)
    results: list[Any] = [None] * n
    done = [False] * n
    todo: deque[tuple[int, int]] = deque((s, min(s + chunksize, n)) for s in range(0, n, chunksize))
    workers: dict[Any, list] = {}  # conn -> [process, next index, end]

    def spawn() -> None:
        parent, child = ctx.Pipe()
        # Not daemonic: a worker must be able to start the child that isolates a
        # suspicious file (daemonic processes may not have children). The
        # `finally` below joins or kills every worker, and a worker whose parent
        # is gone ends on its pipe's EOF.
        process = ctx.Process(target=_worker_main, args=(child, fn, items, failed), daemon=False)
        process.start()
        child.close()
        workers[parent] = [process, 0, 0]
        feed(parent)

    def feed(conn: Any) -> None:
        state = workers[conn]
        if todo:
            state[1], state[2] = todo.popleft()
            conn.send((state[1], state[2]))
        else:
            conn.send(None)
            state[1] = state[2] = 0

    def take(conn: Any, message: tuple[int, Any]) -> None:
        i, result = message
        results[i], done[i] = result, True
        state = workers[conn]
        state[1] = i + 1
        if state[1] >= state[2]:
            feed(conn)

    try:
        for _ in range(min(jobs, len(todo))):
            spawn()
        while not all(done):
            if not workers:  # every worker finished but something is missing
                spawn()
                continue
            ready = wait(list(workers) + [w[0].sentinel for w in workers.values()])
            for conn in list(workers):
                state = workers[conn]
                process = state[0]
                dead = process.sentinel in ready
                if conn in ready or dead:
                    try:
                        while conn.poll():
                            take(conn, conn.recv())
                    except (EOFError, OSError):
                        dead = True
                if not dead:
                    continue
                process.join()
                conn.close()
                del workers[conn]
                start, end = state[1], state[2]
                if start < end:  # it died on items[start]
                    results[start] = failed(items[start], f"devlint crashed on this file ({describe_exit(process.exitcode)})")
                    done[start] = True
                    if start + 1 < end:
                        todo.appendleft((start + 1, end))
                if todo:
                    spawn()
    finally:
        for conn, (process, _, _) in list(workers.items()):
            try:
                conn.send(None)
            except OSError:
                pass
        for conn, (process, _, _) in list(workers.items()):
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
    return results


__all__ = [
    "IN_CHILD", "call_with_big_stack", "cpython_rejects", "describe_exit", "guard", "run_isolated",
    "screen", "supervised_map", "too_large",
]
