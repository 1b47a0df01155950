"""DEV501 is a performance rule: on by default, and `--ignore DEV5` turns the
whole family off (the CLI's prefix selectors)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_run import devlint

TRAIN = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.randn(2, 4, device=device)]:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
    print(loss.item())
"""


def _codes(out) -> list[tuple[int, str]]:
    return [(d["location"]["row"], d["code"]) for d in json.loads(out.stdout)]


def test_performance_rules_are_on_by_default(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    out = devlint("--output-format", "json", "train.py", cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert _codes(out) == [(11, "DEV501")]


def test_ignore_dev5_turns_the_family_off(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    out = devlint("--ignore", "DEV5", "train.py", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "DEV501" not in out.stdout
    # ... and only that family: a DEV1 finding on the same file is still reported.
    (tmp_path / "train.py").write_text(TRAIN + "y = torch.ones(1).cuda()\n")
    out = devlint("--output-format", "json", "--ignore", "DEV5", "train.py", cwd=tmp_path)
    assert _codes(out) == [(12, "DEV101")]
