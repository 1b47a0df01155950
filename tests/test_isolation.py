"""devlint/isolation.py on its own: the screening lets ordinary code through
and stops what only generated or hostile code has; a real native crash in a
child or a worker is reported on its item and the rest goes on."""

from __future__ import annotations

import ctypes
import os
import time

import pytest

from devlint import isolation
from fixture_files import fixture_dirs

if os.name != "posix":  # pragma: no cover
    pytest.skip("fork-based isolation is tested on POSIX", allow_module_level=True)


def test_no_fixture_is_screened():
    for d in fixture_dirs():
        for path in d.glob("*.py"):
            assert isolation.screen(path.read_text(encoding="utf-8")) is None, path


@pytest.mark.parametrize(
    "text, reason",
    [
        ("x = " + "(" * 120 + "1" + ")" * 120, "brackets nested 100"),
        ("x = " + "[" * 99 + "]" * 99, None),
        ("x = a" + ".b" * 1200, "a line longer than 2000"),
        ("x = (\n" + " and\n".join(["    a"] * 2500) + "\n)", "one bracket group spans 2000"),
        ("x = [\n" + "\n".join(["    (a,\n     b),"] * 1500) + "\n]", None),  # many small groups
        ("x = a \\\n" * 600 + "b", "more than 500 backslash"),
        ('s = "((("\n' * 10, None),
    ],
    ids=["deep-brackets", "99-deep", "long-line", "long-group", "many-groups", "continuations", "stray-brackets"],
)
def test_screen(text, reason):
    got = isolation.screen(text)
    assert (got is None) if reason is None else (got is not None and got.startswith(reason)), got


def _segfault_on(item: int) -> int:
    if item == 3:
        ctypes.string_at(0)  # a real SIGSEGV
    return item * 10


def _failed(item: int, why: str) -> str:
    return f"{item}: {why}"


def test_a_worker_killed_by_sigsegv_costs_only_its_item():
    results = isolation.supervised_map(_segfault_on, list(range(8)), jobs=2, chunksize=3, failed=_failed)
    assert results == [0, 10, 20, "3: devlint crashed on this file (killed by SIGSEGV)", 40, 50, 60, 70]


def _raise(item: int) -> int:
    raise ValueError(f"bad {item}")


def test_an_exception_in_a_worker_is_a_failed_item_not_a_dead_pool():
    results = isolation.supervised_map(_raise, [1, 2], jobs=2, chunksize=1, failed=_failed)
    assert results == ["1: internal error: ValueError: bad 1", "2: internal error: ValueError: bad 2"]


def test_run_isolated_reports_crash_timeout_error_and_result():
    assert isolation.run_isolated(_segfault_on, (2,)) == ("ok", 20)
    assert isolation.run_isolated(_segfault_on, (3,)) == ("crash", "killed by SIGSEGV")
    assert isolation.run_isolated(_raise, (1,)) == ("error", "ValueError: bad 1")
    started = time.monotonic()
    assert isolation.run_isolated(time.sleep, (60,), timeout=0.5) == ("timeout", 0.5)
    assert time.monotonic() - started < 10


def test_the_big_stack_runs_what_the_main_thread_cannot():
    import libcst

    deep = "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n"  # overflows an 8 MB stack
    status, value = isolation.run_isolated(lambda: type(libcst.parse_module(deep)).__name__, ())
    assert (status, value) == ("ok", "Module")


def _isolate_in_child(item: int):
    return isolation.run_isolated(_segfault_on, (item,))


def test_a_worker_can_isolate_an_item_in_a_child_of_its_own():
    results = isolation.supervised_map(_isolate_in_child, [2, 3], jobs=2, chunksize=1, failed=_failed)
    assert results == [("ok", 20), ("crash", "killed by SIGSEGV")]
