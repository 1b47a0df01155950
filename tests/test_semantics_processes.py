"""Semantic facts for the process and performance rules (DEV4, DEV5): loops
that train, conditions that skip steps, code that runs in DataLoader workers,
and whether CUDA was initialised before a point.

A probe rule (not registered) asks the semantic layer at every call of a
function named `probe(...)` and records the answers by line."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst
import pytest

from devlint import registry
from devlint.engine import lint_source
from devlint.rule import Rule
from devlint.semantics import cuda_init, dataloading, loops


class Probe(Rule):
    code = "DEV999"
    name = "probe"
    message = "probe"
    answers: ClassVar[dict[int, dict]] = {}

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Name) and node.func.value == "probe"):
            return
        loop = loops.training_loop(self.ctx)
        worker = dataloading.worker_code(self.ctx)
        chain = list(self.ctx.stack)
        answer = {
            "trains": loop is not None,
            "periodic": loop is not None and loops.periodic(self.ctx, loop),
            "accelerated": loop is not None and loops.uses_accelerator(self.ctx, loop),
            "worker": worker,
        }
        self.report(node, condition=lambda: self._finish(node, answer, chain))

    def _finish(self, node, answer, chain) -> bool:
        worker = answer.pop("worker")
        answer["worker"] = worker is not None and worker.condition()
        answer["cuda_before"] = cuda_init.touched_before(self.ctx, chain) is not None
        answer["node"] = node
        Probe.answers.setdefault("found", []).append(answer)
        return True


def probe(src: str) -> list[dict]:
    Probe.answers = {}
    result = lint_source("import torch\n" + src, "t.py", [Probe])
    assert [d.code for d in result.diagnostics] == ["DEV999"] * len(Probe.answers.get("found", []))
    return Probe.answers.get("found", [])


# -- loops that train -----------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        "loss.backward()",
        "scaler.scale(loss).backward()",
        "accelerator.backward(loss)",
        "self.manual_backward(loss)",
        "optimizer.step()",
        "self.optimizer.step()",
        "opt_g.step()",
        "scaler.step(optimizer)",
        "torch.autograd.backward([loss])",
    ],
)
def test_a_loop_that_backpropagates_or_steps_an_optimizer_trains(body):
    (answer,) = probe(f"for batch in loader:\n    loss = model(batch)\n    {body}\n    probe()\n")
    assert answer["trains"]


@pytest.mark.parametrize(
    "body",
    [
        "scheduler.step()",
        "lr_scheduler.step()",
        "env.step(action)",
        "total += loss",
    ],
)
def test_a_loop_that_only_steps_other_things_does_not_train(body):
    (answer,) = probe(f"for batch in loader:\n    {body}\n    probe()\n")
    assert not answer["trains"]


def test_a_built_lr_scheduler_is_no_optimizer():
    src = (
        "opt = torch.optim.SGD(params, lr=0.1)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
        "for epoch in range(3):\n    sched.step()\n    probe()\n"
    )
    (answer,) = probe(src)
    assert not answer["trains"]


def test_only_the_loop_whose_own_body_trains_counts():
    src = (
        "for epoch in range(3):\n"
        "    for batch in loader:\n"
        "        loss.backward()\n"
        "        for p in params:\n"
        "            probe()\n"  # in a loop nested in the training loop: every step
        "    probe()\n"  # once per epoch
        "    for batch in val_loader:\n"
        "        probe()\n"  # an evaluation loop
    )
    assert [a["trains"] for a in probe(src)] == [True, False, False]


def test_a_function_defined_in_a_training_loop_is_not_the_loop():
    src = "for batch in loader:\n    loss.backward()\n    def log():\n        probe()\n"
    (answer,) = probe(src)
    assert not answer["trains"]


@pytest.mark.parametrize(
    "condition, periodic",
    [
        ("step % 100 == 0", True),
        ("(i + 1) % args.log_interval == 0", True),
        ("i == 0", True),
        ("verbose", True),
        ("args.log_every", True),
        ("accelerator.sync_gradients", True),
        ("torch.isnan(loss)", True),
        ("use_amp", False),
        ("not args.fp16", False),
        ("scaler is not None", False),
        ("accelerator.is_main_process", False),
        # Picking a process holds on every step of that process.
        ("rank == 0", False),
        ("args.local_rank in [-1, 0]", False),
        ("dist.get_rank() == 0", False),
        ("is_main_process()", False),
        ("rank == 0 and step % 10 == 0", True),
        ("rank == world_size", True),
        ("get_rank(loss) == 0", True),
    ],
)
def test_conditions_that_skip_steps(condition, periodic):
    src = f"for step, batch in enumerate(loader):\n    loss.backward()\n    if {condition}:\n        probe()\n"
    (answer,) = probe(src)
    assert answer["trains"] and answer["periodic"] is periodic


def test_the_else_of_a_logging_condition_is_periodic_too():
    src = "for step, b in enumerate(loader):\n    loss.backward()\n    if step % 10 == 0:\n        pass\n    else:\n        probe()\n"
    (answer,) = probe(src)
    assert answer["periodic"]


@pytest.mark.parametrize(
    "setup, accelerated",
    [
        ("batch = batch.to(device)", True),
        ("batch = batch.cuda()", True),
        ("noise = torch.randn(4, device=args.device)", True),
        ("model, optimizer, loader = accelerator.prepare(model, optimizer, loader)", True),
        ("batch = batch.float()", False),
        ("noise = torch.randn(4)", False),
    ],
)
def test_a_loop_uses_an_accelerator_when_its_function_places_anything_on_one(setup, accelerated):
    src = f"def train():\n    {setup}\n    for b in loader:\n        loss.backward()\n        probe()\n"
    (answer,) = probe(src)
    assert answer["trains"] and answer["accelerated"] is accelerated


def test_a_device_chosen_in_branches_may_be_the_accelerator():
    src = (
        "import torch\n"
        "def train(args):\n"
        "    if args.cuda:\n        device = torch.device('cuda')\n"
        "    else:\n        device = torch.device('cpu')\n"
        "    model.to(device)\n"
        "    for b in loader:\n        loss.backward()\n        probe()\n"
    )
    (answer,) = probe(src)
    assert answer["accelerated"]
    only_cpu = src.replace("torch.device('cuda')", "torch.device('cpu')")
    (answer,) = probe(only_cpu)
    assert not answer["accelerated"]


def test_a_configured_device_with_a_cpu_fallback_may_be_the_accelerator():
    src = (
        "def train(conf):\n"
        "    name = conf['train']['device']\n"
        "    if name.startswith('cuda') and not torch.cuda.is_available():\n        name = 'cpu'\n"
        "    device = torch.device(name)\n"
        "    model.to(device)\n"
        "    for b in loader:\n        loss.backward()\n        probe()\n"
    )
    (answer,) = probe(src)
    assert answer["accelerated"]
    # Every assignment, through every name it is made from, is the host.
    only_cpu = src.replace("conf['train']['device']", "'cpu'")
    (answer,) = probe(only_cpu)
    assert not answer["accelerated"]


@pytest.mark.parametrize(
    "body, targets",
    [
        ("loss.backward()", {"loss"}),
        ("scaler.scale(loss).backward()", {"loss"}),
        ("accelerator.backward(loss)", {"loss"}),
        ("self.manual_backward(total)", {"total"}),
        ("torch.autograd.backward(loss)", {"loss"}),
        ("(a + b).backward()", set()),
        ("(outputs.loss / accumulation_steps).backward()", {"outputs.loss"}),
        ("scaler.scale(outputs.loss.mean() / n).backward()", {"outputs.loss"}),
        ("helper.backward(loss)", set()),
        ("loss.backward(retain_graph=True)", {"loss"}),
        ("errD.backward(mone)", {"errD"}),
    ],
)
def test_what_a_loop_differentiates(body, targets):
    class Targets(Rule):
        code = "DEV998"
        name = "targets"
        message = "targets"
        found: ClassVar[list] = []

        def visit_For(self, node: cst.For) -> None:
            Targets.found.append(loops.backward_targets(self.ctx, node))

    Targets.found = []
    lint_source(f"import torch\nfor b in loader:\n    {body}\n", "t.py", [Targets])
    assert Targets.found == [frozenset(targets)]


# -- DataLoader workers ---------------------------------------------------------
def test_dataset_worker_methods_through_aliases_and_local_bases():
    src = (
        "from torch.utils import data\n"
        "class Base(data.Dataset):\n"
        "    def __getitem__(self, i):\n        probe()\n"
        "    def __len__(self):\n        probe()\n"
        "class Child(Base):\n"
        "    def __iter__(self):\n        probe()\n"
        "class NotADataset:\n"
        "    def __getitem__(self, i):\n        probe()\n"
    )
    assert [a["worker"] for a in probe(src)] == [True, False, True, False]


def test_collate_and_worker_init_functions_run_in_workers_unless_there_are_none():
    src = (
        "import functools\n"
        "from torch.utils.data import DataLoader\n"
        "def collate(batch):\n    probe()\n"
        "def main_collate(batch):\n    probe()\n"
        "def init(worker_id):\n    probe()\n"
        "def unused(batch):\n    probe()\n"
        "a = DataLoader(ds, num_workers=4, collate_fn=functools.partial(collate, pad=0))\n"
        "b = DataLoader(ds, collate_fn=main_collate)\n"
        "c = DataLoader(ds, num_workers=0, collate_fn=main_collate)\n"
        "d = DataLoader(ds, worker_init_fn=init, **loader_kwargs)\n"
    )
    assert [a["worker"] for a in probe(src)] == [True, False, True, False]


def test_a_lambda_collate_fn_runs_in_workers():
    src = "from torch.utils.data import DataLoader\nl = DataLoader(ds, num_workers=n, collate_fn=lambda b: probe())\n"
    (answer,) = probe(src)
    assert answer["worker"]


# -- CUDA initialised before this point -------------------------------------------
@pytest.mark.parametrize(
    "before, touched",
    [
        ("x = 1", False),
        ("n = torch.cuda.device_count()", True),  # NVML, or cudaGetDeviceCount where NVML fails
        ("torch.cuda.manual_seed(0)", False),  # queued until initialisation
        ("ok = torch.cuda.is_available()", True),
        ("torch.cuda.set_device(0)", True),
        ("m = model.cuda()", True),
        ("t = torch.zeros(2, device='cuda')", True),
        ("d = torch.device('cuda' if torch.cuda.is_available() else 'cpu')", True),
        ("def f():\n    torch.cuda.init()", False),  # defined, not run
    ],
)
def test_cuda_touched_before_at_module_level(before, touched):
    (answer,) = probe(f"{before}\nprobe()\n")
    assert answer["cuda_before"] is touched


def test_cuda_touched_before_a_function_runs():
    src = (
        "def early():\n    probe()\n"
        "def late():\n    probe()\n"
        "def inside():\n    torch.cuda.synchronize()\n    probe()\n"
        "early()\n"
        "torch.cuda.init()\n"
        "late()\n"
    )
    assert [a["cuda_before"] for a in probe(src)] == [False, True, True]


def test_launching_processes_is_recognised():
    module = cst.parse_module(
        "import subprocess\nimport torch.multiprocessing as mp\n"
        "def a():\n    subprocess.run(['x'])\n"
        "def b():\n    mp.spawn(fn, nprocs=2)\n"
        "def c():\n    print('x')\n"
    )
    from devlint.semantics import Context

    ctx = Context(module.code)
    for stmt in module.body[:2]:
        ctx.imports.add_import(stmt.body[0])
    funcs = [s for s in module.body if isinstance(s, cst.FunctionDef)]
    assert [cuda_init.launches_processes(ctx, f) for f in funcs] == [True, True, False]


def test_the_process_rules_are_registered():
    codes = {r.code for r in registry.all_rules()}
    assert {"DEV401", "DEV402", "DEV403", "DEV501"} <= codes


def test_a_dataset_only_loaded_without_workers_runs_in_the_main_process():
    head = (
        "from torch.utils.data import DataLoader, Dataset\n"
        "class Items(Dataset):\n"
        "    def __getitem__(self, i):\n        probe()\n"
    )
    cases = [
        ("DataLoader(Items(), batch_size=2)", False),
        ("ds = Items()\nDataLoader(ds, num_workers=0)", False),
        ("kw = {'num_workers': 0} if cuda else {}\nDataLoader(Items(), **kw)", False),
        ("DataLoader(Items(), num_workers=2)", True),
        ("kw = {'num_workers': 0}\nkw.update(extra)\nDataLoader(Items(), **kw)", True),
        ("DataLoader(Items(), **kwargs)", True),
        ("DataLoader(Subset(Items(), idx), num_workers=4)", True),  # wrapped: may be Items
        ("DataLoader(Other(), num_workers=0)", False),  # what Other() is cannot be told: may be Items
        ("", True),  # no DataLoader here: the dataset is loaded elsewhere
    ]
    for tail, worker in cases:
        (answer,) = probe(head + tail + "\n")
        assert answer["worker"] is worker, tail


def test_a_differentiated_name_is_read_as_a_tensor_until_rebound_to_a_host_value():
    rule = registry.by_code()["DEV501"]
    src = (
        "import torch\n"
        "model.to('cuda')\n"
        "for b in loader:\n"
        "    loss = compute(b)\n"
        "    loss.backward()\n"
        "    print(loss)\n"
    )
    lines = [d.start.row for d in lint_source(src, "t.py", [rule]).diagnostics]
    assert lines == [6]
    # The `.item()` is the read; the print that follows prints a float.
    rebound = src.replace("    print(loss)\n", "    loss = loss.item()\n    print(loss)\n")
    assert [d.start.row for d in lint_source(rebound, "t.py", [rule]).diagnostics] == [6]


def test_pinning_is_not_flagged_in_code_that_cannot_run_without_a_gpu():
    rule = registry.by_code()["DEV403"]
    src = (
        "import torch\nfrom torch.utils.data import DataLoader\n"
        "loader = DataLoader(ds, batch_size=8, pin_memory=True)\n"
        "model = Net().cuda()\n"
    )
    assert [d.code for d in lint_source(src, "t.py", [rule]).diagnostics] == []
    guarded = src.replace("model = Net().cuda()\n", "if torch.cuda.is_available():\n    model = Net().cuda()\n")
    assert [d.start.row for d in lint_source(guarded, "t.py", [rule]).diagnostics] == [3]


DATASET_FILE = """\
import torch
from torch.utils.data import Dataset
from tqdm import tqdm


class Scans(Dataset):
    def __init__(self, n):
        self.points = torch.randn(n, 3)

    def __getitem__(self, i):
        return self.points[i].cuda()

    def __len__(self):
        return len(self.points)


{usage}
"""


@pytest.mark.parametrize(
    "usage, flagged",
    [
        ("", True),  # loaded elsewhere, with workers as likely as not
        ("dataset = Scans(8)\nfor i, sample in enumerate(tqdm(dataset)):\n    print(sample)", False),
        ("for sample in Scans(8):\n    print(sample)", False),
        ("loader = torch.utils.data.DataLoader(Scans(8), num_workers=2)\nfor s in Scans(8):\n    pass", True),
    ],
)
def test_a_dataset_the_file_loops_over_itself_with_no_dataloader_reads_in_this_process(usage, flagged):
    rules = [registry.by_code()["DEV402"]]
    found = [d.code for d in lint_source(DATASET_FILE.format(usage=usage), "t.py", rules).diagnostics]
    assert found == (["DEV402"] if flagged else [])
