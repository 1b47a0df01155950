"""Fuzzing: devlint never raises, every finding points inside its file, and
--fix output always parses and is a fixpoint.

Inputs: programs hypothesmith generates from Python's grammar (every rule runs
on them, prefilter off), torch-flavoured programs assembled from the
fixtures' own lines under random block structure, and mutations of the
fixtures -- lines deleted, duplicated, swapped, re-indented, tokens swapped,
brackets and quotes inserted, the text truncated, random bytes flipped (the
byte-level ones go through `runner.lint_path`, decoding included).

Profiles:
- default (part of every test run): a few seconds.
- long: `python -m pytest tests/test_fuzz.py --fuzz-long` (or DEVLINT_FUZZ_LONG=1):
  thousands of examples, several minutes.
- DEVLINT_FUZZ_EXAMPLES=N sets the number of examples per test, DEVLINT_FUZZ_SEED
  the seed of the mutation tests (default: a fixed seed in the default profile,
  a random one, printed on failure, in the long one).
"""

from __future__ import annotations

import ast
import os
import random
import re
from typing import Optional

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint import isolation, registry
from devlint.diagnostics import Diagnostic, Location
from devlint.engine import SourceFile, lint_source
from devlint.fixes import fix_source, parses
from devlint.runner import Settings, lint_path
from fixture_files import fixture_dirs

pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")

LONG = os.environ.get("DEVLINT_FUZZ_LONG") == "1"
EXAMPLES = int(os.environ.get("DEVLINT_FUZZ_EXAMPLES") or (3000 if LONG else 0)) or None
SEED = int(os.environ.get("DEVLINT_FUZZ_SEED") or (random.randrange(2**32) if LONG else 20240607))

ALL = registry.all_rules()
CODES = tuple(r.code for r in ALL)
FIXTURE_FILES = [p for d in fixture_dirs() for p in sorted(d.glob("*.py"))]
FIXTURE_TEXTS = {p: p.read_text(encoding="utf-8") for p in FIXTURE_FILES}
FIXTURE_LINES = sorted({
    line.split("  # error:")[0].strip()
    for text in FIXTURE_TEXTS.values()
    for line in text.splitlines()
    if line.strip() and not line.lstrip().startswith("#")
})
_NEWLINE = re.compile(r"\r\n|\r|\n")


def examples(default: int) -> int:
    return EXAMPLES or default


def fuzz_settings(default: int):
    return settings(
        max_examples=examples(default), deadline=None, database=None, derandomize=not LONG,
        suppress_health_check=list(HealthCheck),
    )


# ---------------------------------------------------------------- the properties


def _lines(text: str) -> list[str]:
    """The file's lines as libcst counts them (\\r\\n, \\r and \\n end a line), without their ends."""
    return _NEWLINE.split(text)


def _inside(loc: Location, lines: list[str], what: str) -> None:
    assert 1 <= loc.row <= len(lines), f"{what}: row {loc.row} outside 1..{len(lines)}"
    assert 1 <= loc.column <= len(lines[loc.row - 1]) + 1, (
        f"{what}: column {loc.column} outside line {loc.row} of {len(lines[loc.row - 1])} characters"
    )


def check_positions(diagnostics: list[Diagnostic], text: str) -> None:
    lines = _lines(text)
    for d in diagnostics:
        _inside(d.start, lines, f"{d.code} start")
        _inside(d.end, lines, f"{d.code} end")
        assert (d.start.row, d.start.column) <= (d.end.row, d.end.column), d
        if d.fix is not None:
            for e in d.fix.edits:
                _inside(e.start, lines, f"{d.code} fix edit start")
                _inside(e.end, lines, f"{d.code} fix edit end")
                assert (e.start.row, e.start.column) <= (e.end.row, e.end.column), d


def check_text(text: str, prefilter: bool = True) -> None:
    """Lint and fix `text` in this process; raise AssertionError on any broken promise."""
    if isolation.screen(text):  # nesting only a child process may parse: tests/test_bad_input.py
        return
    result = lint_source(text, "fuzz.py", ALL, prefilter)
    check_positions(result.diagnostics, text)
    fixed = fix_source(text, "fuzz.py", ALL, unsafe=True)
    if fixed.fixed_text is None:
        return
    new = fixed.fixed_text
    assert parses(new, text), "the fixed text does not parse"
    check_positions(fixed.diagnostics, new)
    again = fix_source(new, "fuzz.py", ALL, unsafe=True)
    assert again.fixed_text is None, "the fixed text is not a fixpoint: fixing it again changes it"


