"""Precision of devlint on real code: count, sample, and tabulate the verdicts.

Runs devlint (every rule: ``--select ALL``) over the corpus projects, counts the
findings per rule and per project, draws a reproducible random sample per rule
and writes ``docs/precision.md``: one table row per rule (findings per project,
total, sample size, TP, FP, precision) and, per rule, the sampled findings.

Usage::

    python benchmarks/precision.py                  # run, (re)write docs/precision.md
    python benchmarks/precision.py --check          # exit 1 if docs/precision.md's counts
                                                    # no longer match a fresh run
    python benchmarks/precision.py --sample DEV501  # print that rule's sample, with code
    python benchmarks/precision.py --corpus DIR -j 2
    python benchmarks/precision.py --save-findings f.json   # also keep the raw findings
    python benchmarks/precision.py --load-findings f.json   # re-render from them, no corpus run

The corpus
----------
``--corpus DIR`` (default: ``$DEVLINT_CORPUS``, else ``/work/corpus``) holds one
folder per project. Fill it with the pinned releases that
``../shared/corpus/fetch.sh`` unpacks (transformers, diffusers, timm,
pytorch-lightning, accelerate; pure-Python wheels, nothing installed)::

    ../shared/corpus/fetch.sh /work/corpus

Every sub-folder of the corpus is a project; ``.wheels`` and other hidden
folders are skipped.

The sample
----------
Per rule, the findings are sorted by (file, line, column) and
``random.Random("devlint-precision:<CODE>")`` draws 30 of them (all of them if
there are fewer). The seed depends on the rule's code only, so the same
findings always give the same sample; judge exactly those findings.

Verdict format (docs/precision/<CODE>.md)
-----------------------------------------
Each rule's author records the audit in ``docs/precision/<CODE>.md``, free
Markdown plus ONE machine-readable line of its own::

    verdicts: TP=28 FP=2 sample=30

- ``TP`` / ``FP``: true and false positives among the sampled findings;
  ``TP + FP`` must equal ``sample``.
- ``sample``: how many findings were judged (the script's sample size:
  30, or all findings when there are fewer).
- optional ``total=N``: the rule's corpus total when it was audited, e.g.
  ``verdicts: TP=28 FP=2 sample=30 total=145``. When present and different
  from a fresh run, docs/precision.md marks the audit as stale.

A rule with no findings on the corpus writes ``verdicts: TP=0 FP=0 sample=0``.
Backticks or a leading ``- `` around the line are fine. Each false positive
that could not be removed gets one list item in that file, starting with
``- FP`` and naming ``file:line``, e.g.
``- FP transformers/transformers/trainer.py:1234 — why`` (it may wrap onto
indented lines); docs/precision.md copies these items under the rule.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devlint import registry  # noqa: E402
from devlint.discovery import discover  # noqa: E402

DOC = ROOT / "docs" / "precision.md"
VERDICTS_DIR = ROOT / "docs" / "precision"
DEFAULT_CORPUS = os.environ.get("DEVLINT_CORPUS", "/work/corpus")
SAMPLE_SIZE = 30
SEED = "devlint-precision:{code}"

VERDICT_LINE = re.compile(
    r"verdicts:\s*TP\s*=\s*(?P<tp>\d+)[\s,;]+FP\s*=\s*(?P<fp>\d+)[\s,;]+sample\s*=\s*(?P<sample>\d+)"
    r"(?:[\s,;]+total\s*=\s*(?P<total>\d+))?",
    re.IGNORECASE,
)
# The summary table's rows, as written below: | [DEVnnn](...) | name | n | n | ... |
TABLE_ROW = re.compile(r"^\|\s*\[?(?P<code>DEV\d{3})\]?(?:\([^)]*\))?\s*\|(?P<rest>.*)\|\s*$")


@dataclass(frozen=True)
class Finding:
    code: str
    project: str
    filename: str  # relative to the corpus folder: <project>/...
    row: int
    column: int
    message: str

    @property
    def where(self) -> str:
        return f"{self.filename}:{self.row}:{self.column}"


@dataclass(frozen=True)
class Verdict:
    tp: int
    fp: int
    sample: int
    total: Optional[int]

    @property
    def precision(self) -> Optional[float]:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None


# -- running devlint --------------------------------------------------------
def projects(corpus: Path) -> list[str]:
    if not corpus.is_dir():
        sys.exit(f"precision: corpus folder {corpus} not found; fill it with ../shared/corpus/fetch.sh {corpus}")
    found = sorted(p.name for p in corpus.iterdir() if p.is_dir() and not p.name.startswith(".") and not p.name.endswith(".part"))
    if not found:
        sys.exit(f"precision: no projects in {corpus}")
    return found


def run_devlint(corpus: Path, project: str, jobs: Optional[int]) -> tuple[list[Finding], list[str]]:
    cmd = [sys.executable, "-m", "devlint", "check", "--select", "ALL", "--output-format", "json", "--exit-zero"]
    if jobs:
        cmd += ["-j", str(jobs)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([*cmd, project], cwd=corpus, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 2) or not proc.stdout.strip():
        sys.exit(f"precision: devlint failed on {project} (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
    errors = [l.strip() for l in proc.stderr.splitlines() if l.strip()]
    if errors:  # files devlint could not lint: say so (briefly), go on
        print(f"precision: {project}: {len(errors)} file(s) not linted, e.g.:", file=sys.stderr)
        for line in errors[:3]:
            print(f"    {line}", file=sys.stderr)
    findings = [
        Finding(d["code"], project, d["filename"], d["location"]["row"], d["location"]["column"], d["message"])
        for d in json.loads(proc.stdout)
    ]
    return findings, errors


def rule_names() -> dict[str, str]:
    return {r.code: r.name for r in registry.all_rules()}


def sample(code: str, findings: list[Finding]) -> list[Finding]:
    ordered = sorted(findings, key=lambda f: (f.filename, f.row, f.column))
    if len(ordered) <= SAMPLE_SIZE:
        return ordered
    picked = random.Random(SEED.format(code=code)).sample(ordered, SAMPLE_SIZE)
    return sorted(picked, key=lambda f: (f.filename, f.row, f.column))


FP_ITEM = re.compile(r"^\s*[-*]\s+FP\b")


def read_false_positives(code: str) -> list[str]:
    """The `- FP file:line — why` items of a rule's audit, each joined onto one line."""
    path = VERDICTS_DIR / f"{code}.md"
    if not path.is_file():
        return []
    items: list[str] = []
    current: Optional[list[str]] = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if FP_ITEM.match(line):
            current = [line.strip().lstrip("-*").strip()]
            items.append("")
        elif current is not None and line.strip() and line[:1].isspace() and not re.match(r"^\s*[-*]\s", line):
            current.append(line.strip())
        else:
            current = None
        if current is not None:
            items[-1] = " ".join(current)
    return items


