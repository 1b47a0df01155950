"""The pre-parse filter, the worker pool and the cache are optimisations:
none of them may change what devlint reports. The fixtures and a slice of
real projects (tests/data/corpus_slice) are linted through the real command
in every combination, and every run must report exactly the same findings,
fixes included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_run import devlint
from fixture_files import FIXTURES

from devlint import registry
from devlint.cache import Cache
from devlint.engine import WORK
from devlint.runner import PARALLEL_THRESHOLD, Settings, run

SLICE = Path(__file__).resolve().parent / "data" / "corpus_slice"
TARGETS = [str(FIXTURES), str(SLICE)]


def findings(*args: str) -> list[dict]:
    out = devlint("check", "--select", "ALL", "--exit-zero", "--output-format", "json", *args, *TARGETS)
    assert out.returncode == 0, out.stderr
    return sorted(json.loads(out.stdout), key=lambda d: json.dumps(d, sort_keys=True))


@pytest.fixture(scope="module")
def reference() -> list[dict]:
    """Cold, every core, the filter on: how a user first runs it."""
    return findings("--no-cache")


def test_the_inputs_are_worth_comparing(reference):
    files = [p for target in TARGETS for p in Path(target).rglob("*.py")]
    assert len(files) > PARALLEL_THRESHOLD  # so "many workers" really is a pool
    slice_codes = {d["code"] for d in reference if Path(d["filename"]).resolve().is_relative_to(SLICE)}
    assert {"DEV103", "DEV106", "DEV107", "DEV207", "DEV304", "DEV403"} <= slice_codes
    assert any(d["fix"] for d in reference)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--no-cache", "-j", "1"), id="one-worker"),
        pytest.param(("--no-cache", "--no-prefilter"), id="no-filter"),
        pytest.param(("--no-cache", "--no-prefilter", "-j", "1"), id="no-filter-one-worker"),
    ],
)
def test_cold_runs_agree(reference, args):
    assert findings(*args) == reference


def test_a_warm_cache_gives_the_same_findings_without_parsing(reference, tmp_path):
    cache = ["--cache-dir", str(tmp_path)]
    assert findings(*cache) == reference  # fills the cache
    assert any(tmp_path.rglob("*.json"))
    assert findings(*cache) == reference  # many workers, warm
    assert findings(*cache, "-j", "1") == reference

    # In this process, to count the work: warm means no file is parsed.
    files = sorted(p for target in TARGETS for p in Path(target).rglob("*.py"))
    settings = Settings(codes=tuple(registry.by_code()), cache=Cache.open(tmp_path))
    WORK.clear()
    results = run(files, settings, jobs=1)
    assert WORK["parses"] == 0
    assert sum(len(r.diagnostics) for r in results) == len(reference)
