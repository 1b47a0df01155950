"""What to run, where, and what the runs say: rule fixtures and user snippets
become cases; cases run in the environments of the backends present; their
outcomes are judged (judge.py) and gathered into a rule x backend matrix.

Roles of a case:
- `bad`: a cell of a fixture's bad.py annotated with the rule's code, or an
  annotated cell of a user's snippet file. Runs on the claim's backends only.
- `good`, `fixed`: every cell of good.py, and every cell of fixed.py that no
  rule flags any more (a fixed.py cell that still has a finding holds a bug
  the fix could not remove: it is skipped, and the report says so).
- `clean`: an unannotated cell of a user's snippet file.
Good, fixed and clean cells run in every environment present and must run clean.
"""

from __future__ import annotations

import datetime
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from .. import registry
from ..claims import BACKENDS, Claim
from ..engine import SourceFile, lint_source
from ..rule import Rule
from .backends import Machine
from .cells import Cell, SnippetFile, parse_snippets
from .judge import Verdict, check_bad, check_claim, check_clean
from .sandbox import Environment, Job, Outcome, Sandbox

CONFIRMED, CONTRADICTED, NOT_RUN, CLEAN, NOTHING = "confirmed", "CONTRADICTED", "not run here", "clean", "-"
FIXTURE_DIR = re.compile(r"DEV\d{3}")


class InputError(Exception):
    """Snippets the verifier cannot use (unknown code, unreadable file)."""


def display(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


@dataclass
class Case:
    role: str  # bad | good | fixed | clean
    snippet: SnippetFile
    cell: Cell
    skip: Optional[str] = None

    @property
    def where(self) -> str:
        return f"{display(self.snippet.path)}:{self.cell.start}"

    @property
    def label(self) -> str:
        return f"{self.where} ({self.role} cell {self.cell.index})"


@dataclass
class Subject:
    """A row of the report: a rule (its fixtures, or a user's snippets flagged
    with its code), or the unannotated cells of a user's snippets."""

    key: str
    name: str
    claim: Optional[Claim]
    cases: list[Case] = field(default_factory=list)
    origin: str = "fixtures"  # or the snippet path given
    problem: Optional[str] = None  # why the claim cannot be checked at all

    @property
    def label(self) -> str:
        if self.origin == "fixtures" or self.key == self.origin:
            return self.key
        return f"{self.key} in {self.origin}"


@dataclass
class Run:
    """One case judged for one backend."""

    case: Case
    backend: str
    environment: str
    outcome: Outcome
    verdict: Verdict


@dataclass
class Column:
    status: str
    reason: str = ""


@dataclass
class Row:
    subject: Subject
    columns: dict[str, Column]
    runs: list[Run]

    @property
    def status(self) -> str:
        statuses = [c.status for c in self.columns.values()]
        if CONTRADICTED in statuses:
            return CONTRADICTED
        if CONFIRMED in statuses:
            return CONFIRMED
        if self.subject.claim is None and CLEAN in statuses:
            return CLEAN
        return NOT_RUN

    @property
    def skipped(self) -> list[Case]:
        return [c for c in self.subject.cases if c.skip]

    @property
    def failures(self) -> list[Run]:
        return [r for r in self.runs if not r.verdict.ok]


@dataclass
class Report:
    machine: Machine
    rows: list[Row]
    duration: float
    snippets_run: int
    date: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))

    @property
    def contradicted(self) -> bool:
        return any(r.status == CONTRADICTED for r in self.rows)


# -- building cases ------------------------------------------------------------


def _read(path: Path) -> SnippetFile:
    try:
        source = SourceFile.from_bytes(path.read_bytes())
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise InputError(f"cannot read {display(path)}: {exc}") from None
    return parse_snippets(path.resolve(), source.text)


def _still_flagged(snippet: SnippetFile) -> dict[int, list[str]]:
    """cell index -> 'DEV101 at line 17' for findings any rule still reports."""
    found: dict[int, list[str]] = {}
    for d in lint_source(snippet.text, str(snippet.path), registry.all_rules()).diagnostics:
        cell = snippet.cell_at(d.start.row)
        if cell is not None:
            found.setdefault(cell.index, []).append(f"{d.code} at line {d.start.row}")
    return found


