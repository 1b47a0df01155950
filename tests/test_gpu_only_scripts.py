"""DEV403 and DEV107 stay silent where their warning could never show: in a
function that needs an accelerator unguarded, or in a file whose own
top-level code does (semantics/accelerator_only.py). DEV101 reports the
crash that comes first."""

from __future__ import annotations

from devlint import registry
from devlint.engine import lint_source

RULES = [registry.by_code()[code] for code in ("DEV403", "DEV107", "DEV101", "DEV102")]

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


AMP = """\
import torch


def train(model, batch):
    model{move}
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return model(batch.to(next(model.parameters()).device))


def main():
    model = torch.nn.Linear(4, 2)
    {main_move}
    scaler = torch.amp.GradScaler()
    return train(model, torch.randn(2, 4)), scaler


main()
"""


def test_autocast_beside_a_hardcoded_cuda_placement_is_left_to_dev101():
    found = codes(AMP.format(move=".cuda()", main_move="pass"))
    assert found == [(5, "DEV101"), (13, "DEV107")]  # the scaler in main() may still run without a GPU


def test_a_gpu_only_main_silences_the_whole_script():
    found = codes(AMP.format(move=".cuda()", main_move="model.cuda()"))
    assert found == [(5, "DEV101"), (12, "DEV101")]


def test_autocast_in_code_that_may_run_on_the_cpu_is_reported():
    move = '.to("cuda" if torch.cuda.is_available() else "cpu")'
    found = codes(AMP.format(move=move, main_move="pass"))
    assert found == [(6, "DEV107"), (13, "DEV107")]


def test_the_deprecated_spelling_is_reported_even_in_gpu_only_code():
    src = """\
import torch

model = torch.nn.Linear(4, 2).cuda()
with torch.cuda.amp.autocast():
    out = model(torch.randn(2, 4).cuda())
"""
    assert codes(src) == [(3, "DEV101"), (4, "DEV107"), (5, "DEV101")]


def test_cuda_handed_to_a_placing_function_makes_the_caller_gpu_only():
    # main() picks CUDA for train()'s `device`, which train() places with: DEV101
    # reports the call, and neither the loader's pinning nor the autocast can
    # warn in a run that never gets past it.
    src = """\
import torch
from torch.utils.data import DataLoader


def train(model, loader, device):
    model.to(device)
    with torch.autocast("cuda"):
        for batch in loader:
            model(batch.to(device))


def main():
    loader = DataLoader([torch.randn(4)] * 16, batch_size=8, pin_memory=True)
    train(torch.nn.Linear(4, 2), loader, "cuda")


main()
"""
    assert codes(src) == [(14, "DEV101")]
    guarded = src.replace('"cuda")\n\n\nmain', '"cuda" if torch.cuda.is_available() else "cpu")\n\n\nmain')
    assert codes(guarded) == [(7, "DEV107"), (13, "DEV403")]
