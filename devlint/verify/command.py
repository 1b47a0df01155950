"""`devlint verify`: prove every rule's claim by running its fixtures on the
device backends this machine has; or check a user's annotated snippets; or,
with `--run`, run a script and mark the findings the run reproduces.

Exit codes: 0 nothing contradicted (with `--run`: no finding confirmed at
runtime), 1 a claim contradicted (with `--run`: a finding confirmed, i.e. a
proven bug), 2 usage error, torch missing, or the verifier could not run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import site
import sys
from pathlib import Path
from typing import Optional

import click

from .. import registry
from .sandbox import Limits

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures"
SELECTOR = re.compile(r"(?i)(DEV\d{0,3}|ALL)")


def _fail(message: str) -> None:
    click.echo(f"devlint: error: {message}", err=True)
    sys.exit(2)


def _extra_paths() -> list[str]:
    """Isolated mode (`python -I`) drops the user site directory; if torch
    lives there, the children are told where."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin or not site.ENABLE_USER_SITE:
        return []
    user = site.getusersitepackages()
    return [user] if spec.origin.startswith(user) else []


def _stop_on_signal(signum: int, _frame: object) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C: supervisors and snippets are
    killed and the temporary files removed on the way out."""
    raise SystemExit(128 + signum)


def _progress(total: int):
    if not sys.stderr.isatty() or total < 2:
        return None
    done = [0]

    def tick(job, outcome) -> None:
        done[0] += 1
        click.echo(f"\rdevlint verify: {done[0]}/{total} snippets", err=True, nl=done[0] == total)

    return tick


@click.command("verify")
@click.argument("targets", nargs=-1)
@click.option("--run", "script", type=click.Path(dir_okay=False), default=None,
              help="Lint SCRIPT, run it under no-accel (and cuda where present), and mark each finding the run reproduces.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="How the report is printed.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, help="Snippets run at once (default: cores, at most 4).")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=Limits.timeout, show_default=True,
              help="Wall-clock seconds per snippet (per script run with --run).")
@click.option("--max-processes", type=click.IntRange(min=4), default=Limits.max_processes, show_default=True,
              help="Processes and threads one snippet may add (RLIMIT_NPROC).")
@click.option("--output-cap", type=click.IntRange(min=1024), default=Limits.output_cap, show_default=True,
              help="Bytes of a snippet's output that are kept; the rest is counted and dropped.")
@click.option("--fresh", is_flag=True,
              help="Start a new interpreter for every snippet rather than forking it from one that imported torch (slower).")
@click.option("-v", "--verbose", is_flag=True, help="List every run and every skipped cell.")
def verify_command(
    targets: tuple[str, ...], script: Optional[str], fmt: str, jobs: Optional[int], timeout: float,
    max_processes: int, output_cap: int, fresh: bool, verbose: bool,
) -> None:
    """Verify rules' claims by running code: every rule (default), the rules
    TARGETS select (DEV301, DEV1), or the annotated snippet files and folders
    TARGETS name."""
    if os.name != "posix":
        _fail("devlint verify needs a POSIX system (Linux or macOS)")
    if importlib.util.find_spec("torch") is None:
        _fail("devlint verify needs torch, which is not installed: pip install 'devlint[verify]'")

    from .backends import DetectionError, detect
    from .report import RENDERERS, SCRIPT_RENDERERS
    from .sandbox import Sandbox
    from .verifier import InputError, fixture_subjects, plan, snippet_subjects, verify, verify_script

    selectors, paths = [], []
    for target in targets:
        if SELECTOR.fullmatch(target) and not Path(target).exists():
            if not registry.is_known_selector(target):
                raise click.UsageError(f"unknown rule code or prefix '{target}'")
            selectors.append(target)
        elif Path(target).exists():
            paths.append(Path(target))
        else:
            raise click.UsageError(f"no such rule code or path: '{target}'")
    if script is not None:
        if targets:
            raise click.UsageError("--run takes one script and no other targets")
        if not Path(script).is_file():
            raise click.UsageError(f"no such script: '{script}'")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _stop_on_signal)
    limits = Limits(timeout=timeout, output_cap=output_cap, max_processes=max_processes)
    workers = jobs or min(4, os.cpu_count() or 1)
    # Forking from a warm interpreter is safe on Linux; elsewhere (macOS
    # frameworks are not fork-safe) every snippet gets a new interpreter.
    fresh = fresh or not sys.platform.startswith("linux")
    try:
        subjects = []
        if script is None:
            if selectors or not paths:
                if not FIXTURES.is_dir():
                    _fail(f"the rules' fixtures are not installed (looked in {FIXTURES})")
                subjects += fixture_subjects(FIXTURES, registry.select(selectors or ["ALL"], []))
            subjects += snippet_subjects(paths)
            if not subjects:
                _fail("nothing to verify")
        with Sandbox(limits, workers, fresh=fresh, paths=_extra_paths()) as sandbox:
            sandbox.warm_up(sorted({m for s in subjects for c in s.cases for m in c.snippet.torch_imports}))
            try:
                machine = detect(sandbox)
            except DetectionError as exc:
                _fail(str(exc))
            if script is not None:
                script_report = verify_script(Path(script), machine, sandbox, registry.all_rules(), timeout)
                click.echo(SCRIPT_RENDERERS[fmt](script_report, verbose), nl=False)
                sys.exit(1 if script_report.confirmed else 0)
            report = verify(subjects, machine, sandbox, _progress(len(plan(subjects, machine))))
    except InputError as exc:
        _fail(str(exc))
    click.echo(RENDERERS[fmt](report, verbose), nl=False)
    sys.exit(1 if report.contradicted else 0)