def rule_subject(rule: type[Rule], folder: Path, origin: str = "fixtures") -> Subject:
    subject = Subject(rule.code, rule.name, rule.claim, origin=origin)
    if rule.claim is None:
        subject.problem = "the rule states no runtime claim"
    bad = folder / "bad.py"
    if not bad.is_file():
        subject.problem = f"no fixtures: {display(bad)} is missing"
        return subject
    snippet = _read(bad)
    subject.cases += [Case("bad", snippet, c) for c in snippet.cells if rule.code in c.codes]
    good = folder / "good.py"
    if good.is_file():
        snippet = _read(good)
        subject.cases += [Case("good", snippet, c) for c in snippet.cells]
    fixed = folder / "fixed.py"
    if fixed.is_file():
        snippet = _read(fixed)
        flagged = _still_flagged(snippet)
        for c in snippet.cells:
            skip = None
            if c.index in flagged:
                skip = f"still flagged ({', '.join(flagged[c.index])}): the fix cannot make it run"
            subject.cases.append(Case("fixed", snippet, c, skip))
    return subject


def fixture_subjects(fixtures: Path, rules: Sequence[type[Rule]]) -> list[Subject]:
    return [rule_subject(rule, fixtures / rule.code) for rule in rules]


def _python_files(root: Path) -> list[Path]:
    found = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(base) / f for f in sorted(files) if f.endswith(".py")]
    return found


def snippet_subjects(paths: Sequence[Path]) -> list[Subject]:
    """User snippets: an annotated cell is a bad case for each code on it; an
    unannotated cell must run clean. A directory laid out like a rule's
    fixture folder (DEVnnn/ with bad.py) is verified as that rule's fixtures."""
    rules = registry.by_code()
    subjects: list[Subject] = []
    by_code: dict[tuple[str, str], Subject] = {}
    for given in paths:
        origin = display(given)
        if given.is_dir() and FIXTURE_DIR.fullmatch(given.name) and given.name in rules and (given / "bad.py").is_file():
            subjects.append(rule_subject(rules[given.name], given, origin))
            continue
        files = _python_files(given) if given.is_dir() else [given]
        for path in files:
            snippet = _read(path)
            clean = Subject(display(path), "unannotated cells must run clean", None, origin=display(path))
            for cell in snippet.cells:
                if not cell.codes:
                    clean.cases.append(Case("clean", snippet, cell))
                    continue
                for code in sorted(cell.codes):
                    rule = rules.get(code)
                    if rule is None:
                        line = min(cell.lines_of(code))
                        raise InputError(f"{display(path)}:{line}: unknown rule code {code}")
                    subject = by_code.get((code, origin))
                    if subject is None:
                        subject = by_code[(code, origin)] = Subject(code, rule.name, rule.claim, origin=origin)
                        if rule.claim is None:
                            subject.problem = "the rule states no runtime claim"
                        subjects.append(subject)
                    subject.cases.append(Case("bad", snippet, cell))
            if clean.cases:
                subjects.append(clean)
    return subjects


# -- running and judging ---------------------------------------------------------------


def _job_key(case: Case, environment: Environment) -> tuple:
    return (str(case.snippet.path), case.cell.index, environment.key)


def plan(subjects: Sequence[Subject], machine: Machine) -> list[Job]:
    jobs: dict[tuple, Job] = {}
    for subject in subjects:
        if subject.problem and subject.claim is not None:
            continue
        for case in subject.cases:
            if case.skip:
                continue
            if case.role == "bad":
                if subject.claim is None:
                    continue
                environments = [machine.environment(b) for b in subject.claim.backends]
            else:
                environments = machine.environments()
            for env in environments:
                if env is None:
                    continue
                key = _job_key(case, env)
                if key not in jobs:
                    jobs[key] = Job(key, env, str(case.snippet.path), case.snippet.program(case.cell))
    return list(jobs.values())


def _claims_for(case: Case, subject: Subject, backend: str) -> list[tuple[str, Claim]]:
    """The row's claim first, then those of the cell's other codes that hold on `backend`."""
    claims = [(subject.key, subject.claim)] if subject.claim else []
    rules = registry.by_code()
    for code in sorted(case.cell.codes - {subject.key}):
        rule = rules.get(code)
        if rule is not None and rule.claim is not None and backend in rule.claim.backends:
            claims.append((code, rule.claim))
    return claims