def read_verdict(code: str) -> Optional[Verdict]:
    path = VERDICTS_DIR / f"{code}.md"
    if not path.is_file():
        return None
    m = VERDICT_LINE.search(path.read_text(encoding="utf-8"))
    if m is None:
        return None
    total = m.group("total")
    return Verdict(int(m.group("tp")), int(m.group("fp")), int(m.group("sample")), int(total) if total else None)


# -- the document -------------------------------------------------------------
HEADER = """# Precision on real code

<!-- Generated by `python benchmarks/precision.py`; `--check` verifies the counts.
     Edit the verdicts in docs/precision/<CODE>.md, never the tables here. -->

devlint runs with every rule (`--select ALL`) over real PyTorch projects: the
pinned releases that `../shared/corpus/fetch.sh` unpacks ({pins}).
Each rule's findings are counted per project; a reproducible random sample of
{n} per rule (all findings where there are fewer; seed `devlint-precision:<CODE>`
over the findings sorted by file, line, column) is judged by reading the code,
true positive (TP) or false positive (FP). The verdicts live in
`docs/precision/<CODE>.md`, on one line of their own:

    verdicts: TP=28 FP=2 sample=30

(`TP + FP = sample`; an optional `total=N` records the rule's corpus total at
the time of the audit, and marks the audit stale when a fresh run differs.)
Each false positive that could not be removed is listed there as an item
`- FP file:line — why`, and copied below under its rule.
Regenerate with `python benchmarks/precision.py [--corpus DIR]`; check with
`python benchmarks/precision.py --check`.
"""