def _report(label: str, text: str) -> str:
    shown = text if len(text) < 3000 else text[:3000] + "\n...[truncated]"
    return f"{label}\n----- input -----\n{shown}\n-----------------"


# ---------------------------------------------------------------- hypothesmith


@fuzz_settings(8)
@given(hypothesmith.from_grammar())
def test_generated_programs_every_rule_on(source):
    try:
        check_text(source, prefilter=False)
    except AssertionError as exc:
        raise AssertionError(_report(str(exc), source)) from None


if LONG:
    @fuzz_settings(300)
    @given(hypothesmith.from_node())
    def test_generated_cst_programs_every_rule_on(source):  # slow to generate: long profile only
        try:
            check_text(source, prefilter=False)
        except AssertionError as exc:
            raise AssertionError(_report(str(exc), source)) from None


# ---------------------------------------------------------------- torch-flavoured programs

def _statement(line: str) -> bool:
    try:
        ast.parse(line)
        return "\n" not in line
    except SyntaxError:
        return False


# Fixture lines that are whole statements on their own (no continuation lines).
STATEMENTS = [line for line in FIXTURE_LINES if _statement(line)]
HEADERS = [
    "def f(x, device='cuda'):", "if torch.cuda.is_available():", "for batch in loader:", "with torch.no_grad():",
    "class Net(torch.nn.Module):", "def forward(self, x):", "while step < 10:", "async def run(model):",
    "with torch.autocast('cuda'):", "if __name__ == '__main__':", "def __init__(self):",
    "for x, y in zip(xs, ys):", "if device.type == 'cuda':", "with torch.cuda.device(0):",
]


@st.composite
def _block(draw, depth: int) -> list[str]:
    out: list[str] = []
    pad = "    " * depth
    for _ in range(draw(st.integers(1, (4 if depth else 10) if LONG else (2 if depth else 6)))):
        kind = draw(st.integers(0, 5)) if depth < 3 else 0
        if kind <= 2:
            out.append(pad + draw(st.sampled_from(STATEMENTS)))
        elif kind == 3:  # if / elif / else
            out.append(pad + draw(st.sampled_from([h for h in HEADERS if h.startswith("if ")])))
            out += draw(_block(depth + 1))
            for _ in range(draw(st.integers(0, 2))):
                out.append(pad + "elif torch.backends.mps.is_available():")
                out += draw(_block(depth + 1))
            if draw(st.booleans()):
                out.append(pad + "else:")
                out += draw(_block(depth + 1))
        elif kind == 4:
            out.append(pad + "try:")
            out += draw(_block(depth + 1))
            out.append(pad + draw(st.sampled_from(["except RuntimeError:", "except Exception as exc:", "finally:"])))
            out += draw(_block(depth + 1))
        else:
            out.append(pad + draw(st.sampled_from(HEADERS)))
            out += draw(_block(depth + 1))
    return out


@st.composite
def torch_programs(draw) -> str:
    """Whole fixture statements under random block structure: what libcst
    parses (CPython may still refuse a `return` outside a function)."""
    lines = ["import torch", "import torch.nn as nn"] + draw(_block(0))
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + draw(st.sampled_from(["\n", ""]))


@fuzz_settings(10)
@given(torch_programs())
def test_torch_flavoured_programs(source):
    try:
        check_text(source)
    except AssertionError as exc:
        raise AssertionError(_report(str(exc), source)) from None


# ---------------------------------------------------------------- mutations of the fixtures

