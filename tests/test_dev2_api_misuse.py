"""The semantic facts DEV202-DEV208 rest on: which assignment of a name is in
effect (semantics.bindings), which device strings torch rejects, which values
are certainly torch.device objects, which modules have no `.device`
(semantics.devices) — and the rules' behaviour beyond their fixtures."""

from __future__ import annotations

import pytest

from devlint import registry
from devlint.engine import lint_source
from devlint.fixes import fix_source
from devlint.semantics.devices import device_string_error

ALL = registry.all_rules()


def codes(src: str, select: str = "DEV2") -> list[tuple[int, str]]:
    return [(d.start.row, d.code) for d in lint_source(src, "t.py", ALL).diagnostics if d.code.startswith(select)]


# -- device strings ------------------------------------------------------------
# What torch 2.13 really does with each (checked with torch.device(text)).
@pytest.mark.parametrize(
    "text", ["gpu", "GPU", "CUDA", "Cuda", "cuda0", "cpu0", "cuda:-1", "cuda:", "cuda: 0", " cuda", "cuda ",
             "cuda:00", "cuda:01", "cuda:0:1", "cuda:1.0", "cuda_0", ""]
)
def test_strings_torch_rejects(text):
    assert device_string_error(text) is not None


@pytest.mark.parametrize("text", ["cpu", "cuda", "cuda:0", "cuda:12", "mps", "xpu:1", "meta", "cpu:0", "xla:0", "hpu",
                                  "privateuseone"])
def test_strings_torch_accepts(text):
    assert device_string_error(text) is None


def test_unknown_lowercase_types_may_be_registered_backends():
    # `torch.utils.rename_privateuse1_backend("npu")` makes "npu" valid at run time.
    assert device_string_error("npu") is None
    assert device_string_error("npu:0") is None
    assert device_string_error("tpu:0") is None  # transformers: torch.device("tpu:0")


# -- DEV203: only device positions ------------------------------------------------
def test_invalid_string_only_where_torch_parses_a_device():
    src = (
        "import torch\n"
        "label = 'gpu'\n"
        "cfg = dict(device='gpu')\n"
        "obj.to('gpu')\n"
        "x = torch.zeros(2)\n"
        "x = x.to('gpu')\n"
        "y = torch.ones(2, device='GPU')\n"
        "d = torch.device('cuda' if flag else 'gpu')\n"
    )
    assert codes(src) == [(6, "DEV203"), (7, "DEV203"), (8, "DEV203")]


# -- which binding is in effect ------------------------------------------------
def test_binding_in_one_branch_is_not_certain():
    src = (
        "import torch\n"
        "def f(flag):\n"
        "    if flag:\n"
        "        dev = 'cpu'\n"
        "    else:\n"
        "        dev = torch.device('cpu')\n"
        "    return dev == 'cpu'\n"
    )
    assert codes(src) == []


def test_binding_that_dominates_the_use_is_certain():
    src = (
        "import torch\n"
        "def f(device):\n"
        "    device = torch.device(device)\n"
        "    if device == 'cpu':\n"
        "        return 1\n"
    )
    assert codes(src) == [(4, "DEV206")]


def test_all_branches_agreeing_is_certain():
    src = (
        "import torch\n"
        "def f(flag):\n"
        "    if flag:\n"
        "        dev = torch.device('cuda')\n"
        "    else:\n"
        "        dev = torch.device('cpu')\n"
        "    return dev == 'cpu'\n"
    )
    assert codes(src) == [(7, "DEV206")]


def test_rebinding_later_in_a_loop_is_not_certain():
    src = (
        "import torch\n"
        "def f(items):\n"
        "    dev = torch.device('cpu')\n"
        "    for item in items:\n"
        "        if dev == 'cpu':\n"
        "            pass\n"
        "        dev = item\n"
    )
    assert codes(src) == []


def test_with_and_except_and_walrus_bindings_are_not_read():
    src = (
        "import torch\n"
        "def f(ctx):\n"
        "    dev = torch.device('cpu')\n"
        "    with ctx as dev:\n"
        "        return dev == 'cpu'\n"
    )
    assert codes(src) == []


def test_module_level_name_used_in_a_function_needs_every_binding_to_agree():
    src = (
        "import torch\n"
        "dev = torch.device('cpu')\n"
        "def f():\n"
        "    return dev == 'cpu'\n"
        "dev = 'cpu'\n"
    )
    assert codes(src) == []


# -- known torch.device values ---------------------------------------------------------
def test_annotated_parameter_with_string_default_is_not_a_device():
    src = "import torch\ndef f(device: torch.device = 'cpu'):\n    return device == 'cpu'\n"
    assert codes(src) == []


def test_annotated_parameter_defaulting_to_none_is_a_device():
    src = "import torch\ndef f(device: torch.device = None):\n    return device == 'cpu'\n"
    assert codes(src) == [(3, "DEV206")]


def test_conditional_mixing_device_and_string_is_not_a_device():
    src = "import torch\nd = torch.device('cuda') if flag else 'cpu'\nok = d == 'cpu'\n"
    assert codes(src) == []


def test_self_attribute_is_judged_once_every_method_is_seen():
    src = (
        "import torch\n"
        "class R:\n"
        "    def __init__(self):\n"
        "        self.device = torch.device('cpu')\n"
        "    def on_cpu(self):\n"
        "        return self.device == 'cpu'\n"
        "    def reset(self, d: str):\n"
        "        self.device = d\n"
    )
    assert codes(src) == []


def test_indexed_string_is_fixed_to_a_device_comparison():
    src = "import torch\nx = torch.zeros(1)\nok = x.device != 'cuda:0'\n"
    assert fix_source(src, "t.py", ALL, unsafe=False).fixed_text == "import torch\nx = torch.zeros(1)\nok = x.device != torch.device('cuda:0')\n"


