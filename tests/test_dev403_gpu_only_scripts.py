"""DEV403 stays silent where the pinning warning could never show: in a file
whose own top-level code needs an accelerator unguarded, as in the function
itself."""

from __future__ import annotations

from devlint import registry
from devlint.engine import lint_source

RULES = [registry.by_code()[code] for code in ("DEV403", "DEV101", "DEV102")]

SCRIPT = """\
import torch
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=8, pin_memory=True)


if __name__ == "__main__":
    model = torch.nn.Linear(4, 2){move}
    loader = make_loader([torch.randn(4)] * 16)
"""


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.start.row, d.code) for d in lint_source(src, "t.py", RULES).diagnostics]


def test_a_script_whose_main_block_needs_cuda_unguarded_never_warns():
    assert codes(SCRIPT.format(move=".cuda()")) == [(10, "DEV101")]


def test_a_script_that_may_run_on_the_cpu_still_gets_the_warning():
    move = '.to("cuda" if torch.cuda.is_available() else "cpu")'
    assert codes(SCRIPT.format(move=move)) == [(6, "DEV403")]


def test_a_script_falling_back_from_cuda_to_mps_needs_an_accelerator_too():
    move = '.to("cuda" if torch.cuda.is_available() else "mps")'
    assert codes(SCRIPT.format(move=move)) == [(10, "DEV102")]
    chained = '.to("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")'
    assert codes(SCRIPT.format(move=chained)) == [(6, "DEV403")]
