"""The semantic layer answers the same whatever the import style."""

from __future__ import annotations

import pytest

from devlint import registry
from devlint.engine import lint_source

ALL = registry.all_rules()


def codes(src: str) -> list[tuple[int, str]]:
    return [(d.start.row, d.code) for d in lint_source(src, "t.py", ALL).diagnostics]


@pytest.mark.parametrize(
    "header, dtype",
    [
        ("import torch as th", "th.float16"),
        ("from torch import float16, randn", "float16"),
        ("import torch", "torch.float16"),
    ],
)
def test_dtype_resolves_through_aliases(header, dtype):
    ctor = "randn" if "randn" in header else header.split()[-1] + ".randn"
    src = f"{header}\nx = {ctor}(2)\nx = x.to({dtype}, 'cpu')\n"
    assert codes(src) == [(3, "DEV201")]


def test_from_torch_cuda_import_is_available_is_a_guard():
    src = "import torch\nfrom torch.cuda import is_available\nif is_available():\n    torch.ones(1).cuda().sum()\n"
    assert codes(src) == []


def test_not_torch_means_not_a_dtype():
    src = "import torch\nimport numpy as np\nx = torch.zeros(1)\nx = x.to(np.float16, 'cpu')\n"
    assert codes(src) == []


def test_files_without_torch_are_never_flagged():
    assert codes("x.cuda()\ny.to('cuda')\n") == []


def test_shadowed_local_module_class_is_a_module_not_a_tensor():
    src = (
        "import torch\nfrom torch import nn\n"
        "class Net(nn.Module):\n    pass\n"
        "net = Net()\nnet.to('cpu')\n"
        "t = torch.ones(1)\nt.to('cpu')\n"
    )
    assert codes(src) == [(8, "DEV301")]


def test_early_exit_after_the_statement_does_not_guard_it():
    src = "import sys, torch\nx = torch.ones(1).cuda()\nif not torch.cuda.is_available():\n    sys.exit(0)\ny = torch.ones(1).cuda()\n"
    assert codes(src) == [(2, "DEV101")]


def test_noqa_silences_a_line():
    src = "import torch\nx = torch.ones(1).cuda()  # noqa: DEV101\ny = torch.ones(1).cuda()  # noqa\nz = torch.ones(1).cuda()  # noqa: DEV2\n"
    assert codes(src) == [(4, "DEV101")]


def test_device_chosen_under_a_guard_is_not_hardcoded():
    src = (
        "import torch\ndevice = 'cpu'\nif torch.cuda.is_available():\n    device = 'cuda'\n"
        "x = torch.ones(1).to(device)\n"
        "dev = torch.device('cuda')\ny = torch.ones(1).to(dev)\n"
    )
    assert codes(src) == [(7, "DEV101")]


def test_a_device_the_caller_supplies_leaves_the_backend_to_it_only_in_to():
    # `.to(device)` goes wherever the caller says; `.cuda(gpu)` and
    # `set_device(gpu)` go to CUDA whatever the caller passes.
    src = (
        "import torch\ndef move(m, device):\n    return m.to(device)\n"
        "def worker(gpu, m):\n    torch.cuda.set_device(gpu)\n    return m.cuda(gpu)\n"
        "class Q:\n    pass\nq = Q()\nq.quantizer.cuda(torch.ones(1), meta={})\n"
    )
    assert codes(src) == [(5, "DEV101"), (6, "DEV101")]


def test_helpers_of_a_gpu_test_module_are_guarded_by_its_skip_marker():
    src = (
        "import pytest, torch\n"
        "requires_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason='GPU')\n"
        "def _inputs():\n    return torch.zeros(2, device='cuda')\n"
        "@requires_gpu\ndef test_decode():\n    _inputs()\n"
    )
    assert codes(src) == []


def test_a_flag_bound_to_true_is_no_guard():
    src = "import torch\nuse_gpu = True\ndev = torch.device('cuda' if use_gpu else 'cpu')\nx = torch.ones(1).to(dev)\n"
    assert codes(src) == [(4, "DEV101")]


def test_a_model_moved_as_it_is_bound_is_placed_before_its_optimizer():
    placed = (
        "import torch\nfrom net import Net\n"
        "def train(device):\n"
        "    model = Net().to(device)\n"
        "    opt = torch.optim.Adagrad(model.parameters())\n"
        "    model.cpu()\n    model.to(device)\n"
    )
    assert [c for c in codes(placed) if c[1] == "DEV306"] == []
    unplaced = placed.replace("Net().to(device)", "Net()")
    assert [c for c in codes(unplaced) if c[1] == "DEV306"] == [(5, "DEV306")]


def test_torch_from_a_star_import_is_torch():
    src = "from data_loaders import *\nstate = torch.load(PATH)\n"
    assert codes(src) == [(2, "DEV103")]
    # Without the star import, an unbound `torch` is nothing devlint knows.
    assert codes(src.replace("from data_loaders import *\n", "\n")) == []


@pytest.mark.parametrize(
    "build, load, flagged",
    [
        ("torch.optim.Adam(model.parameters())", "", False),
        ("torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)", "", False),
        ("torch.optim.Adam(model.parameters())", "    opt.load_state_dict(ckpt['optimizer'])\n", True),
        ("torch.optim.Adagrad(model.parameters())", "", True),
        ("Lamb(model.parameters())", "", True),
    ],
)
def test_an_optimizer_before_the_move_matters_when_its_state_stays_behind(build, load, flagged):
    src = (
        "import torch\nfrom timm.optim import Lamb\n"
        "def train(model, device, ckpt):\n"
        f"    opt = {build}\n{load}"
        "    model.to(device)\n"
    )
    assert ([c for c in codes(src) if c[1] == "DEV306"] == [(4, "DEV306")]) is flagged


def test_the_parts_of_a_loaders_batches_are_host_tensors():
    src = (
        "import torch\nfrom torch.utils.data import DataLoader\nfrom tqdm import tqdm\n"
        "loader = DataLoader(ds, batch_size=4)\n"
        "for i, (x, y) in enumerate(tqdm(loader)):\n    x.to('cpu')\n    i.to('cpu')\n"
        "for x, y in loader:\n    y.to('cpu')\n"
        "for batch in loader:\n    batch.to('cpu')\n"  # a whole batch may be a dict-like encoding
        "for i, batch in enumerate(loader):\n    batch.to('cpu')\n"
        "for a, b in pairs:\n    a.to('cpu')\n"
    )
    assert [c for c in codes(src) if c[1] == "DEV301"] == [(6, "DEV301"), (9, "DEV301")]


def test_code_switched_off_by_a_constant_is_never_reported():
    src = """\
import torch


def restore(path):
    if False:
        return torch.load(path)
    while 0:
        torch.zeros(2).cuda()
    if False:
        pass
    else:
        return torch.load(path)
"""
    assert codes(src) == [(12, "DEV103")]
