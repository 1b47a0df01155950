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
