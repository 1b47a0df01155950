"""The semantic facts placement rules share: where values live (residence),
class and method context (classes), statement order (events), optimizers."""

from __future__ import annotations

from textwrap import dedent

import libcst as cst

from devlint.engine import lint_source
from devlint.rules.dev302_tensor_attribute_not_buffer import TensorAttributeNotBuffer
from devlint.rules.dev303_submodules_in_plain_list import SubmodulesInPlainList
from devlint.rules.dev304_factory_without_device import FactoryWithoutDevice
from devlint.rules.dev305_numpy_on_device_tensor import NumpyOnDeviceTensor
from devlint.rules.dev306_optimizer_before_move import OptimizerBeforeMove
from devlint.rules.dev307_dataparallel_module_not_on_device import DataparallelModuleNotOnDevice
from devlint.rules.dev308_generator_device_mismatch import GeneratorDeviceMismatch
from devlint.rules.dev309_nonblocking_copy_read_before_sync import NonblockingCopyReadBeforeSync
from devlint.semantics import Context, Kind, classes, residence


class _Probe(cst.CSTVisitor):
    """Walks like the engine; at `probe(<expr>)` calls records what the context says."""

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self.ctx = ctx
        self.seen: dict[str, object] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.ctx.enter(node)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "probe":
            expr = node.args[0].value
            key = cst.Module([]).code_for_node(expr)
            self.seen[key] = (
                self.ctx.value_of(expr),
                residence.may_be_accelerator(residence.data_device(self.ctx, expr)),
                classes.in_forward(self.ctx) is not None,
            )
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.ctx.leave(original_node)


def probe(src: str) -> tuple[Context, dict]:
    ctx = Context(src)
    visitor = _Probe(ctx)
    cst.parse_module(src).visit(visitor)
    return ctx, visitor.seen


def found(src: str, rule) -> list[int]:
    return [d.start.row for d in lint_source(src, "t.py", [rule]).diagnostics]


HEADER = "import torch\nimport torch.nn as nn\n"


# -- residence -----------------------------------------------------------------


def test_factory_without_device_lives_on_the_host_by_default():
    _, seen = probe(HEADER + "x = torch.zeros(3)\nprobe(x)\ny = torch.tensor(t)\nprobe(y)\n")
    value, accel, _ = seen["x"]
    assert value.kind is Kind.TENSOR and residence.is_host_default(value.device) and not accel
    assert seen["y"][0].device is None  # torch.tensor(t) keeps t's device: unknown


def test_module_moved_in_place_puts_its_output_on_the_device():
    _, seen = probe(HEADER + "m = nn.Linear(2, 2)\nm.to(device)\nout = m(x)\nprobe(out)\nprobe(out.logits[0])\n")
    assert seen["out"][0].kind is Kind.MODULE_OUTPUT and seen["out"][1]
    assert seen["out.logits[0]"][1]


def test_to_of_something_that_may_be_a_dtype_is_no_placement():
    _, seen = probe(HEADER + "def f(dtype):\n    x = torch.ones(2).to(dtype)\n    probe(x)\n    y = torch.ones(2).to(args.device)\n    probe(y)\n")
    assert not seen["x"][1]
    assert seen["y"][1]


def test_device_of_an_unknown_tensor_is_not_an_accelerator():
    ctx, _ = probe(HEADER)
    assert not residence.target_may_be_accelerator(ctx, cst.parse_expression("input_ids.device"))
    assert residence.target_may_be_accelerator(ctx, cst.parse_expression("self.device"))
    assert residence.target_may_be_accelerator(ctx, cst.parse_expression('f"cuda:{rank}"'))
    assert not residence.target_may_be_accelerator(ctx, cst.parse_expression("torch.float16"))


def test_host_factory_needs_one_dimension_or_more():
    ctx, _ = probe(HEADER)
    yes = ["torch.arange(n)", "torch.zeros(3, 4)", "torch.tensor([1, 2])", "torch.ones(size=(2,))"]
    no = ["torch.tensor(0.5)", "torch.zeros(())", "torch.zeros(3, device=d)", "torch.tensor(t)", "torch.zeros_like(x)"]
    for text in yes:
        assert residence.host_factory(ctx, cst.parse_expression(text)), text
    for text in no:
        assert not residence.host_factory(ctx, cst.parse_expression(text)), text


