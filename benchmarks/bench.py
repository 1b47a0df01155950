"""Benchmark devlint on real PyTorch projects, side by side with the parser's
floor, TorchFix and ruff, on the same files in one run.

    python benchmarks/bench.py            # the five corpus projects
    python benchmarks/bench.py --quick    # a short run: timm and accelerate
    python benchmarks/bench.py --corpus DIR --projects timm,accelerate --out benchmarks/RESULTS.md

The corpus is the pinned wheels of transformers, diffusers, timm,
pytorch-lightning and accelerate, unpacked as plain .py trees: $CORPUS_DIR,
else ../corpus beside this checkout, else benchmarks/.corpus (git-ignored).
Missing projects are unpacked on first use, by ../shared/corpus/fetch.sh
where the workspace has it, else by the same pip download steps here.

Measured per project, each in a child process (wall and CPU seconds from the
OS, peak memory as the largest resident set of any process):
  cold     devlint, no cache, all rules, all cores
  1 worker devlint, no cache, all rules, -j 1
  warm     devlint with its cache filled, nothing changed
  touched  devlint with its cache filled, one file's content changed
  floor    libcst.parse_module of every file, one process (the time of the
           files devlint parses, its own pre-parse filter, reported apart)
  torchfix `torchfix --select ALL` when installed
  ruff     `ruff check --select ALL` when installed
Short runs (under 5 s) are repeated and the median is kept. This is a script,
not a timed test: timings belong in benchmarks/RESULTS.md, not in asserts.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
# The corpus: $CORPUS_DIR, else the workspace's `corpus/` beside this checkout,
# else a folder inside it (git-ignored), filled on first use.
DEFAULT_CORPUS = Path(
    os.environ.get("CORPUS_DIR")
    or (ROOT.parent / "corpus" if (ROOT.parent / "corpus").is_dir() else ROOT / "benchmarks" / ".corpus")
)
FETCH = ROOT.parent / "shared" / "corpus" / "fetch.sh"
# The same pins as ../shared/corpus/fetch.sh, for a checkout without it.
PINS = {
    "transformers": "5.23.0", "diffusers": "0.42.1", "timm": "1.0.31",
    "pytorch-lightning": "2.6.6", "accelerate": "1.15.0",
}
ALL_PROJECTS = ("transformers", "diffusers", "timm", "pytorch-lightning", "accelerate")
QUICK_PROJECTS = ("timm", "accelerate")
REPEAT_BELOW_S = 5.0
REPEATS = 3

# The parser's floor, in one process: libcst.parse_module of every file, the
# time of those devlint parses (its own pre-parse filter) kept apart. Writes
# {"all": [files, cpu s], "parsed": [files, cpu s]} to argv[2].
FLOOR_SCRIPT = r"""
import json, sys, time
import libcst as cst
from devlint import registry
from devlint.discovery import discover
from devlint.engine import SourceFile, could_match
rules = registry.all_rules()
spent = {"all": [0, 0.0], "parsed": [0, 0.0]}
for path in discover([sys.argv[1]]):
    try:
        text = SourceFile.from_bytes(path.read_bytes()).text
    except Exception:
        continue
    start = time.process_time()
    try:
        cst.parse_module(text)
    except Exception:
        pass
    took = time.process_time() - start
    for part in ("all", "parsed") if could_match(text, rules) else ("all",):
        spent[part][0] += 1
        spent[part][1] += took
with open(sys.argv[2], "w") as out:
    json.dump(spent, out)
"""


@dataclass
class Measure:
    wall: float
    cpu: float
    rss_mb: float
    note: str = ""


# A fresh parent per measurement: its RUSAGE_CHILDREN covers exactly one command
# and its workers (ru_maxrss is the largest of them, in KiB on Linux).
MEASURE_SCRIPT = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - start
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": rc, "wall": wall, "cpu": u.ru_utime + u.ru_stime, "rss_kib": u.ru_maxrss}))
"""


def run_measured(cmd: list[str], cwd: Path, env: Optional[dict] = None) -> Measure:
    """Run a command; wall, CPU (user+sys of it and its children) and peak RSS."""
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE_SCRIPT, *cmd], cwd=cwd, env=env, capture_output=True, text=True
    )
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"could not measure {' '.join(cmd)}: {proc.stderr.strip()[-500:]}") from None
    if data["rc"] not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} exited {data['rc']}")
    return Measure(data["wall"], data["cpu"], data["rss_kib"] / 1024)


