"""The verifier's reports: text (default), JSON and Markdown, for the rule x
backend matrix and for `--run` on a script."""

from __future__ import annotations

import json
import platform
from typing import Callable

from .. import __version__
from ..claims import BACKENDS
from .judge import expectation
from .verifier import CLEAN, CONFIRMED, CONTRADICTED, NOT_RUN, Report, Row, Run, ScriptReport

LEGEND = (
    ("confirmed", "every bad cell failed exactly as the rule claims on this backend, and every good/fixed cell ran clean"),
    ("CONTRADICTED", "a bad cell did not fail as claimed, or a good/fixed cell did not run clean (see below)"),
    ("not run here", "this machine has no such backend; `(needs X)` marks a backend the claim is about"),
    ("clean", "not a backend of the claim: the good and fixed cells ran clean here"),
    ("-", "not a backend of the claim, and nothing that must run clean (annotated snippets only)"),
)


def _cell(column) -> str:
    if column.status == NOT_RUN and column.reason:
        return f"{NOT_RUN} ({column.reason})"
    return column.status


def _header(machine, date: str) -> str:
    info = machine.info
    return (
        f"devlint {__version__}, torch {info.get('torch')}, Python {info.get('python')} "
        f"({platform.system() or info.get('platform')} {platform.machine()}), {date}"
    )


def _summary(report: Report) -> str:
    rules = [r for r in report.rows if r.subject.claim is not None or r.subject.problem]
    counts = {s: sum(r.status == s for r in rules) for s in (CONFIRMED, NOT_RUN, CONTRADICTED)}
    others = [r for r in report.rows if r not in rules]
    text = (
        f"{len(rules)} claim(s): {counts[CONFIRMED]} confirmed, {counts[NOT_RUN]} not run here, "
        f"{counts[CONTRADICTED]} contradicted"
    )
    if others:
        dirty = sum(r.status == CONTRADICTED for r in others)
        text += f"; {len(others)} group(s) of unannotated cells, {dirty} not clean"
    return text + f"; {report.snippets_run} snippet runs in {report.duration:.1f}s."


def _failure_lines(row: Row) -> list[str]:
    """One line per failed case and environment; backends that share an
    environment (cpu and no-accel on a CPU-only machine) share the line."""
    lines = []
    for backend, column in row.columns.items():
        if column.status == CONTRADICTED and not row.failures and column.reason:
            lines.append(f"{row.subject.label} on {backend}: {column.reason}")
    grouped: dict[tuple, list[str]] = {}
    for run in row.failures:
        grouped.setdefault((run.case.label, run.environment, run.verdict.text), []).append(run.backend)
    for (label, _, text), backends in grouped.items():
        lines.append(f"{row.subject.label} on {'/'.join(backends)}: {label} {text}")
    return lines


def _run_line(run: Run) -> str:
    mark = "ok " if run.verdict.ok else "NO "
    return f"  {mark} {run.backend:<9} {run.case.label}: {run.verdict.text}"


