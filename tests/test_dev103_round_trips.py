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


def test_a_device_the_caller_hands_in_may_be_a_gpu():
    # `device` goes to a base class that places the networks: the file's own
    # checkpoints may hold CUDA tensors, so reading them back needs a map location.
    handed_on = CPU_ONLY.format(load='save_path + name + ".pth"', tail="\n\ndef build(width, device):\n    return Base(width, device)\n")
    assert rows(handed_on) == [13]
    # Only shown, never handed on: the file still runs on the CPU alone.
    shown = CPU_ONLY.format(load='save_path + name + ".pth"', tail='\n\ndef report(secs, device=None):\n    print(f"{secs:.1f} s on {device}")\n')
    assert rows(shown) == []


STOPPER = """\
import os
import torch


def fit(model, args, scores):
    stopper = EarlyStopping(patience=3, {built})
    for epoch, score in enumerate(scores):
        if stopper.step(score, epoch, model):
            break
    model.load_state_dict(torch.load(os.path.join(args.out, "best.pt")))
"""


def test_an_object_built_with_the_path_and_handed_the_model_wrote_the_checkpoint():
    assert rows(STOPPER.format(built='save_path=os.path.join(args.out, "best.pt")')) == []
    assert rows(STOPPER.format(built="delta=0.01")) == [10]
    rebuilt = STOPPER.replace("    for epoch", "    stopper = EarlyStopping(patience=3)\n    for epoch")
    assert rows(rebuilt.format(built='save_path=os.path.join(args.out, "best.pt")')) == [11]


def test_a_path_built_inline_and_handed_with_the_model_is_the_same_path():
    call = 'stopper(val_loss, model, os.path.join(path, "ckpt"))'
    assert rows("import os\n" + HELPER.format(call=call)) == []