def median_of(fn, *args) -> Measure:
    first = fn(*args)
    if first.wall >= REPEAT_BELOW_S:
        return first
    runs = [first] + [fn(*args) for _ in range(REPEATS - 1)]
    runs.sort(key=lambda m: m.wall)
    mid = runs[len(runs) // 2]
    mid.note = f"median of {len(runs)}"
    return mid


def devlint_cmd(path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "devlint", "check", "--select", "ALL", "--exit-zero", *extra, str(path)]


def count_files_and_lines(path: Path) -> tuple[int, int]:
    files = lines = 0
    for p in path.rglob("*.py"):
        files += 1
        with open(p, "rb") as handle:
            lines += sum(1 for _ in handle)
    return files, lines


def tool_version(cmd: list[str]) -> Optional[str]:
    exe = shutil.which(cmd[0])
    if exe is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else None


def bench_project(path: Path, cache_dir: Path, tools: dict[str, Optional[str]], repeat_slow: bool) -> dict:
    files, lines = count_files_and_lines(path)
    row: dict = {"files": files, "lines": lines}
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    row["cold"] = median_of(run_measured, devlint_cmd(path, "--no-cache"), ROOT, env)
    row["one_worker"] = median_of(run_measured, devlint_cmd(path, "--no-cache", "-j", "1"), ROOT, env)
    cache = ["--cache-dir", str(cache_dir)]
    run_measured(devlint_cmd(path, *cache), ROOT, env)  # fill the cache
    row["warm"] = median_of(run_measured, devlint_cmd(path, *cache), ROOT, env)
    victim = max(path.rglob("*.py"), key=lambda p: p.stat().st_size)
    original = victim.read_bytes()
    try:
        victim.write_bytes(original + b"\n# touched by devlint's benchmark\n")
        row["touched"] = run_measured(devlint_cmd(path, *cache), ROOT, env)
        row["touched"].note = f"{victim.name} changed"
    finally:
        victim.write_bytes(original)
    with tempfile.TemporaryDirectory() as tmp:
        spent_file = Path(tmp) / "floor.json"
        row["floor"] = run_measured([sys.executable, "-c", FLOOR_SCRIPT, str(path), str(spent_file)], ROOT, env)
        spent = json.loads(spent_file.read_text())
    row["floor"].note = f"all {spent['all'][0]} files"
    # The files devlint parses, timed inside the same process (CPU seconds).
    row["floor_parsed"] = Measure(spent["parsed"][1], spent["parsed"][1], row["floor"].rss_mb,
                                  f"{spent['parsed'][0]} files, CPU time of their parses")
    if tools.get("torchfix"):
        row["torchfix"] = run_measured(["torchfix", "--select", "ALL", str(path)], ROOT, env)
    if tools.get("ruff"):
        row["ruff"] = median_of(run_measured, ["ruff", "check", "--select", "ALL", "--exit-zero", "--no-cache", "--quiet", str(path)], ROOT, env)
    return row


def fmt(m: Optional[Measure]) -> str:
    if m is None:
        return "not installed"
    note = f" ({m.note})" if m.note else ""
    return f"{m.wall:.2f} s wall, {m.cpu:.2f} s CPU, {m.rss_mb:.0f} MB{note}"


def ratio(a: Optional[Measure], b: Optional[Measure]) -> str:
    if a is None or b is None or b.wall == 0:
        return "-"
    return f"{a.wall / b.wall:.2f}"


def render(results: dict[str, dict], tools: dict[str, Optional[str]], quick: bool) -> str:
    from devlint import __version__

    out = [
        "# devlint benchmark results",
        "",
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        f"- devlint {__version__}, libcst {importlib.metadata.version('libcst')}",
        f"- torchfix: {tools.get('torchfix') or 'not installed'}; ruff: {tools.get('ruff') or 'not installed'}",
        f"- run: `python benchmarks/bench.py{' --quick' if quick else ''}`",
        "",
        "Wall and CPU seconds, peak memory (largest resident set of any process of the run).",
        "",
        "| project | files | lines | devlint cold | 1 worker | warm | one file touched | parse floor, all files (1 process) | parse floor, files devlint parses | TorchFix | ruff |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        out.append(
            f"| {name} | {r['files']} | {r['lines']:,} | {fmt(r['cold'])} | {fmt(r['one_worker'])} | {fmt(r['warm'])} "
            f"| {fmt(r['touched'])} | {fmt(r['floor'])} | {r['floor_parsed'].cpu:.2f} s CPU ({r['floor_parsed'].note}) "
            f"| {fmt(r.get('torchfix'))} | {fmt(r.get('ruff'))} |"
        )
    out += [
        "",
        "Ratios (wall time; the floor of the files devlint parses in CPU time, as it was measured):",
        "",
        "| project | cold / floor (all) | cold / floor (parsed) | 1 worker / floor (all) | warm / cold | touched (s) | TorchFix / cold | cold / ruff |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        out.append(
            f"| {name} | {ratio(r['cold'], r['floor'])} | {ratio(r['cold'], r['floor_parsed'])} "
            f"| {ratio(r['one_worker'], r['floor'])} | {ratio(r['warm'], r['cold'])} | {r['touched'].wall:.2f} "
            f"| {ratio(r.get('torchfix'), r['cold'])} | {ratio(r['cold'], r.get('ruff'))} |"
        )
    out += [
        "",
        "Issue 6's targets (2 cores, all rules); the absolute 60 s applies to transformers:",
        "",
        "| project | cold < 0.4 x floor (all) | TorchFix / cold >= 25 | warm < 5% of cold | touched < 2 s | peak < 500 MB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in results.items():
        cold, floor, warm, touched, torchfix = r["cold"], r["floor"], r["warm"], r["touched"], r.get("torchfix")
        peak = max(r[k].rss_mb for k in ("cold", "one_worker", "warm", "touched"))
        cells = [
            _verdict(cold.wall < 0.4 * floor.wall, f"{cold.wall / floor.wall:.2f}"),
            _verdict(torchfix.wall >= 25 * cold.wall, f"{torchfix.wall / cold.wall:.1f}x") if torchfix else "not installed",
            _verdict(warm.wall < 0.05 * cold.wall, f"{100 * warm.wall / cold.wall:.1f}%"),
            _verdict(touched.wall < 2.0, f"{touched.wall:.2f} s"),
            _verdict(peak < 500, f"{peak:.0f} MB"),
        ]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _verdict(met: bool, value: str) -> str:
    return f"{value} (met)" if met else f"**{value} (not met)**"


def fetch(dest: Path, projects: list[str]) -> None:
    """Unpack the pinned wheels of `projects` into dest/<project>: with the
    workspace's fetch.sh when there is one, else the same steps here."""
    if FETCH.exists():
        subprocess.run(["bash", str(FETCH), str(dest)], check=True, stdout=subprocess.DEVNULL)
        return
    wheels = dest / ".wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for name in projects:
        pin = f"{name}=={PINS[name]}"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "-d", str(wheels), pin], check=True)
        wheel = next(wheels.glob(f"{name.replace('-', '_')}-{PINS[name]}-*.whl"))
        part = dest / f"{name}.part"
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(part)
        part.rename(dest / name)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_PROJECTS)}")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--projects", help="comma-separated project names")
    parser.add_argument("--out", type=Path, help="write the table here (default: benchmarks/RESULTS.md for a full run)")
    args = parser.parse_args(argv)

    projects = args.projects.split(",") if args.projects else list(QUICK_PROJECTS if args.quick else ALL_PROJECTS)
    unknown = [p for p in projects if p not in PINS]
    if unknown:
        print(f"bench: unknown project(s) {', '.join(unknown)}; known: {', '.join(PINS)}", file=sys.stderr)
        return 2
    missing = [p for p in projects if not (args.corpus / p).is_dir()]
    if missing:
        print(f"bench: unpacking {', '.join(missing)} into {args.corpus} ...", file=sys.stderr, flush=True)
        try:
            fetch(args.corpus, missing)
        except (OSError, subprocess.CalledProcessError, zipfile.BadZipFile) as exc:
            print(f"bench: cannot get the corpus into {args.corpus}: {exc}", file=sys.stderr)
            return 2
    tools = {
        "torchfix": tool_version(["torchfix", "--version"]),
        "ruff": tool_version(["ruff", "--version"]),
    }
    results = {}
    with tempfile.TemporaryDirectory(prefix="devlint-bench-") as tmp:
        for name in projects:
            print(f"bench: {name} ...", file=sys.stderr, flush=True)
            results[name] = bench_project(args.corpus / name, Path(tmp) / name, tools, not args.quick)
    table = render(results, tools, args.quick)
    print(table)
    out = args.out or (None if args.quick else ROOT / "benchmarks" / "RESULTS.md")
    if out is not None:
        out.write_text(table, encoding="utf-8")
        print(f"bench: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