TOKEN = re.compile(r"\w+|[^\w\s]")
INSERTS = ["(", ")", "[", "]", "{", "}", ":", ",", "'", '"', '"""', "\\", "\t", "lambda", "*", "**", "=", ".",
           "@", "not ", "await ", "yield ", "# noqa", "# noqa: DEV101", "\n", "\r", ".cuda()", ".to('cuda')",
           "torch.device('cuda:1')", "\x0c", "\u00e9", "\0", "\\N{nope}", "\\xzz", "\\u12"]


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """1-3 random mutations; returns the new text and what was done."""
    done = []
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        kind = rng.choice(["delete", "duplicate", "swap-lines", "indent", "dedent", "swap-tokens",
                           "replace-token", "insert", "truncate", "splice"])
        i = rng.randrange(len(lines))
        if kind == "delete" and len(lines) > 1:
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap-lines":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "indent":
            lines[i] = rng.choice(["    ", " ", "\t"]) + lines[i]
        elif kind == "dedent":
            lines[i] = lines[i][rng.randint(1, 4):] if lines[i].startswith(" ") else lines[i]
        elif kind in ("swap-tokens", "replace-token"):
            tokens = list(TOKEN.finditer(lines[i]))
            if len(tokens) >= 2:
                a = rng.randrange(len(tokens) - 1)
                ta, tb = tokens[a], tokens[a + 1] if kind == "swap-tokens" else tokens[rng.randrange(len(tokens))]
                if kind == "swap-tokens":
                    line = lines[i]
                    lines[i] = line[:ta.start()] + tb.group() + line[ta.end():tb.start()] + ta.group() + line[tb.end():]
                else:
                    word = rng.choice(["cuda", "cpu", "to", "device", "torch", "self", "None", "0", "x", "model"])
                    lines[i] = lines[i][:tb.start()] + word + lines[i][tb.end():]
        elif kind == "insert":
            at = rng.randint(0, len(lines[i]))
            lines[i] = lines[i][:at] + rng.choice(INSERTS) + lines[i][at:]
        elif kind == "truncate":
            joined = "\n".join(lines)
            text = joined[: rng.randrange(len(joined) + 1)]
            done.append(kind)
            continue
        elif kind == "splice":
            lines.insert(i, lines[i][: len(lines[i]) - len(lines[i].lstrip())] + rng.choice(FIXTURE_LINES))
        done.append(f"{kind}@{i + 1}")
        text = "\n".join(lines)
    return text, done


def test_mutated_fixtures():
    rng = random.Random(SEED)
    for n in range(examples(40)):
        path = rng.choice(FIXTURE_FILES)
        text, done = mutate(FIXTURE_TEXTS[path], rng)
        try:
            check_text(text)
        except AssertionError as exc:
            raise AssertionError(_report(
                f"{exc}\n(seed {SEED}, example {n}: {path.parent.name}/{path.name} after {', '.join(done)})", text
            )) from None


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(data))
        data[i] = rng.choice([data[i] ^ (1 << rng.randrange(8)), rng.randrange(256), 0])
    return bytes(data)


def _decoded(data: bytes) -> Optional[str]:
    try:
        return SourceFile.from_bytes(data).text
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


def test_random_byte_flips_through_lint_path(tmp_path):
    """Bytes, not text: decoding, encoding detection and the writer are in the loop."""
    rng = random.Random(SEED + 1)
    path = tmp_path / "fuzz.py"
    lint = Settings(codes=CODES, cache=None)
    fix = Settings(codes=CODES, fix=True, unsafe_fixes=True, cache=None)
    for n in range(examples(30)):
        source = rng.choice(FIXTURE_FILES)
        data = _flip_bytes(source.read_bytes(), rng)
        where = f"(seed {SEED + 1}, example {n}: {source.parent.name}/{source.name}, bytes {data[:60]!r}...)"
        path.write_bytes(data)
        text = _decoded(data)
        result = lint_path(path, lint)
        assert not (result.error or "").startswith("internal error"), f"{result.error} {where}"
        if text is None:
            assert result.error and result.error.startswith("cannot decode file"), where
            continue
        if result.error:  # only the guard's reasons: too large or nested too deeply
            continue
        check_positions(result.diagnostics, text)
        fixed = lint_path(path, fix)
        assert not (fixed.error or "").startswith("internal error"), f"{fixed.error} {where}"
        after = path.read_bytes()
        if after != data:
            new = _decoded(after)
            assert new is not None and parses(new, text), f"--fix wrote a file that does not parse {where}"
            assert lint_path(path, fix).fixed_text is None, f"--fix output is not a fixpoint {where}"
            assert path.read_bytes() == after, where


def test_every_fixture_meets_the_properties_unmutated():
    if not LONG:
        pytest.skip("long profile only (--fuzz-long)")
    for path, text in FIXTURE_TEXTS.items():
        try:
            check_text(text)
        except AssertionError as exc:
            raise AssertionError(f"{path}: {exc}") from None