def judge_row(subject: Subject, machine: Machine, outcomes: dict) -> Row:
    columns: dict[str, Column] = {}
    runs: list[Run] = []
    claim = subject.claim
    for backend in BACKENDS:
        claimed = claim is not None and backend in claim.backends
        env = machine.environment(backend)
        if env is None:
            columns[backend] = Column(NOT_RUN, f"needs {backend}" if claimed else "")
            continue
        if subject.problem and claim is not None:
            columns[backend] = Column(CONTRADICTED, subject.problem) if claimed else Column(NOTHING, "")
            continue
        here: list[Run] = []
        for case in subject.cases:
            if case.skip or (case.role == "bad" and not claimed):
                continue
            outcome = outcomes.get(_job_key(case, env)) or Outcome.failed("not run")
            if case.role == "bad":
                verdict = check_bad(outcome, case.snippet, case.cell, _claims_for(case, subject, backend))
            else:
                verdict = check_clean(outcome, [claim] if claim else [])
            here.append(Run(case, backend, env.key, outcome, verdict))
        runs += here
        bad = [r for r in here if r.case.role == "bad"]
        others = [r for r in here if r.case.role != "bad"]
        failed = [r for r in here if not r.verdict.ok]
        if failed:
            first = failed[0]
            columns[backend] = Column(
                CONTRADICTED, f"{len(failed)} of {len(here)} cells: {first.case.label} {first.verdict.text}"
            )
        elif claimed and not bad:
            columns[backend] = Column(CONTRADICTED, f"no bad cell is annotated with {subject.key}")
        elif claimed:
            columns[backend] = Column(CONFIRMED, f"{len(bad)} bad cells fail as claimed, {len(others)} good/fixed cells run clean")
        elif others:
            columns[backend] = Column(CLEAN, f"{len(others)} cells run clean")
        else:
            columns[backend] = Column(NOTHING, "not a backend of the claim, and no cell to run clean")
    return Row(subject, columns, runs)


def verify(
    subjects: Sequence[Subject], machine: Machine, sandbox: Sandbox,
    progress: Optional[Callable[[Job, Outcome], None]] = None,
) -> Report:
    started = time.monotonic()
    jobs = plan(subjects, machine)
    outcomes = sandbox.run_all(jobs, progress)
    rows = [judge_row(s, machine, outcomes) for s in subjects]
    return Report(machine, rows, time.monotonic() - started, len(jobs))


# -- a user's script: which findings does a real run reproduce? --------------------------


@dataclass
class FindingCheck:
    code: str
    name: str
    line: int
    end_line: int
    column: int
    message: str
    claim: Optional[Claim]
    results: dict[str, Column]  # backend -> confirmed / not reproduced / not run here

    @property
    def confirmed(self) -> bool:
        return any(c.status == CONFIRMED for c in self.results.values())


@dataclass
class ScriptReport:
    machine: Machine
    script: str
    findings: list[FindingCheck]
    runs: dict[str, Outcome]  # backend -> what the whole script did there
    duration: float
    date: str = field(default_factory=lambda: datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"))

    @property
    def confirmed(self) -> int:
        return sum(f.confirmed for f in self.findings)


RUN_BACKENDS = ("no-accel", "cuda")
NOT_REPRODUCED = "not reproduced"


def verify_script(path: Path, machine: Machine, sandbox: Sandbox, rules: Sequence[type[Rule]], timeout: Optional[float] = None) -> ScriptReport:
    """Lint the script, run it whole under no-accel (and cuda where present),
    and mark each finding whose claimed failure the run raised from its line."""
    started = time.monotonic()
    try:
        source = SourceFile.from_bytes(path.read_bytes())
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise InputError(f"cannot read {display(path)}: {exc}") from None
    name = display(path)
    diagnostics = lint_source(source.text, name, rules).diagnostics
    real = path.resolve()
    jobs: dict[str, Job] = {}
    for backend in RUN_BACKENDS:
        env = machine.environment(backend)
        if env is not None:
            jobs[backend] = Job(
                backend, env, str(real), source.text, argv=(str(real),), sys_path=(str(real.parent),),
                timeout=timeout, main_file=str(real),
            )
    unique: dict[str, Job] = {}
    for job in jobs.values():  # on a CPU-only machine no-accel is the only run
        unique.setdefault(job.environment.key, job)
    outcomes = sandbox.run_all(list(unique.values()))
    runs = {backend: outcomes[unique[job.environment.key].key] for backend, job in jobs.items()}
    by_code = registry.by_code()
    findings = []
    for d in diagnostics:
        rule = by_code.get(d.code)
        claim = rule.claim if rule else None
        results: dict[str, Column] = {}
        for backend in RUN_BACKENDS:
            if backend not in runs:
                results[backend] = Column(NOT_RUN, f"needs {backend}")
            elif claim is None:
                results[backend] = Column(NOT_REPRODUCED, "the rule states no runtime claim")
            else:
                verdict = check_claim(runs[backend], d.code, claim, set(range(d.start.row, d.end.row + 1)))
                results[backend] = Column(CONFIRMED if verdict.ok else NOT_REPRODUCED, verdict.text)
        findings.append(FindingCheck(d.code, d.name, d.start.row, d.end.row, d.start.column, d.message, claim, results))
    return ScriptReport(machine, name, findings, runs, time.monotonic() - started)

