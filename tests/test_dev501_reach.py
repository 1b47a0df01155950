"""How far DEV501 sees a training loop's device use and its steps: the methods
of the loop's class, and step functions the loop calls."""

from __future__ import annotations

from devlint import registry
from devlint.engine import lint_source

DEV501 = [registry.by_code()["DEV501"]]

SOLVER = """\
import torch


class Solver:
    def __init__(self, model):
        self.model = model
        if torch.cuda.is_available():
            self.model.cuda()

    def fit(self, batches):
        opt = torch.optim.Adam(self.model.parameters())
        for x in batches:
            loss = self.model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"loss {loss}")
"""


def rows(src: str) -> list[int]:
    return [d.start.row for d in lint_source(src, "t.py", DEV501).diagnostics]


def test_a_model_placed_in_init_makes_the_loop_of_another_method_wait():
    assert rows(SOLVER) == [17]


def test_a_class_that_places_nothing_trains_on_the_cpu():
    src = SOLVER.replace("self.model.cuda()", "print('gpu')")
    assert rows(src) == []


STEP = """\
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def update(model, opt, x):
    loss = model(x.to(device)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def main(model, opt, batches):
{body}
"""


def test_a_step_function_called_on_every_step_reads_on_every_step():
    body = "    for x in batches:\n        update(model, opt, x)"
    assert rows(STEP.format(body=body)) == [11]


def test_a_step_function_called_once_or_now_and_then_does_not():
    once = "    update(model, opt, batches[0])"
    sometimes = "    for i, x in enumerate(batches):\n        if i % 10 == 0:\n            update(model, opt, x)"
    assert rows(STEP.format(body=once)) == []
    assert rows(STEP.format(body=sometimes)) == []


def test_a_device_kept_in_a_settings_dict_or_named_as_an_id_is_the_runs_device():
    loop = """\
import torch


def train(model, opt, loader, cfg, device_id):
    for x, y in loader:
        loss = (model(x.to({target})) - y.to({target})).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(loss.item())
"""
    assert rows(loop.format(target='cfg["device"]')) == [10]
    assert rows(loop.format(target="device_id")) == [10]
    assert rows(loop.format(target='cfg["name"]')) == []


# -- reads one call away: a helper of this file that reads its argument ---------

HELPER_LOOP = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


{helper}


