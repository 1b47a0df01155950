"""`devlint verify` on the shipped fixtures, through the real command: every
rule's claim is confirmed on each of its backends this machine has, and
comes out `not run here` on the others; nothing is contradicted. The rules
are read from the registry when the tests run, so every rule added later is
covered without touching this file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from devlint import registry

pytest.importorskip("torch")  # the verifier's optional extra

RULES = registry.all_rules()
CLAIMED = [r for r in RULES if r.claim is not None]


@pytest.fixture(scope="module")
def report() -> dict:
    """One run of `devlint verify --format json -v` over every rule."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    out = subprocess.run(
        [sys.executable, "-m", "devlint", "verify", "--format", "json", "-v"],
        capture_output=True, text=True, env=env, timeout=900,
    )
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    data["_rows"] = {row["code"]: row for row in data["rules"]}
    data["_exit"] = out.returncode
    return data


def _why(row: dict) -> str:
    lines = [f"{b}: {c['status']} {c['reason']}" for b, c in row["backends"].items()]
    lines += [f"{r['where']} [{r['role']}, {r['backend']}] {r['verdict']}" for r in row["runs"] if not r["ok"]]
    return "\n".join(lines)


@pytest.mark.parametrize("rule", CLAIMED, ids=[r.code for r in CLAIMED])
def test_claim_holds_on_every_backend_present(report, rule):
    row = report["_rows"][rule.code]
    present = {b for b, info in report["backends"].items() if info["present"]}
    for backend, column in row["backends"].items():
        assert column["status"] != "CONTRADICTED", _why(row)
        if backend in rule.claim.backends:
            expected = "confirmed" if backend in present else "not run here"
            assert column["status"] == expected, _why(row)
    if set(rule.claim.backends) & present:
        bad_runs = [r for r in row["runs"] if r["role"] == "bad"]
        assert bad_runs and all(r["ok"] for r in bad_runs)


def test_cpu_and_no_accel_claims_run_on_this_machine(report):
    """cpu is always present; no-accel is present on any machine without a GPU."""
    assert report["backends"]["cpu"]["present"]
    if not report["backends"]["cuda"]["present"] and not report["backends"]["mps"]["present"]:
        assert report["backends"]["no-accel"]["present"]
        assert report["backends"]["no-accel"]["environment"] == report["backends"]["cpu"]["environment"]


@pytest.mark.parametrize(
    "rule", [r for r in CLAIMED if not set(r.claim.backends) & {"cpu", "no-accel"}],
    ids=[r.code for r in CLAIMED if not set(r.claim.backends) & {"cpu", "no-accel"}],
)
def test_accelerator_only_claims_are_not_run_without_the_device(report, rule):
    row = report["_rows"][rule.code]
    for backend in rule.claim.backends:
        if not report["backends"][backend]["present"]:
            assert row["backends"][backend] == {"status": "not run here", "reason": f"needs {backend}"}
    # ... and their bad cells are not run there; their good and fixed cells are.
    ran = {r["backend"] for r in row["runs"] if r["role"] == "bad"}
    assert ran <= {b for b in rule.claim.backends if report["backends"][b]["present"]}


def test_exit_status_says_whether_anything_is_contradicted(report):
    assert report["_exit"] == (1 if report["summary"]["contradicted"] else 0)



def test_fixed_cells_still_flagged_are_skipped_and_the_rest_run(report):
    """A fixed.py cell that some rule still flags holds a bug no fix removes:
    it is skipped (and said so); every other fixed.py cell is run."""
    from devlint.engine import lint_source
    from devlint.verify.cells import read_snippets
    from devlint.verify.command import FIXTURES

    checked = 0
    for rule in CLAIMED:
        path = FIXTURES / rule.code / "fixed.py"
        if not path.is_file():
            continue
        snippet = read_snippets(path)
        flagged = {snippet.cell_at(d.start.row).index for d in lint_source(snippet.text, str(path), RULES).diagnostics}
        row = report["_rows"][rule.code]
        skipped = {s["cell"] for s in row["skipped"] if s["role"] == "fixed"}
        ran = {r["cell"] for r in row["runs"] if r["role"] == "fixed"}
        assert skipped == flagged, rule.code
        assert ran == {c.index for c in snippet.cells} - flagged, rule.code
        checked += 1
    assert checked
