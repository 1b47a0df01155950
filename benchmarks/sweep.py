"""Reliability sweep: devlint over every .py file of the installed torch
package and of the corpus, through the real command line. Zero crashes, zero
tracebacks is the bar; the counts go into docs/reliability.md.

Usage::

    python benchmarks/sweep.py                       # torch + every project of /work/corpus
    python benchmarks/sweep.py --corpus DIR -j 2     # another corpus, 2 workers
    python benchmarks/sweep.py --no-fix              # only the lint pass
    python benchmarks/sweep.py --roots torch timm    # some of the roots only
    python benchmarks/sweep.py --json sweep.json     # also write the counts as JSON

Fill the corpus first: ``../shared/corpus/fetch.sh /work/corpus`` (pinned
releases of transformers, diffusers, timm, pytorch-lightning, accelerate).

Two passes per root:

1. **lint**: ``devlint --no-cache --select ALL --output-format json-lines``
   over every .py file (named explicitly, in batches, so that no exclusion
   applies). Counted: files, lines, findings, DEV000 syntax errors, files
   devlint reported as not lintable (``devlint: error:`` lines), and crashes
   -- an exit status other than 0/1/2, a traceback, an ``internal error`` or
   a ``crashed`` message, or a stderr line that is not a one-line error.
2. **fix** (unless ``--no-fix``): the files with fixable findings are copied
   to a temporary folder and fixed with ``--fix --unsafe-fixes``; every
   rewritten file must still parse (libcst) and, if CPython compiled the
   original, compile; running ``--fix`` again must change nothing.

Exit status: 0 when there was no crash and no broken fix, else 1.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BATCH = 400


def torch_root() -> Path:
    spec = importlib.util.find_spec("torch")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("sweep: torch is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def py_files(root: Path) -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out.extend(Path(folder, f) for f in sorted(files) if f.endswith(".py") and os.path.isfile(os.path.join(folder, f)))
    return out


def devlint(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "devlint", *args], cwd=cwd, capture_output=True, text=True, env=env)


def _crash_lines(out: subprocess.CompletedProcess) -> list[str]:
    bad = []
    if out.returncode not in (0, 1, 2):
        bad.append(f"exit status {out.returncode}")
    if "Traceback" in out.stderr or "Traceback" in out.stdout:
        bad.append("a traceback:\n" + out.stderr[-3000:])
    for line in out.stderr.splitlines():
        if not line.startswith("devlint: error: "):
            bad.append(f"stderr line that is not a one-line error: {line[:300]}")
        elif "internal error" in line or "crashed" in line:
            bad.append(line)
    return bad


def lint_pass(name: str, root: Path, files: list[Path], jobs: int, env: dict) -> dict:
    counts = collections.Counter()
    crashes: list[str] = []
    errors: list[str] = []
    by_code: collections.Counter = collections.Counter()
    fixable: set[str] = set()
    counts["files"] = len(files)
    counts["lines"] = sum(p.read_bytes().count(b"\n") for p in files)
    counts["bytes"] = sum(p.stat().st_size for p in files)
    start = time.perf_counter()
    # Run from the root's parent: run from inside a package like torch, its
    # modules (torch/types.py, torch/random.py) would shadow the stdlib's.
    base = root.parent
    for i in range(0, len(files), BATCH):
        batch = [str(p.relative_to(base)) for p in files[i:i + BATCH]]
        out = devlint(["--no-cache", "--select", "ALL", "--no-respect-gitignore", "--output-format", "json-lines",
                       "-j", str(jobs), *batch], base, env)
        crashes += _crash_lines(out)
        errors += [l for l in out.stderr.splitlines() if l.startswith("devlint: error: ")]
        for line in out.stdout.splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            by_code[item["code"]] += 1
            if item.get("fix"):
                fixable.add(item["filename"])
    counts["seconds"] = round(time.perf_counter() - start, 1)
    counts["findings"] = sum(n for c, n in by_code.items() if c != "DEV000")
    counts["syntax_errors"] = by_code.get("DEV000", 0)
    counts["errors"] = len(errors)
    counts["crashes"] = len(crashes)
    return {"name": name, "root": str(root), "counts": dict(counts), "by_code": dict(sorted(by_code.items())),
            "errors": errors, "crashes": crashes, "fixable": sorted(fixable)}


def _parses(text: str) -> bool:
    import libcst

    try:
        libcst.parse_module(text)
        return True
    except Exception:
        return False


def _compiles(text: str) -> bool:
    try:
        compile(text, "<sweep>", "exec", dont_inherit=True, flags=0x400)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def fix_pass(result: dict, jobs: int, env: dict) -> None:
    """Fix a copy of the files with fixable findings; every rewritten file must
    parse (and compile, if the original did) and be a fixpoint."""
    root = Path(result["root"]).parent  # the names are relative to the root's parent
    names = result["fixable"]
    broken: list[str] = []
    counts = result["counts"]
    counts["fix_files"] = len(names)
    counts["fixed_files"] = 0
    if not names:
        counts["broken_fixes"] = 0
        result["broken_fixes"] = broken
        return
    with tempfile.TemporaryDirectory(prefix="devlint-sweep-") as tmp:
        for name in names:
            dest = Path(tmp, name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, dest)
        before = {n: Path(tmp, n).read_bytes() for n in names}
        args = ["--no-cache", "--select", "ALL", "--fix", "--unsafe-fixes", "--no-respect-gitignore",
                "--output-format", "concise", "-j", str(jobs)]
        for i in range(0, len(names), BATCH):
            out = devlint([*args, *names[i:i + BATCH]], Path(tmp), env)
            result["crashes"] += _crash_lines(out)
        after = {n: Path(tmp, n).read_bytes() for n in names}
        for n in names:
            if after[n] == before[n]:
                continue
            counts["fixed_files"] += 1
            try:
                new = after[n].decode("utf-8")
                old = before[n].decode("utf-8")
            except UnicodeDecodeError:
                continue  # another encoding: checked by the fixpoint run below
            if not _parses(new):
                broken.append(f"{n}: the fixed file does not parse")
            elif _compiles(old) and not _compiles(new):
                broken.append(f"{n}: the fixed file no longer compiles")
        changed = [n for n in names if after[n] != before[n]]
        for i in range(0, len(changed), BATCH):
            out = devlint([*args, *changed[i:i + BATCH]], Path(tmp), env)
            result["crashes"] += _crash_lines(out)
        for n in changed:
            if Path(tmp, n).read_bytes() != after[n]:
                broken.append(f"{n}: fixing the fixed file changes it again")
    counts["broken_fixes"] = len(broken)
    counts["crashes"] = len(result["crashes"])
    result["broken_fixes"] = broken


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("DEVLINT_CORPUS", "/work/corpus")))
    parser.add_argument("--roots", nargs="*", help="names of the roots to sweep (torch and corpus projects)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-fix", action="store_true", help="skip the fix pass")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    args = parser.parse_args(argv)

    roots = [("torch", torch_root())]
    if args.corpus.is_dir():
        roots += [(p.name, p) for p in sorted(args.corpus.iterdir()) if p.is_dir() and not p.name.startswith(".")]
    else:
        print(f"sweep: no corpus at {args.corpus} (../shared/corpus/fetch.sh {args.corpus} fills it)", file=sys.stderr)
    if args.roots:
        roots = [(n, p) for n, p in roots if n in args.roots]
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")

    results = []
    for name, root in roots:
        files = py_files(root)
        print(f"sweep: {name}: {len(files)} files ...", file=sys.stderr, flush=True)
        result = lint_pass(name, root, files, args.jobs, env)
        if not args.no_fix:
            fix_pass(result, args.jobs, env)
        results.append(result)
        print(f"sweep: {name}: {json.dumps(result['counts'])}", file=sys.stderr, flush=True)

    keys = ["files", "lines", "findings", "syntax_errors", "errors", "crashes", "fix_files", "fixed_files", "broken_fixes", "seconds"]
    print("| root | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 1))
    total = collections.Counter()
    for r in results:
        print(f"| {r['name']} | " + " | ".join(str(r["counts"].get(k, "-")) for k in keys) + " |")
        total.update({k: r["counts"].get(k, 0) for k in keys})
    print("| **total** | " + " | ".join(str(round(total[k], 1)) for k in keys) + " |")
    for r in results:
        for line in r["errors"]:
            print(f"error  {r['name']}: {line}")
        for line in r["crashes"]:
            print(f"CRASH  {r['name']}: {line}")
        for line in r.get("broken_fixes", []):
            print(f"BROKEN {r['name']}: {line}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 1 if total["crashes"] or total["broken_fixes"] else 0


if __name__ == "__main__":
    sys.exit(main())