def test_generator_device():
    _, seen = probe(HEADER + "g = torch.Generator(device='cuda').manual_seed(0)\nprobe(g)\nh = torch.Generator()\nprobe(h)\n")
    assert seen["g"][0].kind is Kind.GENERATOR and residence.may_be_accelerator(seen["g"][0].device)
    assert not residence.may_be_accelerator(seen["h"][0].device)


# -- classes and methods ---------------------------------------------------------


def test_forward_reaches_the_helpers_it_calls():
    src = HEADER + dedent("""
    class Net(nn.Module):
        def forward(self, x):
            return self._helper(x)

        def _helper(self, x):
            probe(x)
            return self._inner(x)

        def _inner(self, x):
            return x

        def unrelated(self, x):
            probe(x + 1)
    """)
    ctx, seen = probe(src)
    assert seen["x"][2] and not seen["x + 1"][2]
    info = ctx.classes["Net"]
    assert classes.forward_methods(info) == {"forward", "_helper", "_inner"}


def test_third_party_module_bases_make_a_module():
    ctx, _ = probe("import torch\nfrom transformers import PreTrainedModel\nclass M(PreTrainedModel):\n    pass\nclass N(M):\n    pass\n")
    assert ctx.classes["M"].is_module and ctx.classes["N"].is_module


