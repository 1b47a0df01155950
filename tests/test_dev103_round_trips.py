"""DEV103's round trips: a checkpoint this code itself wrote is no checkpoint
from a GPU machine — read back by the function that saved it (directly or
through a helper it handed the model to), or by a file that never touches an
accelerator."""

from __future__ import annotations

from devlint import registry
from devlint.engine import lint_source

DEV103 = [registry.by_code()["DEV103"]]

CPU_ONLY = """\
import torch
import torch.nn as nn

SAVE_DIR = "models/"


def save_model(model, name, save_path=SAVE_DIR):
    torch.save(model.state_dict(), save_path + name + ".pth")


def load_model(name, save_path=SAVE_DIR):
    model = nn.Linear(4, 4)
    model.load_state_dict(torch.load({load}))
    return model
{tail}"""


def rows(src: str) -> list[int]:
    return [d.start.row for d in lint_source(src, "t.py", DEV103).diagnostics]


def test_a_file_that_never_touches_an_accelerator_reads_back_its_own_cpu_saves():
    assert rows(CPU_ONLY.format(load='save_path + name + ".pth"', tail="")) == []


def test_any_accelerator_in_the_file_or_another_path_keeps_the_finding():
    other_path = CPU_ONLY.format(load='"downloads/" + name + ".pth"', tail="")
    moved = CPU_ONLY.format(load='save_path + name + ".pth"', tail="\nnet = nn.Linear(4, 4).to(device)\n")
    named = CPU_ONLY.format(load='save_path + name + ".pth"', tail="\n# trained on a GPU elsewhere\n")
    assert rows(other_path) == rows(moved) == rows(named) == [13]


HELPER = """\
import torch


def fit(model, path, stopper, fetch):
    for val_loss in (0.3, 0.2):
        {call}
    best_model_path = path + "/" + "checkpoint.pth"
    model.load_state_dict(torch.load(best_model_path))
"""


def test_a_helper_handed_the_model_and_the_folder_wrote_the_checkpoint():
    assert rows(HELPER.format(call="stopper(val_loss, model, path)")) == []


def test_a_helper_that_never_saw_the_model_or_a_config_object_did_not():
    assert rows(HELPER.format(call="fetch(val_loss, path)")) == [8]
    config = HELPER.replace("path +", "args.path +").format(call="stopper(val_loss, args.model, args)")
    assert rows(config) == [8]