def _pins() -> str:
    fetch = ROOT.parent / "shared" / "corpus" / "fetch.sh"
    if fetch.is_file():
        m = re.search(r"pins=\(([^)]*)\)", fetch.read_text(encoding="utf-8"))
        if m:
            return ", ".join(f"`{p}`" for p in m.group(1).split())
    return "transformers, diffusers, timm, pytorch-lightning, accelerate"


def _pct(v: Optional[float]) -> str:
    return "—" if v is None else f"{100 * v:.0f}%"


def render(
    names: dict[str, str], projs: list[str], findings: list[Finding], files: dict[str, int], errors: list[str] = ()
) -> str:
    by_rule: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_rule[f.code].append(f)
    codes = sorted(set(names) | set(by_rule))
    out = [HEADER.format(pins=_pins(), n=SAMPLE_SIZE), ""]
    out.append("Python files per project: " + ", ".join(f"{p} {files.get(p, 0)}" for p in projs) + ".\n")
    if errors:
        out.append(f"devlint could not lint {len(errors)} file(s); their findings are missing from the counts:\n")
        out.extend(f"- {e}" for e in errors)
        out.append("")
    out.append("## Summary\n")
    out.append("| rule | name | " + " | ".join(projs) + " | total | sample | TP | FP | precision | note |")
    out.append("|---|---|" + "---:|" * (len(projs) + 5) + "---|")
    for code in codes:
        fs = by_rule.get(code, [])
        counts = Counter(f.project for f in fs)
        k = len(sample(code, fs))
        v = read_verdict(code)
        note = ""
        if v is None:
            note = "not audited" if fs else ""
            tp = fp = "—"
            prec = "—" if fs else "n/a"
        else:
            tp, fp = str(v.tp), str(v.fp)
            prec = _pct(v.precision) if v.tp + v.fp else "n/a"
            problems = []
            if v.tp + v.fp != v.sample:
                problems.append(f"TP+FP != audited sample {v.sample}")
            if v.sample != k:
                problems.append(f"audited sample {v.sample} != {k}")
            if v.total is not None and v.total != len(fs):
                problems.append(f"stale: audited at total {v.total}")
            note = "; ".join(problems)
        link = f"[{code}](precision/{code}.md)" if (VERDICTS_DIR / f"{code}.md").is_file() else code
        row = [link, names.get(code, "?"), *(str(counts.get(p, 0)) for p in projs), str(len(fs)), str(k), tp, fp, prec, note]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("## False positives left\n")
    out.append("One line each, from the rules' audits (`- FP` items in docs/precision/<CODE>.md).\n")
    any_fp = False
    for code in codes:
        fps = read_false_positives(code)
        if fps:
            any_fp = True
            out.append(f"- **{code}**")
            out.extend(f"  - {item}" for item in fps)
    if not any_fp:
        out.append("None recorded.")
    out.append("")
    out.append("## Samples\n")
    out.append("The findings judged for each rule (`python benchmarks/precision.py --sample CODE` prints them with their code).\n")
    for code in codes:
        fs = by_rule.get(code, [])
        if not fs:
            continue
        picked = sample(code, fs)
        out.append(f"### {code} {names.get(code, '')}\n")
        out.append(f"{len(picked)} of {len(fs)}:\n")
        out.extend(f"- `{f.where}`" for f in picked)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def parse_counts(text: str, projs_hint: Optional[list[str]] = None) -> tuple[list[str], dict[str, dict[str, int]]]:
    """The per-project counts in docs/precision.md's summary table."""
    lines = text.splitlines()
    header = next((l for l in lines if l.startswith("| rule | name |")), None)
    if header is None:
        return [], {}
    cols = [c.strip() for c in header.strip("|").split("|")]
    projs = cols[2 : cols.index("total")]
    counts: dict[str, dict[str, int]] = {}
    for line in lines:
        m = TABLE_ROW.match(line)
        if not m:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        counts[m.group("code")] = {p: int(cells[2 + i]) for i, p in enumerate(projs)}
    return projs, counts