# -- DEV205 -------------------------------------------------------------------------
def test_bare_device_of_a_name_that_is_not_a_tensor_device_is_silent():
    src = "import torch\ndef f(d: torch.device):\n    return d == torch.device('cuda')\n"
    assert codes(src) == []


def test_tensor_device_against_bare_mps_is_flagged():
    src = "import torch\ndef f(t: torch.Tensor):\n    return t.device == torch.device('mps')\n"
    assert codes(src) == [(3, "DEV205")]


# -- DEV202 -------------------------------------------------------------------------
def test_cuda_with_fallback_device_is_flagged_unless_guarded():
    src = (
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.zeros(1).cuda(device)\n"
        "if torch.cuda.is_available():\n"
        "    y = torch.zeros(1).cuda(device)\n"
    )
    assert codes(src) == [(3, "DEV202")]


def test_cuda_with_non_blocking_positional_is_reported_without_fix():
    src = "import torch\nx = torch.zeros(1)\nx = x.cuda('cpu', True)\n"
    assert codes(src) == [(3, "DEV202")]
    assert fix_source(src, "t.py", ALL, unsafe=False).fixed_text is None


def test_torch_cuda_module_is_not_a_cuda_call():
    src = "import torch\nimport torch.cuda\nx = torch.cuda.device('cpu')\n"
    assert codes(src, "DEV202") == []


# -- DEV204 -------------------------------------------------------------------------
def test_is_cuda_called_on_unknown_receiver_is_silent():
    src = "import torch\ndef f(seq):\n    return seq.is_cuda()\n"
    assert codes(src) == []


# -- DEV207 -------------------------------------------------------------------------
def test_legacy_constructor_with_unknown_data_is_reported_without_fix():
    src = "import torch\ndef f(values, device):\n    return torch.Tensor(values, device=device)\n"
    assert codes(src) == [(3, "DEV207")]
    assert fix_source(src, "t.py", ALL, unsafe=True).fixed_text is None


def test_legacy_constructor_when_default_tensor_type_may_be_cuda_is_silent():
    src = (
        "import torch\n"
        "torch.set_default_tensor_type(torch.cuda.FloatTensor)\n"
        "def f(device):\n"
        "    return torch.Tensor([1.0], device=device)\n"
    )
    assert codes(src, "DEV207") == []


# -- DEV208 -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "base",
    ["PreTrainedModel", "LightningModule", "ModelMixin"],
)
def test_module_with_a_foreign_base_may_have_device(base):
    src = (
        "import torch\nfrom torch import nn\nfrom lib import " + base + "\n"
        "class M(" + base + "):\n"
        "    def f(self):\n"
        "        return self.device\n"
        "m = M()\nprint(m.device)\n"
    )
    assert codes(src) == []


def test_distributed_data_parallel_has_device():
    src = (
        "import torch\nfrom torch import nn\n"
        "ddp = nn.parallel.DistributedDataParallel(nn.Linear(2, 2))\nprint(ddp.device)\n"
    )
    assert codes(src) == []


def test_class_with_getattr_is_not_judged():
    src = (
        "import torch\nfrom torch import nn\n"
        "class M(nn.Module):\n"
        "    def __getattr__(self, name):\n"
        "        return super().__getattr__(name)\n"
        "    def f(self):\n"
        "        return self.device\n"
    )
    assert codes(src) == []


def test_module_device_assignment_is_not_a_read():
    src = "import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\nm.device = torch.device('cpu')\n"
    assert codes(src) == []



# -- devices of other libraries' objects -----------------------------------------------
HF = (
    "import torch\n"
    "from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel\n"
    "from accelerate import Accelerator\n"
    "from diffusers import StableDiffusionPipeline\n"
)


def test_pretrained_model_device_is_a_parameter_device():
    src = HF + (
        "model = AutoModelForCausalLM.from_pretrained('gpt2').to('cpu').eval()\n"
        "a = model.device == 'cuda'\n"
        "b = model.device == torch.device('cuda')\n"
        "pipe = StableDiffusionPipeline.from_pretrained('x')\n"
        "dev = pipe.device\n"
        "c = dev != 'cpu'\n"
    )
    assert codes(src) == [(6, "DEV206"), (7, "DEV205"), (10, "DEV206")]


def test_tokenizer_and_unknown_objects_have_no_known_device():
    src = HF + (
        "tok = AutoTokenizer.from_pretrained('gpt2')\n"
        "a = tok.device == 'cuda'\n"
        "from somewhere import load\n"
        "m = load('x')\n"
        "b = m.device == 'cuda'\n"
    )
    assert codes(src) == []


def test_accelerator_device_may_lack_an_index():
    src = HF + "acc = Accelerator()\na = acc.device == 'cpu'\nb = acc.device == torch.device('mps')\n"
    assert codes(src) == [(6, "DEV206")]


def test_self_device_of_a_pretrained_model_subclass():
    src = HF + (
        "from mixins import Unknown\n"
        "class My(PreTrainedModel):\n"
        "    def f(self):\n"
        "        return self.device == 'cpu'\n"
        "class Child(My):\n"
        "    def g(self):\n"
        "        return self.device == torch.device('cuda')\n"
        "class Mixed(Unknown, PreTrainedModel):\n"
        "    def f(self):\n"
        "        return self.device == 'cpu'\n"
        "class Own(PreTrainedModel):\n"
        "    @property\n"
        "    def device(self):\n"
        "        return 'cpu'\n"
        "    def f(self):\n"
        "        return self.device == 'cpu'\n"
    )
    assert codes(src) == [(8, "DEV206"), (11, "DEV205")]
