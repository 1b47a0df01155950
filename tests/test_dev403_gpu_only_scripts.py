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


MAIN = """\
import torch
from torch.utils.data import DataLoader


def main():
    device = {device}
    model = torch.nn.Linear(4, 2).to(device)
    loader = DataLoader([torch.randn(4)] * 16, batch_size=8, pin_memory=True)
    for batch in loader:
        model(batch.to(device))


{entry}
"""


def test_a_main_function_that_needs_cuda_makes_the_script_need_it():
    # `main()` places on CUDA unguarded: the script never runs without a GPU.
    found = codes(MAIN.format(device='"cuda"', entry='if __name__ == "__main__":\n    main()'))
    assert found == [(7, "DEV101"), (10, "DEV101")]


def test_a_main_function_that_may_run_on_the_cpu_leaves_the_warning():
    guarded = '"cuda" if torch.cuda.is_available() else "cpu"'
    assert codes(MAIN.format(device=guarded, entry="main()")) == [(8, "DEV403")]


def test_a_module_level_loader_handed_to_a_gpu_only_function():
    src = """\
import torch
from torch.utils.data import DataLoader

loader = DataLoader([torch.randn(4)] * 16, batch_size=8, pin_memory=True)


def train(loader):
    for batch in loader:
        batch.cuda()


train(loader)
"""
    assert codes(src) == [(9, "DEV101")]