class Trainer:
    def __init__(self, model: torch.nn.Module):
        self.model = model.to(device)

    def metric(self, logits, target):
        scores = torch.softmax(logits, -1)
        picked = scores.argmax(-1)
        return float((picked == target).sum())

    def fit(self, batches, opt):
        for x, y in batches:
            out = self.model(x.to(device))
            loss = torch.nn.functional.cross_entropy(out, y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            {call}
"""


def helper_rows(helper: str, call: str) -> list[int]:
    """The findings' rows, 0 for the row of the call in the loop."""
    src = HELPER_LOOP.format(helper=helper, call=call)
    call_row = src.splitlines().index("            " + call.splitlines()[0]) + 1
    return [row - call_row for row in rows(src)]


def test_a_helper_that_reads_its_argument_reads_on_every_step():
    helper = "def mean_loss(value, scale=1):\n    kept = value.detach()\n    return kept.mean().item() * scale"
    assert helper_rows(helper, "mean_loss(loss)") == [0]
    assert helper_rows(helper, "mean_loss(scale=2, value=out)") == [0]
    # A method, through a local name and a torch function.
    assert helper_rows(helper, "self.metric(out, y)") == [0]


def test_a_torch_module_the_helper_builds_computes_from_its_inputs():
    made_here = (
        "def seg_loss(pred, target):\n"
        "    criterion = torch.nn.CrossEntropyLoss()\n"
        "    loss = criterion(pred, target)\n"
        "    return loss, {'loss': loss.item()}"
    )
    assert helper_rows(made_here, "seg_loss(out, y)") == [0]
    # Fed host copies, the copies are the reads, not the `.item()` of what they give.
    host = HELPER_LOOP.format(
        helper=made_here.replace("criterion(pred, target)", "criterion(pred.cpu(), target.cpu())"), call="seg_loss(out, y)"
    )
    (found,) = lint_source(host, "t.py", DEV501).diagnostics
    assert "`.cpu()` in `seg_loss()`" in found.message
    # A name that may be something else than the module is not followed.
    rebound = made_here.replace("    loss = criterion", "    if target is None:\n        criterion = make_loss()\n    loss = criterion")
    assert helper_rows(rebound, "seg_loss(out, y)") == []


def test_a_method_reached_through_an_instance_of_a_class_of_the_file_reads_too():
    buffer = (
        "class Replay:\n"
        "    def add(self, x, y):\n"
        "        self.items = list(zip(x.cpu(), y))\n\n"
        "    @staticmethod\n"
        "    def score(logits, k):\n"
        "        return logits.softmax(-1).max().item() * k\n\n\n"
        "replay = Replay()"
    )
    assert helper_rows(buffer, "replay.add(out.detach(), y)") == [0]
    # A static method binds no `self`: `logits` is the first argument.
    assert helper_rows(buffer, "replay.score(out, 3)") == [0]
    assert helper_rows(buffer, "replay.score(3, out)") == []
    # Not an instance of a class of this file: nothing is known of its methods.
    assert helper_rows(buffer.replace("replay = Replay()", "replay = make_replay()"), "replay.add(out, y)") == []


def test_a_helper_is_silent_on_what_it_does_not_read_on_every_call():
    cases = [
        # the argument's metadata only
        ("def size(t):\n    return int(t.shape[0])", "size(out)"),
        # under a condition
        ("def log(t, step):\n    if step % 10 == 0:\n        print(t.item())", "log(loss, 3)"),
        # a value already on the host
        ("def record(v):\n    return float(v)", "record(len(y))"),
        # keeps it on the device
        ("def acc(o, t):\n    return (o.argmax(-1) == t).float().mean()", "acc(out, y)"),
        # the read is of something else than the arguments
        ("def stamp(t):\n    return torch.zeros(1).item()", "stamp(out)"),
    ]
    for helper, call in cases:
        assert helper_rows(helper, call) == [], (helper, call)


def test_a_helper_called_now_and_then_or_in_a_loop_on_the_cpu_is_silent():
    helper = "def mean_loss(value):\n    return value.item()"
    assert helper_rows(helper, "if len(y) > 3:\n                mean_loss(loss)") == []
    cpu_only = HELPER_LOOP.replace(".to(device)", "").format(helper=helper, call="mean_loss(loss)")
    assert rows(cpu_only) == []


def test_a_script_loop_before_anything_is_placed_trains_on_the_cpu():
    src = (
        "import torch\n"
        "model = torch.nn.Linear(8, 1)\n"
        "opt = torch.optim.Adam(model.parameters())\n"
        "for epoch in range(10):\n"
        "    loss = model(torch.randn(4, 8)).pow(2).mean()\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(f'loss {loss}')\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model.to(device)\n"
    )
    assert rows(src) == []
    # The same loop after the move waits for the GPU.
    lines = src.splitlines(keepends=True)
    moved = "".join(lines[:3] + lines[9:] + lines[3:9])
    assert rows(moved) == [11]


def test_backward_with_its_own_arguments_still_marks_the_loss():
    loop = (
        "import torch\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    err = model(x).sum()\n"
        "    {backward}\n"
        "    opt.step()\n"
        "    print('err %f' % err.data[0])\n"
    )
    for backward in ("err.backward()", "err.backward(retain_graph=True)", "err.backward(mone)"):
        assert rows(loop.format(backward=backward)) == [8], backward
    # A wrapper's backward takes the loss: the wrapper is no tensor, and a
    # value only known as what it was handed is not read as one.
    wrapped = loop.replace("err = model(x).sum()", "err = compute(x)").replace("err.data[0]", "engine_state")
    assert rows(wrapped.format(backward="model_engine.backward(loss)")) == []


LOOP = """\
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
{helpers}

def train(model, opt, batches, mode, every):
    for i, (x, y) in enumerate(batches):
        x, y = x.to(device), y.to(device)
        out = model(x)
{body}
"""


def loop(body: str, helpers: str = "") -> str:
    return LOOP.format(helpers=helpers, body="\n".join("        " + line for line in body.splitlines()))


STEP_LINES = "loss = (out - y).pow(2).mean()\nopt.zero_grad()\nloss.backward()\nopt.step()\n"


def test_a_branch_that_back_propagates_runs_on_every_step_it_trains():
    body = 'if mode == "mse":\n' + "".join("    " + line + "\n" for line in (STEP_LINES + "print(loss.item())").splitlines())
    assert rows(loop(body)) == [15]


def test_a_cadence_around_the_backward_still_makes_the_read_periodic():
    for test in ("i % every == 0", "log_now"):
        body = f"if {test}:\n" + "".join("    " + line + "\n" for line in (STEP_LINES + "print(loss.item())").splitlines())
        assert rows(loop(body)) == [], test


def test_a_helper_reading_each_tensor_of_a_list_reads_the_list_given_to_it():
    helpers = "\n\ndef peak(tensors):\n    vals = []\n    for t in tensors:\n        vals.append(t.max().item())\n    return vals\n"
    assert rows(loop(STEP_LINES + "peak([out, loss])", helpers)) == [21]
    # A list of host numbers, or a loader, is no device data.
    assert rows(loop(STEP_LINES + "peak([1.0, 2.0])\npeak(batches)", helpers)) == []


def test_a_read_two_helpers_deep_is_reported_at_the_call_in_the_loop():
    helpers = (
        "\n\ndef acc(p, t):\n    return (p.argmax(1) == t).float().mean().item()\n"
        "\n\ndef evaluate(batch, net):\n    inputs, targets = batch\n    return acc(net(inputs), targets)\n"
    )
    found = lint_source(loop(STEP_LINES + "evaluate((x, y), model)", helpers), "t.py", DEV501).diagnostics
    assert [(d.start.row, "`acc()` via `evaluate()`" in d.message) for d in found] == [(23, True)]


def test_what_an_unknown_model_computes_from_device_data_is_on_the_device():
    assert rows(loop(STEP_LINES + "preds = out.detach().cpu()")) == [14]
    assert rows(loop(STEP_LINES + "arr = model(x).cpu().numpy()")) == [14]  # the `.cpu()`, not the `.numpy()`
    # Once read to the host, it is no longer device data.
    assert rows(loop(STEP_LINES + "host = out.detach().cpu()\narr = host.numpy()")) == [14]
    # From host data only: the loop's tensors that reach the model are on the CPU.
    cpu_loop = loop(STEP_LINES + "arr = model(y.cpu()).cpu()").replace("x, y = x.to(device), y.to(device)", "pass")
    assert rows(cpu_loop) == []


def test_a_move_to_the_cpu_is_a_read_like_cpu():
    assert rows(loop(STEP_LINES + 'kept = loss.detach().to("cpu")')) == [14]
    assert rows(loop(STEP_LINES + 'kept = out.to(torch.device("cpu")).mean().item()')) == [14]  # the copy, once
    assert rows(loop(STEP_LINES + 'kept = out.to(torch.float16)')) == []  # a cast stays on the device


def test_a_variable_wraps_device_data_where_it_is():
    src = loop(STEP_LINES + "host = model(Variable(x)).cpu()").replace("import torch\n", "import torch\nfrom torch.autograd import Variable\n", 1)
    assert rows(src) == [15]


def test_what_a_torch_function_returns_from_device_data_is_on_the_device():
    # `torch.max(out, 1)` is a function of torch, not a method of a `torch` value.
    assert rows(loop(STEP_LINES + "_, preds = torch.max(out, 1)\nhost = preds.cpu()")) == [15]
    assert rows(loop(STEP_LINES + "idx = torch.argmax(out, 1).cpu()")) == [14]
    assert rows(loop(STEP_LINES + "_, preds = torch.max(out.cpu(), 1)\nhost = preds.cpu()")) == [14]


LEAVING = """\
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
retry_failed, stop_now = True, False
for epoch in range(3):
    for x in [torch.randn(2, 4)]:
        loss = model(x.to(device)).sum()
        loss.backward()
        opt.step()
        for attempt in range(3):
            if retry_failed:
                print(loss.item())
                break
        if stop_now:
            print(loss.item())
            break
"""


def test_a_branch_that_leaves_the_training_loop_runs_once_but_a_break_of_an_inner_loop_does_not_leave_it():
    assert rows(LEAVING) == [14]


def test_a_branch_that_leaves_by_raising_runs_once():
    src = LEAVING.replace("                break\n", "                raise RuntimeError(attempt)\n")
    assert rows(src) == []


DIVERGENCE = """\
import math
import torch

model = torch.nn.Linear(4, 1).to("cuda" if torch.cuda.is_available() else "cpu")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in torch.randn(10, 8, 4):
    loss = model(x.to(next(model.parameters()).device)).sum()
    loss.backward()
    opt.step()
    value = loss.item()
    {use}
"""


def test_a_value_read_for_a_test_that_leaves_the_loop_is_read_on_purpose():
    assert rows(DIVERGENCE.format(use="if math.isnan(value):\n        raise RuntimeError('diverged')")) == []
    assert rows(DIVERGENCE.format(use="if value > 1e8:\n        break")) == []


def test_a_value_read_for_anything_else_is_a_sync_per_step():
    assert rows(DIVERGENCE.format(use="if value > 1e8:\n        print('big')")) == [10]
    assert rows(DIVERGENCE.format(use="history = value")) == [10]
