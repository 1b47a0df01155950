"""The verifier's parts: cells keep their line numbers, what counts as
confirmed and as clean, how detected devices map to backends, and the
`verify` command's edges (one rule, a user's snippets, `--run`, formats, no
torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from devlint.claims import Claim
from devlint.verify.backends import machine_from
from devlint.verify.cells import parse_snippets
from devlint.verify.judge import check_bad, check_claim, check_clean
from devlint.verify.sandbox import Outcome

HAS_TORCH = True
try:
    import importlib.util

    HAS_TORCH = importlib.util.find_spec("torch") is not None
except ImportError:  # pragma: no cover
    HAS_TORCH = False
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="the verifier needs torch")


def devlint(*args: str, cwd=None, code: str = "") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEVLINT_")}
    argv = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "devlint", *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


SOURCE = textwrap.dedent(
    """\
    import torch

    # %%
    a = 1
    b = torch.zeros(2).cuda()  # error: DEV101

    # %% a second cell
    c = torch.zeros(2).to(torch.half, "cpu")  # error: DEV201, DEV101
    assert c.dtype == torch.half
    """
)


# -- cells -------------------------------------------------------------------------


def test_cells_keep_the_files_line_numbers():
    snippet = parse_snippets(Path("/x/bad.py"), SOURCE)
    assert snippet.prelude_end == 2
    first, second = snippet.cells
    assert (first.index, first.marker, first.start, first.end) == (1, 3, 4, 6)
    assert first.annotations == {5: ("DEV101",)}
    assert second.codes == {"DEV201", "DEV101"} and second.lines_of("DEV201") == {8}
    program = snippet.program(second).splitlines()
    assert program[0] == "import torch"
    assert program[3:6] == ["", "", ""]  # the other cell is blanked, not removed
    assert program[7] == SOURCE.splitlines()[7]
    assert snippet.assert_lines == {9}
    assert snippet.cell_at(8) is second and snippet.cell_at(1) is None
    assert snippet.torch_imports == {"torch"}


def test_a_file_without_markers_is_one_cell():
    snippet = parse_snippets(Path("/x/s.py"), "import torch\nx = torch.ones(1)\n")
    assert snippet.prelude_end == 0
    assert [(c.start, c.end) for c in snippet.cells] == [(1, 2)]
    assert snippet.program(snippet.cells[0]) == "import torch\nx = torch.ones(1)\n"


# -- what counts --------------------------------------------------------------------------

RAISES = Claim(backends=("no-accel",), summary="s", raises="AssertionError|RuntimeError", match="not compiled with CUDA")
WARNS = Claim(backends=("no-accel",), summary="s", warns="UserWarning", match="pin_memory")
POST = Claim(backends=("cuda",), summary="s", postcondition=True)
FILE = "/x/bad.py"


def raised(kind: str, message: str, line, mro=None, innermost=False) -> Outcome:
    frames = [[FILE, line, "<module>"]] if line else []
    if not innermost:
        frames.append(["/site-packages/torch/cuda/__init__.py", 300, "_lazy_init"])
    return Outcome("exception", exception={
        "type": kind, "mro": mro or [kind, "Exception", "BaseException", "object"], "message": message,
        "frames": frames, "target_line": line, "innermost_in_target": innermost,
    })


def test_raises_needs_type_message_and_the_annotated_line():
    ok = raised("AssertionError", "Torch not compiled with CUDA enabled", 5)
    assert check_claim(ok, "DEV101", RAISES, {5}).ok
    assert not check_claim(ok, "DEV101", RAISES, {6}).ok  # raised by another line
    wrong_type = raised("AttributeError", "Torch not compiled with CUDA enabled", 5)
    assert "expected AssertionError|RuntimeError" in check_claim(wrong_type, "DEV101", RAISES, {5}).text
    wrong_message = raised("RuntimeError", "Attempting to deserialize object on a CUDA device", 5)
    assert "does not match" in check_claim(wrong_message, "DEV101", RAISES, {5}).text
    subclass = raised("AcceleratorError", "not compiled with CUDA", 5, mro=["AcceleratorError", "RuntimeError", "Exception"])
    assert check_claim(subclass, "DEV101", RAISES, {5}).ok
    assert "ran clean" in check_claim(Outcome("ok"), "DEV101", RAISES, {5}).text
    assert "timed out" in check_claim(Outcome("timeout", timeout=3), "DEV101", RAISES, {5}).text


def test_warns_needs_the_warning_from_the_annotated_line():
    def warned(line):
        return Outcome("ok", warnings=[{
            "category": "UserWarning", "mro": ["UserWarning", "Warning"], "message": "'pin_memory' argument is set",
            "target_line": line,
        }])

    assert check_claim(warned(7), "DEV403", WARNS, {7}).ok
    assert not check_claim(warned(3), "DEV403", WARNS, {7}).ok
    assert "emitted no UserWarning" in check_claim(Outcome("ok"), "DEV403", WARNS, {7}).text
    assert not check_clean(warned(7), [WARNS]).ok  # good code must not warn as the bad code does
    assert check_clean(warned(None), [WARNS]).ok  # a warning from elsewhere is not the claim's


def test_postcondition_needs_the_cells_own_assert_after_the_flagged_line():
    snippet = parse_snippets(Path(FILE), SOURCE)
    cell = snippet.cells[1]
    own = raised("AssertionError", "", 9, innermost=True)
    assert check_claim(own, "DEV201", POST, {8}, snippet, cell).ok
    torch_assert = raised("AssertionError", "Torch not compiled with CUDA enabled", 8)
    assert not check_claim(torch_assert, "DEV201", POST, {8}, snippet, cell).ok
    not_an_assert = raised("AssertionError", "", 8, innermost=True)
    assert not check_claim(not_an_assert, "DEV201", POST, {8}, snippet, cell).ok
    assert not check_claim(own, "DEV201", POST, {8}).ok  # a plain run cannot show a postcondition


def test_a_cell_with_several_codes_confirms_when_any_claim_holds():
    snippet = parse_snippets(Path(FILE), SOURCE)
    cell = snippet.cells[1]
    type_error = raised("TypeError", "to() received an invalid combination of arguments", 8)
    dev201 = Claim(backends=("cpu",), summary="s", raises="TypeError", match="invalid combination")
    verdict = check_bad(type_error, snippet, cell, [("DEV101", RAISES), ("DEV201", dev201)])
    assert verdict.ok and "TypeError" in verdict.text
    assert not check_bad(type_error, snippet, cell, [("DEV101", RAISES)]).ok


def test_clean_means_a_normal_exit():
    assert check_clean(Outcome("ok")).ok
    for outcome in (Outcome("exit", exit_code=3), Outcome("signal", signal="SIGSEGV"), Outcome("timeout", timeout=1),
                    raised("ValueError", "boom", 2), Outcome.failed("no supervisor")):
        assert not check_clean(outcome).ok


# -- backends -------------------------------------------------------------------------------

CPU_ONLY = {"torch": "2.13.0+cpu", "cuda_build": None, "cuda_device_count": 0, "mps_available": False}


def test_a_cpu_only_build_runs_cpu_and_no_accel_as_one_environment():
    machine = machine_from(CPU_ONLY)
    assert machine.present == ["cpu", "no-accel"]
    assert machine.environment("cpu") == machine.environment("no-accel")
    assert machine.environment("cuda") is None
    assert [e.key for e in machine.environments()] == ["as-is"]


def test_one_gpu_hides_itself_for_no_accel():
    info = {**CPU_ONLY, "cuda_build": "12.8", "cuda_device_count": 1, "cuda_devices": ["NVIDIA H100"]}
    machine = machine_from(info, hidden_info={**info, "cuda_device_count": 0})
    assert machine.present == ["cpu", "no-accel", "cuda"]
    assert dict(machine.environment("no-accel").overrides) == {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
    assert machine.environment("cuda").key == "as-is"
    assert machine.name == "NVIDIA H100"
    stubborn = machine_from(info, hidden_info=info)  # hiding did not work: no-accel is absent, not faked
    assert not stubborn.backends["no-accel"].present


def test_two_gpus_give_multi_gpu_and_a_single_gpu_environment(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    info = {**CPU_ONLY, "cuda_build": "12.8", "cuda_device_count": 2, "cuda_devices": ["A100", "A100"]}
    machine = machine_from(info, hidden_info={**info, "cuda_device_count": 0})
    assert machine.present == ["cpu", "no-accel", "cuda", "multi-gpu"]
    assert dict(machine.environment("cuda").overrides) == {"CUDA_VISIBLE_DEVICES": "0"}
    assert machine.environment("multi-gpu").key == "as-is"
    assert len(machine.environments()) == 3


def test_mps_cannot_be_hidden():
    machine = machine_from({**CPU_ONLY, "mps_available": True})
    assert machine.present == ["cpu", "mps"]
    assert "cannot be hidden" in machine.backends["no-accel"].detail


# -- the command -------------------------------------------------------------------------------


def test_without_torch_verify_says_so_in_one_line_and_exits_2():
    out = devlint("verify", code=(
        "import sys; sys.modules['torch'] = None\n"  # as if torch were not installed
        "from devlint.cli import main; sys.argv[0] = 'devlint'; main(sys.argv[1:])"
    ))
    assert out.returncode == 2
    assert out.stdout == "" and len(out.stderr.strip().splitlines()) == 1
    assert "needs torch" in out.stderr


def test_unknown_rule_or_path_is_a_usage_error():
    out = devlint("verify", "DEV999")
    assert out.returncode == 2 and "DEV999" in out.stderr
    out = devlint("verify", "no/such/place.py")
    assert out.returncode == 2 and "no such rule code or path" in out.stderr


@needs_torch
def test_one_rule_in_markdown_and_the_cli_never_imports_torch():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from devlint.cli import cli\n"
        "result = CliRunner().invoke(cli, ['verify', 'DEV201', '--format', 'markdown'])\n"
        "print(result.output)\n"
        "print('EXIT', result.exit_code, 'TORCH', 'torch' in sys.modules)\n"
    )
    out = devlint(code=code)
    assert out.returncode == 0, out.stderr
    assert "TORCH False" in out.stdout
    assert "| rule | claim | `cpu` |" in out.stdout
    rows = [line for line in out.stdout.splitlines() if line.startswith("| DEV")]
    assert len(rows) == 1 and "DEV201" in rows[0] and "**confirmed**" in rows[0]


@needs_torch
def test_user_snippets_are_checked_against_the_claims_of_their_codes(tmp_path):
    (tmp_path / "mine.py").write_text(textwrap.dedent(
        """\
        import torch

        # %%
        x = torch.zeros(3).to(torch.float16, "cpu")  # error: DEV201

        # %%
        y = torch.zeros(3).to(torch.float16)  # error: DEV201

        # %%
        z = torch.zeros(3) + 1
        """
    ))
    out = devlint("verify", str(tmp_path), "--format", "json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr  # the second cell does not fail: a contradiction
    rows = {row["code"]: row for row in json.loads(out.stdout)["rules"]}
    dev201 = rows["DEV201"]
    assert dev201["backends"]["cpu"]["status"] == "CONTRADICTED"
    verdicts = {r["cell"]: r["ok"] for r in dev201["runs"]}
    assert verdicts == {1: True, 2: False}
    assert rows["mine.py"]["status"] == "clean"


@needs_torch
def test_run_confirms_an_unguarded_cuda_call_on_no_accel(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """\
        import torch
        import torch.nn as nn

        x = torch.randn(4, 10)
        x.to("cpu")
        model = nn.Linear(10, 2).cuda()
        print(model(x))
        """
    ))
    out = devlint("verify", "--run", "train.py", "--format", "json", cwd=tmp_path)
    assert out.returncode == 1, out.stderr  # a finding proven at runtime
    data = json.loads(out.stdout)
    findings = {f["code"]: f for f in data["findings"]}
    dev101 = findings["DEV101"]
    assert dev101["line"] == 6 and dev101["confirmed"]
    assert dev101["backends"]["no-accel"]["status"] == "confirmed"
    assert "Torch not compiled with CUDA enabled" in dev101["backends"]["no-accel"]["reason"]
    assert not findings["DEV301"]["confirmed"]  # the run cannot show it: not claimed as proven
    if not data["machine"]["cuda_available"]:
        assert dev101["backends"]["cuda"]["status"] == "not run here"
    assert data["runs"]["no-accel"]["kind"] == "exception"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # nothing written next to it



# -- reports ---------------------------------------------------------------------------------


def _synthetic_report():
    """A report built from plain data: one rule confirmed on no-accel, one contradicted."""
    from devlint.verify.verifier import Case, Report, Subject, judge_row

    machine = machine_from(CPU_ONLY)
    env = machine.environment("cpu")
    snippet = parse_snippets(Path(FILE), SOURCE)
    first, second = snippet.cells
    dev101 = Subject("DEV101", "unguarded-cuda", RAISES, [Case("bad", snippet, first)])
    dev201 = Subject("DEV201", "to-dtype-before-device",
                     Claim(backends=("cpu",), summary="TypeError", raises="TypeError", match="invalid combination"),
                     [Case("bad", snippet, second)])
    outcomes = {
        (FILE, 1, env.key): raised("AssertionError", "Torch not compiled with CUDA enabled", 5),
        (FILE, 2, env.key): Outcome("ok"),
    }
    rows = [judge_row(s, machine, outcomes) for s in (dev101, dev201)]
    return Report(machine, rows, 1.0, 2, date="2026-01-01")


def test_the_matrix_in_text_json_and_markdown():
    from devlint.verify.report import render_json, render_markdown, render_text

    report = _synthetic_report()
    assert report.contradicted
    text = render_text(report)
    matrix = {line.split()[0]: line.split()[1:3] for line in text.splitlines() if line.startswith("DEV")}
    assert matrix == {"DEV101": ["-", "confirmed"], "DEV201": ["CONTRADICTED", "-"]}
    assert "not run here (needs cuda)" not in text and "not run here" in text
    assert "DEV201 on cpu: /x/bad.py:8 (bad cell 2) ran clean; expected it to raise TypeError" in text
    assert "2 claim(s): 1 confirmed, 0 not run here, 1 contradicted" in text
    data = json.loads(render_json(report))
    assert data["summary"]["contradicted"] and data["rules"][0]["backends"]["no-accel"]["status"] == "confirmed"
    assert data["rules"][0]["backends"]["cuda"] == {"status": "not run here", "reason": ""}
    markdown = render_markdown(report)
    assert "| DEV101 `unguarded-cuda` |" in markdown and "**CONTRADICTED**" in markdown


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_a_dataloader_workers_failure_is_placed_where_the_worker_failed(tmp_path):
    """A DataLoader re-raises a worker's exception at the loop over the loader;
    the line that failed (in `__getitem__`, where DEV402 flags CUDA use) is
    only in the worker's traceback text, and is the one judged."""
    import importlib.util

    from devlint.verify.child import _describe_exception

    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent('''\
        from torch.utils.data import DataLoader, Dataset


        class Broken(Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, i):
                raise ValueError("bad item")


        def run():
            for _ in DataLoader(Broken(), num_workers=1):
                pass
    '''))
    spec = importlib.util.spec_from_file_location("snippet", snippet)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ValueError) as raised:
        module.run()
    described = _describe_exception(raised.value, str(snippet))
    assert described["target_line"] == 9
    assert described["innermost_in_target"]
    assert [13, 9] == [f[1] for f in described["frames"] if f[0] == str(snippet)][-2:]


def test_a_cell_may_mark_the_later_line_where_the_flagged_bug_surfaces():
    source = textwrap.dedent(
        """\
        import torch
        # %%
        positions = torch.arange(4)  # error: DEV304
        mixed = positions + torch.ones(4)  # raises: DEV304
        other = mixed * 2
        """
    )
    cell = parse_snippets(Path(FILE), source).cells[0]
    assert cell.lines_of("DEV304") == {3} and cell.failure_lines_of("DEV304") == {4}
    mismatch = Claim(backends=("cuda",), summary="s", raises="RuntimeError", match="same device")
    at_the_meeting = raised("RuntimeError", "Expected all tensors to be on the same device", 4)
    assert check_claim(at_the_meeting, "DEV304", mismatch, cell.lines_of("DEV304"), cell=cell).ok
    elsewhere = raised("RuntimeError", "Expected all tensors to be on the same device", 5)
    verdict = check_claim(elsewhere, "DEV304", mismatch, cell.lines_of("DEV304"), cell=cell)
    assert not verdict.ok and "`# raises: DEV304`" in verdict.text
    # Without the cell, only the flagged line counts.
    assert not check_claim(at_the_meeting, "DEV304", mismatch, {3}).ok