def collect(corpus: Path, jobs: Optional[int]) -> tuple[list[str], list[Finding], dict[str, int], list[str]]:
    projs = projects(corpus)
    findings: list[Finding] = []
    errors: list[str] = []
    files: dict[str, int] = {}
    for p in projs:
        print(f"precision: linting {corpus / p} ...", file=sys.stderr)
        found, failed = run_devlint(corpus, p, jobs)
        findings += found
        errors += failed
        files[p] = sum(1 for _ in discover([str(corpus / p)]))
    return projs, findings, files, errors


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=DEFAULT_CORPUS, help="folder with one sub-folder per project (default: %(default)s)")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="devlint worker processes (default: all cores)")
    ap.add_argument("--check", action="store_true", help="fail if docs/precision.md's counts differ from a fresh run")
    ap.add_argument("--sample", metavar="CODE", help="print the sample of one rule, with the flagged lines")
    ap.add_argument("--output", default=str(DOC), help="where to write the report (default: docs/precision.md)")
    ap.add_argument("--save-findings", metavar="FILE", help="also write the raw findings (JSON) to FILE")
    ap.add_argument("--load-findings", metavar="FILE", help="take the findings from FILE instead of running devlint")
    args = ap.parse_args(argv)
    corpus = Path(args.corpus).resolve()
    names = rule_names()
    if args.load_findings and args.check:
        ap.error("--check always runs devlint afresh; drop --load-findings")
    if args.load_findings:
        raw = json.loads(Path(args.load_findings).read_text(encoding="utf-8"))
        projs, files, errors = raw["projects"], raw["files"], raw.get("errors", [])
        findings = [Finding(**f) for f in raw["findings"]]
    else:
        projs, findings, files, errors = collect(corpus, args.jobs)
    if args.save_findings:
        raw = {"projects": projs, "files": files, "errors": errors, "findings": [f.__dict__ for f in findings]}
        Path(args.save_findings).write_text(json.dumps(raw), encoding="utf-8")

    if args.sample:
        code = args.sample.upper()
        picked = sample(code, [f for f in findings if f.code == code])
        total = sum(1 for f in findings if f.code == code)
        print(f"{code}: {len(picked)} of {total} findings")
        for f in picked:
            lines = (corpus / f.filename).read_text(encoding="utf-8", errors="replace").splitlines()
            print(f"\n{f.where}: {f.message}\n    {lines[f.row - 1].strip() if f.row <= len(lines) else ''}")
        return 0

    fresh: dict[str, dict[str, int]] = {c: {p: 0 for p in projs} for c in names}
    for f in findings:
        fresh.setdefault(f.code, {p: 0 for p in projs})[f.project] += 1
    if args.check:
        path = Path(args.output)
        if not path.is_file():
            print(f"precision: {path} does not exist; run benchmarks/precision.py", file=sys.stderr)
            return 1
        doc_projs, recorded = parse_counts(path.read_text(encoding="utf-8"))
        problems = []
        if doc_projs != projs:
            problems.append(f"projects differ: {doc_projs} recorded, {projs} now")
        for code in sorted(set(fresh) | set(recorded)):
            now, then = fresh.get(code), recorded.get(code)
            if now != then:
                problems.append(f"{code}: recorded {then}, fresh run {now}")
        if problems:
            print("precision: docs/precision.md is out of date:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        print("precision: docs/precision.md matches a fresh run")
        return 0

    Path(args.output).write_text(render(names, projs, findings, files, errors), encoding="utf-8")
    print(f"precision: wrote {args.output} ({len(findings)} findings)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