def test_attribute_facts():
    src = HEADER + dedent("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.zeros(3)
            self.register_buffer("b", torch.zeros(3))
            self.c = torch.zeros(3)
            self.layers = []
            self.layers = nn.ModuleList(self.layers)

        def forward(self, x):
            return x + self.a + self.c[:2].unsqueeze(0).to(x.device)
    """)
    ctx, _ = probe(src)
    facts = classes.attributes(ctx.classes["Net"])
    assert facts.get("a").read_in == {"forward"} and not facts.get("a").moved
    assert facts.get("b").registered
    assert facts.get("c").moved
    assert facts.get("layers").passed and len(facts.get("layers").assigned_in) == 2


def test_stateful_modules():
    src = HEADER + dedent("""
    class Act(nn.Module):
        def forward(self, x):
            return x.relu()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)
    """)
    ctx, _ = probe(src)
    assert classes.constructs_stateful_module(ctx, cst.parse_expression("nn.Linear(2, 2)"))
    assert classes.constructs_stateful_module(ctx, cst.parse_expression("Block()"))
    assert not classes.constructs_stateful_module(ctx, cst.parse_expression("Act()"))
    assert not classes.constructs_stateful_module(ctx, cst.parse_expression("nn.ReLU()"))
    assert classes.constructs_stateful_module(ctx, cst.parse_expression("nn.CrossEntropyLoss(weight=w)"))


# -- statement order --------------------------------------------------------------


def test_event_log_orders_optimizers_and_moves():
    src = HEADER + dedent("""
    def train(device):
        model = nn.Linear(2, 2)
        params = list(model.parameters())
        opt = torch.optim.SGD(params, lr=0.1)
        model.to(device)
        other = nn.Linear(2, 2).to(device)
    """)
    ctx, _ = probe(src)
    scopes = [k for k in ctx.events._scopes]  # noqa: SLF001 - inspecting the log
    assert len(scopes) == 1
    log = ctx.events._scopes[scopes[0]]  # noqa: SLF001
    assert [o.owners for o in log.optimizers] == [("model",)]
    assert [m.owner for m in log.moves] == ["model"] and log.moves[0].may_accelerate


# -- rules over patterns the fixtures cannot run ------------------------------------


def test_dev304_follows_a_local_name_to_where_it_meets_the_model():
    src = HEADER + dedent("""
    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Embedding(8, 4)

        def forward(self, x):
            positions = torch.arange(x.shape[1])
            positions = positions.unsqueeze(0)
            return x + self.pos(positions)

        def moved(self, x):
            return x
    """)
    assert found(src, FactoryWithoutDevice) == [10]


def test_dev304_silent_when_the_local_name_is_moved_first():
    src = HEADER + dedent("""
    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Embedding(8, 4)

        def forward(self, x):
            positions = torch.arange(x.shape[1])
            positions = positions.to(x.device)
            return x + self.pos(positions)
    """)
    assert found(src, FactoryWithoutDevice) == []


def test_dev307_distributed_with_device_ids():
    src = HEADER + dedent("""
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = nn.Linear(2, 2)
    ddp = DDP(model, device_ids=[rank])
    cpu = DDP(nn.Linear(2, 2))
    """)
    assert found(src, DataparallelModuleNotOnDevice) == [6]


def test_dev307_silent_when_the_wrapper_is_moved_later():
    src = HEADER + "model = nn.Linear(2, 2)\nmodel = nn.DataParallel(model)\nmodel.cuda()\n"
    assert found(src, DataparallelModuleNotOnDevice) == []


def test_dev309_cpu_with_non_blocking_read_at_once():
    src = HEADER + "def f(t):\n    return t.cpu(non_blocking=True).tolist()\n"
    assert found(src, NonblockingCopyReadBeforeSync) == [4]


def test_dev309_silent_after_synchronize():
    src = HEADER + "def f(t):\n    h = t.to('cpu', non_blocking=True)\n    torch.cuda.current_stream().synchronize()\n    return h.tolist()\n"
    assert found(src, NonblockingCopyReadBeforeSync) == []


def test_dev303_filled_by_a_helper_method():
    src = HEADER + dedent("""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = []
            self._build()

        def _build(self):
            for _ in range(2):
                self.blocks.append(nn.Linear(2, 2))
    """)
    assert found(src, SubmodulesInPlainList) == [7]


def test_dev302_through_a_local_name_and_silent_for_non_modules():
    src = HEADER + dedent("""
    class Net(nn.Module):
        def __init__(self, dim):
            super().__init__()
            freqs = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
            self.freqs = freqs

        def forward(self, x):
            return x * self.freqs

    class Cache:
        def __init__(self):
            self.freqs = torch.arange(4)

        def get(self):
            return self.freqs
    """)
    assert found(src, TensorAttributeNotBuffer) == [8]


def test_dev305_numpy_of_a_moved_module_output_attribute():
    src = HEADER + "model = nn.Linear(2, 2).cuda()\nout = model(x)\nprint(out.logits.numpy())\nprint(out.detach().cpu().numpy())\n"
    assert found(src, NumpyOnDeviceTensor) == [5]


def test_dev306_optimizer_from_a_named_parameter_list():
    src = HEADER + "def f(device):\n    m = nn.Linear(2, 2)\n    groups = [{'params': m.parameters()}]\n    opt = torch.optim.Adagrad(groups)\n    m.to(device)\n"
    assert found(src, OptimizerBeforeMove) == [6]


def test_dev308_set_default_device_then_random_split():
    src = HEADER + "from torch.utils.data import random_split\ntorch.set_default_device('cuda')\na, b = random_split(ds, [1, 1])\n"
    assert found(src, GeneratorDeviceMismatch) == [5]


def test_pairwise_tuple_assignment_and_module_output_methods():
    src = HEADER + dedent("""
    model = nn.Linear(4, 2).to(device)
    data, target = torch.ones(2, 4).to(device), torch.ones(2).to("cpu")
    probe(data)
    probe(target)
    output = model(data)
    pred = output.argmax(dim=1)
    probe(pred)
    """)
    _, seen = probe(src)
    assert seen["data"][1] and not seen["target"][1]
    assert seen["pred"][0].kind is Kind.TENSOR and seen["pred"][1]


def test_dev304_hidden_state_handed_to_a_torch_layer():
    src = HEADER + dedent("""
    class RNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(4, 8, 2, batch_first=True)

        def forward(self, x):
            h0 = torch.zeros(2, x.size(0), 8)
            out, _ = self.lstm(x, (h0, torch.zeros(2, x.size(0), 8)))
            return out
    """)
    assert found(src, FactoryWithoutDevice) == [10, 11]


def test_dev302_list_parameters_and_legacy_constructors():
    src = HEADER + dedent("""
    class Head(nn.Module):
        def __init__(self, anchors, mean, temperature):
            super().__init__()
            self.anchors = torch.tensor(anchors).view(-1, 2)
            self.mean = torch.FloatTensor(mean)
            self.temperature = torch.tensor(temperature)

        def forward(self, x):
            return (x - self.mean) @ self.anchors / self.temperature
    """)
    assert found(src, TensorAttributeNotBuffer) == [7, 8]