def render_text(report: Report, verbose: bool = False) -> str:
    machine = report.machine
    out = [f"devlint verify on {machine.name}: {_header(machine, report.date)}", "", "backends:"]
    for name in BACKENDS:
        b = machine.backends[name]
        out.append(f"  {name:<10} {'here' if b.present else 'absent':<7} {b.detail}")
    out.append("")
    table = [["rule", *BACKENDS]] + [[row.subject.label, *(_cell(row.columns[b]) for b in BACKENDS)] for row in report.rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        out.append("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    failures = [line for row in report.rows for line in _failure_lines(row)]
    if failures:
        out += ["", "contradictions:"] + [f"  {line}" for line in failures]
    if verbose:
        out += ["", "runs:"]
        for row in report.rows:
            out += [_run_line(run) for run in row.runs]
        skipped = [(row, case) for row in report.rows for case in row.skipped]
        if skipped:
            out += ["", "skipped:"] + [f"  {row.subject.label}: {case.label}: {case.skip}" for row, case in skipped]
    out += ["", _summary(report)]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _claim_md(row: Row) -> str:
    claim = row.subject.claim
    if claim is None:
        return "runs clean" if row.subject.problem is None else _md(row.subject.problem)
    outcome = f"raises `{claim.raises}`" if claim.raises else f"warns `{claim.warns}`" if claim.warns else "postcondition (`assert`)"
    return _md(f"{', '.join(claim.backends)}: {outcome} — {claim.summary}")


def render_markdown(report: Report, verbose: bool = False) -> str:
    machine = report.machine
    out = [
        f"# devlint verify: {machine.name}",
        "",
        f"Produced by `devlint verify --format markdown` — {_header(machine, report.date)}.",
        "",
        "## Backends",
        "",
        "| backend | here | how |",
        "| --- | --- | --- |",
    ]
    for name in BACKENDS:
        b = machine.backends[name]
        out.append(f"| `{name}` | {'yes' if b.present else 'no'} | {_md(b.detail)} |")
    out += ["", "## Claims", "", "| rule | claim | " + " | ".join(f"`{b}`" for b in BACKENDS) + " |",
            "| --- | --- |" + " --- |" * len(BACKENDS)]
    for row in report.rows:
        cells = []
        for b in BACKENDS:
            text = _cell(row.columns[b])
            cells.append(f"**{text}**" if row.columns[b].status in (CONFIRMED, CONTRADICTED) else text)
        out.append(f"| {_md(row.subject.label)} `{row.subject.name}` | {_claim_md(row)} | " + " | ".join(cells) + " |")
    out += ["", _summary(report)]
    failures = [line for row in report.rows for line in _failure_lines(row)]
    if failures:
        out += ["", "## Contradictions", ""] + [f"- {_md(line)}" for line in failures]
    skipped = [(row, case) for row in report.rows for case in row.skipped]
    if skipped:
        out += ["", "## Skipped cells", ""]
        out += [f"- {row.subject.label}: `{case.label}` — {_md(case.skip or '')}" for row, case in skipped]
    if verbose:
        out += ["", "## Runs", "", "| rule | backend | cell | verdict |", "| --- | --- | --- | --- |"]
        for row in report.rows:
            for run in row.runs:
                out.append(f"| {row.subject.label} | `{run.backend}` | `{run.case.label}` | {'ok' if run.verdict.ok else '**no**'}: {_md(run.verdict.text)} |")
    out += ["", "## What the statuses mean", ""] + [f"- **{k}**: {v}." for k, v in LEGEND]
    out += [
        "",
        "A bad cell counts when, on a claim backend, it raises the claimed exception (message matching the "
        "claim's pattern) from a line annotated `# error: CODE`, emits the claimed warning from such a line, or "
        "— for a postcondition — fails its own `assert` after that line. Good and fixed cells must exit normally "
        "on every backend present; fixed cells that a rule still flags are skipped. See docs/verifier.md.",
    ]
    return "\n".join(out) + "\n"


def render_json(report: Report, verbose: bool = False) -> str:
    machine = report.machine
    rows = []
    for row in report.rows:
        claim = row.subject.claim
        rows.append({
            "code": row.subject.key,
            "name": row.subject.name,
            "origin": row.subject.origin,
            "status": row.status,
            "problem": row.subject.problem,
            "claim": None if claim is None else {
                "backends": list(claim.backends), "summary": claim.summary, "raises": claim.raises,
                "warns": claim.warns, "postcondition": claim.postcondition, "match": claim.match,
                "expectation": expectation(claim),
            },
            "backends": {b: {"status": c.status, "reason": c.reason} for b, c in row.columns.items()},
            "runs": [
                {
                    "file": run.case.snippet.path.as_posix(), "where": run.case.where, "cell": run.case.cell.index,
                    "line": run.case.cell.start, "role": run.case.role, "backend": run.backend,
                    "environment": run.environment, "ok": run.verdict.ok, "verdict": run.verdict.text,
                    "outcome": run.outcome.to_json() if verbose else {"kind": run.outcome.kind, "summary": run.outcome.describe()},
                }
                for run in row.runs
            ],
            "skipped": [{"where": c.where, "cell": c.cell.index, "role": c.role, "reason": c.skip} for c in row.skipped],
        })
    data = {
        "version": 1,
        "date": report.date,
        "devlint": __version__,
        "machine": {"name": machine.name, **machine.info},
        "backends": {
            name: {"present": b.present, "environment": b.environment.key if b.environment else None, "detail": b.detail}
            for name, b in machine.backends.items()
        },
        "rules": rows,
        "summary": {
            "contradicted": report.contradicted,
            "rows": len(report.rows),
            "confirmed": sum(r.status == CONFIRMED for r in report.rows),
            "not_run_here": sum(r.status == NOT_RUN for r in report.rows),
            "contradictions": sum(r.status == CONTRADICTED for r in report.rows),
            "clean": sum(r.status == CLEAN for r in report.rows),
            "snippet_runs": report.snippets_run,
            "seconds": round(report.duration, 2),
        },
    }
    return json.dumps(data, indent=2) + "\n"


RENDERERS: dict[str, Callable[..., str]] = {"text": render_text, "json": render_json, "markdown": render_markdown}


# -- --run --------------------------------------------------------------------------------


def _script_runs(report: ScriptReport) -> list[str]:
    return [f"{backend}: the script {outcome.describe()}" for backend, outcome in report.runs.items()]


def script_text(report: ScriptReport, verbose: bool = False) -> str:
    out = [f"devlint verify --run {report.script}: {_header(report.machine, report.date)}", ""]
    out += _script_runs(report)
    out.append("")
    for f in report.findings:
        out.append(f"{report.script}:{f.line}:{f.column}: {f.code} {f.message}")
        for backend, column in f.results.items():
            text = f"{column.status}" + (f": {column.reason}" if column.reason and (verbose or column.status != NOT_RUN) else "")
            if column.status == CONFIRMED:
                text = f"confirmed at runtime: {column.reason}"
            out.append(f"    {backend}: {text}")
    if verbose:
        for backend, outcome in report.runs.items():
            out += ["", f"output under {backend}:", outcome.output.rstrip()]
    out += ["", f"{report.confirmed} of {len(report.findings)} finding(s) confirmed at runtime ({report.duration:.1f}s)."]
    return "\n".join(out) + "\n"


def script_markdown(report: ScriptReport, verbose: bool = False) -> str:
    out = [f"# devlint verify --run `{report.script}`", "", _header(report.machine, report.date) + ".", ""]
    out += [f"- {_md(line)}" for line in _script_runs(report)]
    out += ["", "| finding | " + " | ".join(f"`{b}`" for b in report.runs or ["no-accel"]) + " |",
            "| --- |" + " --- |" * max(len(report.runs), 1)]
    for f in report.findings:
        cells = [f"**{c.status}**: {_md(c.reason)}" if c.status == CONFIRMED else _md(f"{c.status}: {c.reason}") for b, c in f.results.items() if b in report.runs]
        out.append(f"| `{report.script}:{f.line}` {f.code} {_md(f.message)} | " + " | ".join(cells) + " |")
    out += ["", f"{report.confirmed} of {len(report.findings)} finding(s) confirmed at runtime."]
    return "\n".join(out) + "\n"


def script_json(report: ScriptReport, verbose: bool = False) -> str:
    data = {
        "version": 1,
        "date": report.date,
        "devlint": __version__,
        "script": report.script,
        "machine": {"name": report.machine.name, **report.machine.info},
        "runs": {b: o.to_json() for b, o in report.runs.items()},
        "findings": [
            {
                "code": f.code, "name": f.name, "line": f.line, "end_line": f.end_line, "column": f.column,
                "message": f.message, "confirmed": f.confirmed,
                "backends": {b: {"status": c.status, "reason": c.reason} for b, c in f.results.items()},
            }
            for f in report.findings
        ],
        "summary": {"findings": len(report.findings), "confirmed": report.confirmed, "seconds": round(report.duration, 2)},
    }
    return json.dumps(data, indent=2) + "\n"


SCRIPT_RENDERERS: dict[str, Callable[..., str]] = {"text": script_text, "json": script_json, "markdown": script_markdown}
