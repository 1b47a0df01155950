"""DEV102-DEV108 and the semantic facts they added: guard kinds (a check of
the GPU count), truthiness of an expression, and the shapes the fixtures
cannot run on this machine (torch.jit.load, `from torch import has_cuda`)."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint import registry
from devlint.engine import lint_source
from devlint.fixes import fix_source
from devlint.semantics.truthiness import TESTED, AssignedTo, truth_use

ALL = registry.all_rules()


def codes(src: str, select: str = "DEV1") -> list[tuple[int, str]]:
    rules = [r for r in ALL if r.code.startswith(select)]
    return [(d.start.row, d.code) for d in lint_source(src, "t.py", rules).diagnostics]


def fixed(src: str) -> str:
    result = fix_source(src, "t.py", ALL, unsafe=True)
    return result.fixed_text or src


# -- truthiness ---------------------------------------------------------------


class _Finder(cst.CSTVisitor):
    """The ancestor chain of the first `probe` name (as the walk's stack is)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[cst.CSTNode] = []
        self.chain: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if not self.chain and isinstance(node, cst.Name) and node.value == "probe":
            self.chain = list(self.stack)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


def use_of_probe(src: str):
    finder = _Finder()
    cst.parse_module(src).visit(finder)
    return truth_use(finder.chain)


@pytest.mark.parametrize(
    "src",
    [
        "if probe:\n    pass\n",
        "while probe:\n    break\n",
        "assert probe\n",
        "x = 1 if probe else 2\n",
        "x = not probe\n",
        "x = probe and y\n",
        "if y or (z and probe):\n    pass\n",
        "xs = [a for a in b if probe]\n",
        "flag = bool(probe)\n",
    ],
)
def test_truth_is_tested(src):
    assert use_of_probe(src) == TESTED


@pytest.mark.parametrize(
    "src",
    [
        "cache(probe)\n",
        "xs = list(filter(probe, ys))\n",
        "f(callback=probe)\n",
        "x = probe if c else other\n",
        "def f():\n    return probe\n",
        "x = probe.__name__\n",
    ],
)
def test_truth_is_not_tested(src):
    assert use_of_probe(src) is None


def test_assignment_is_followed_to_the_name():
    use = use_of_probe("flag = y and probe\n")
    assert isinstance(use, AssignedTo) and use.name == "flag"
    assert use_of_probe("a, b = probe, 1\n") is None


# -- guard kinds: the GPU count --------------------------------------------------


@pytest.mark.parametrize(
    "guard",
    [
        "if torch.cuda.device_count() > 1:\n    {line}\n",
        "n = torch.cuda.device_count()\nif n >= 2:\n    {line}\n",
        "if args.n_gpu > 1:\n    {line}\n",
        "def f():\n    if torch.cuda.device_count() < 2:\n        return\n    {line}\n",
        "@pytest.mark.skipif(torch.cuda.device_count() < 2, reason='2 GPUs')\ndef test_f():\n    {line}\n",
        "@require_torch_multi_gpu\ndef test_f():\n    {line}\n",
        "def test_multi_gpu():\n    {line}\n",
    ],
)
def test_a_check_of_the_gpu_count_guards_an_ordinal(guard):
    src = "import torch, pytest\n" + guard.format(line="torch.cuda.set_device(1)")
    assert codes(src, "DEV104") == []


@pytest.mark.parametrize(
    "guard",
    [
        "if torch.cuda.is_available():\n    {line}\n",
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason='GPU')\ndef test_f():\n    {line}\n",
        "def to_gpu():\n    {line}\n",
    ],
)
def test_availability_is_no_check_of_the_gpu_count(guard):
    src = "import torch, pytest\n" + guard.format(line="torch.cuda.set_device(1)")
    assert [c for _, c in codes(src, "DEV104")] == ["DEV104"]


def test_a_gpu_count_flag_guards_cuda_placement_too():
    src = "import torch\nn_gpu = torch.cuda.device_count()\nif n_gpu > 0:\n    x = torch.ones(1).cuda()\n"
    assert codes(src) == []


def test_comprehension_if_guards_its_element():
    src = "import torch\nxs = [t.cuda() for t in ts if torch.cuda.is_available()]\n"
    assert codes(src) == []


@pytest.mark.parametrize(
    "call",
    ["nn.DataParallel(m, device_ids=[0, 1])", "nn.DataParallel(m, [0, 2])",
     "nn.parallel.DistributedDataParallel(m, device_ids=[1], output_device=1)",
     "torch.ones(1).cuda(device=1)", "torch.ones(1).to(torch.device('cuda:3'))"],
)
def test_ordinal_shapes(call):
    src = f"import torch\nimport torch.nn as nn\nif torch.cuda.is_available():\n    {call}\n"
    assert codes(src, "DEV104") == [(4, "DEV104")]


@pytest.mark.parametrize(
    "call", ["nn.DataParallel(m, device_ids=[0])", "torch.ones(1).cuda(0)", "torch.ones(1).to('cuda:0')",
             "nn.DataParallel(m, device_ids=ids)"],
)
def test_ordinal_zero_or_unknown_is_fine(call):
    src = f"import torch\nimport torch.nn as nn\nif torch.cuda.is_available():\n    {call}\n"
    assert codes(src, "DEV104") == []


# -- DEV103 --------------------------------------------------------------------------


def test_jit_load_without_map_location():
    src = "import torch\nm = torch.jit.load('model.pt')\nok = torch.jit.load('model.pt', map_location='cpu')\n"
    assert codes(src, "DEV103") == [(2, "DEV103")]
    assert "torch.jit.load('model.pt', map_location=\"cpu\")" in fixed(src)


def test_load_through_an_alias_and_from_import():
    src = "import torch as th\nfrom torch import load\na = th.load(p)\nb = load(p)\nc = pickle.load(f)\n"
    assert codes(src, "DEV103") == [(3, "DEV103"), (4, "DEV103")]


def test_map_location_fix_keeps_one_argument_per_line():
    src = "import torch\nstate = torch.load(\n    path,  # the file\n)\n"
    assert fixed(src) == "import torch\nstate = torch.load(\n    path,  # the file\n    map_location=\"cpu\",\n)\n"


# -- DEV105 ------------------------------------------------------------------------


def test_bf16_probe_not_called():
    src = "import torch\ndtype = torch.bfloat16 if torch.cuda.is_bf16_supported else torch.float16\n"
    assert codes(src, "DEV105") == [(2, "DEV105")]
    assert "torch.cuda.is_bf16_supported()" in fixed(src)


def test_a_name_holding_the_probe_is_reported_once_where_tested():
    src = (
        "import torch\nuse_gpu = torch.cuda.is_available\n"
        "if use_gpu:\n    pass\nif not use_gpu:\n    pass\n"
    )
    assert codes(src, "DEV105") == [(3, "DEV105")]
    assert "use_gpu = torch.cuda.is_available()\n" in fixed(src)


def test_a_rebound_name_no_longer_holds_the_probe():
    src = "import torch\nuse_gpu = torch.cuda.is_available\nuse_gpu = use_gpu()\nif use_gpu:\n    pass\n"
    assert codes(src, "DEV105") == []


def test_a_local_is_available_is_not_torchs():
    src = "import torch\ndef is_available():\n    return False\nif is_available:\n    pass\n"
    assert codes(src, "DEV105") == []


# -- DEV107 / DEV108 ------------------------------------------------------------------


def test_amp_from_imports_and_switches():
    src = (
        "import torch\nfrom torch.cuda.amp import GradScaler\nfrom torch import autocast\n"
        "s = GradScaler()\n"
        "with autocast('cuda', enabled=args.amp):\n    pass\n"
        "with autocast('cuda', enabled=False):\n    pass\n"
        "with autocast('cuda'):\n    pass\n"
    )
    assert codes(src, "DEV107") == [(4, "DEV107"), (9, "DEV107")]


def test_amp_message_names_the_spelling_used():
    src = (
        "import torch\nfrom torch.amp import GradScaler\n"
        "with torch.amp.autocast('cuda'):\n    pass\n"
        "with torch.autocast('cuda'):\n    pass\n"
        "s = GradScaler('cuda')\n"
    )
    rules = [r for r in ALL if r.code == "DEV107"]
    messages = [d.message for d in lint_source(src, "t.py", rules).diagnostics]
    assert [m.split("`")[1] for m in messages] == [
        'torch.amp.autocast("cuda")',
        'torch.autocast("cuda")',
        'torch.amp.GradScaler("cuda")',
    ]


def test_deprecated_flag_through_from_import():
    src = "import torch\nfrom torch import has_cuda\nif has_cuda:\n    pass\ntorch.has_cuda = False\n"
    assert codes(src, "DEV108") == [(3, "DEV108")]
    assert "if torch.cuda.is_available():" in fixed(src)


# -- in-memory round trips, version fallbacks, CUDA-only libraries ----------------------


def test_in_memory_round_trip_is_no_foreign_checkpoint():
    src = (
        "import io, torch\n"
        "def send(obj):\n    buffer = io.BytesIO()\n    torch.save(obj, buffer)\n    return buffer.getvalue()\n"
        "def receive(data):\n    return torch.load(io.BytesIO(data))\n"
    )
    assert codes(src, "DEV103") == []


def test_bytes_from_elsewhere_are_still_a_checkpoint():
    src = "import io, requests, torch\nr = requests.get(url)\nx = torch.load(io.BytesIO(r.content))\n"
    assert codes(src, "DEV103") == [(3, "DEV103")]


@pytest.mark.parametrize(
    "src",
    [
        "s = torch.amp.GradScaler(device) if TORCH_GE_2_3 else torch.cuda.amp.GradScaler()\n",
        "if is_torch_version('>=', '2.3'):\n    s = torch.amp.GradScaler(device)\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
        "try:\n    s = torch.amp.GradScaler(device=d)\nexcept (AttributeError, TypeError):\n    s = torch.cuda.amp.GradScaler()\n",
        "if not hasattr(torch, 'amp'):\n    s = torch.cuda.amp.GradScaler()\n",
        "if hasattr(torch.amp, 'GradScaler'):\n    s = torch.amp.GradScaler(d)\nelse:\n    s = torch.cuda.amp.GradScaler()\n",
    ],
)
def test_deprecated_amp_as_a_fallback_for_old_releases(src):
    assert codes("import torch\n" + src, "DEV107") == []


@pytest.mark.parametrize("test", ["use_amp", "hasattr(self, '_feature_cache') and not self.training"])
def test_deprecated_amp_outside_a_fallback(test):
    # `hasattr` of anything but torch asks nothing about the release.
    src = f"import torch\nif {test}:\n    pass\nelse:\n    s = torch.cuda.amp.GradScaler()\n"
    assert codes(src, "DEV107") == [(5, "DEV107")]


def test_code_that_imports_a_cuda_only_library_is_cuda_code():
    src = (
        "import torch\n"
        "class FP8Precision:\n"
        "    def forward_context(self):\n"
        "        ctx = torch.autocast(device_type='cuda')\n"
        "        import transformer_engine.pytorch as te\n"
        "        return ctx, te\n"
        "    def convert(self, module):\n"
        "        return module.cuda()\n"
    )
    assert codes(src) == []
    plain = src.replace("import transformer_engine.pytorch as te", "te = None")
    assert sorted(c for _, c in codes(plain)) == ["DEV101", "DEV107"]


def test_an_optional_import_of_a_cuda_only_library_makes_no_cuda_code():
    src = (
        "import torch\n"
        "class Trainer:\n"
        "    def __init__(self, model, args):\n"
        "        self.args = args\n"
        "        self.model = model.cuda()\n"
        "    def backward(self, loss, opt):\n"
        "        {import_apex}\n"
        "        amp.scale_loss(loss, opt).backward()\n"
    )
    optional = (
        "if self.args.apex:\n            from apex import amp",
        "try:\n            from apex import amp\n        except ImportError:\n            amp = None",
    )
    required = (
        "from apex import amp",
        "try:\n            from apex import amp\n        except ImportError:\n            raise ImportError('install apex')",
    )
    for import_apex in optional:
        assert codes(src.format(import_apex=import_apex), "DEV101") == [(5, "DEV101")], import_apex
    for import_apex in required:
        assert codes(src.format(import_apex=import_apex), "DEV101") == [], import_apex


def test_data_parallel_without_cuda_in_the_text_is_still_linted():
    src = "import torch.nn as nn\nnet = nn.DataParallel(model, [0, 1])\n"
    assert codes(src, "DEV104") == [(2, "DEV104")]


# -- module names a function reads before the text assigns them -----------------

_LATE = """
import sys
import torch

def run(x):
    return x.to(DEVICE)

{main}
"""


def test_a_function_reads_the_device_the_main_block_sets_below_it():
    src = _LATE.format(main='if __name__ == "__main__":\n    DEVICE = "cuda"\n    run(torch.ones(1))')
    assert codes(src) == [(6, "DEV101")]
    src = _LATE.format(main='DEVICE = torch.device("cuda", 0)')
    assert codes(src) == [(6, "DEV101")]


@pytest.mark.parametrize("main", [
    # a check of the accelerator before the assignment
    'if not torch.cuda.is_available():\n    sys.exit("needs a GPU")\nDEVICE = "cuda"',
    'if __name__ == "__main__":\n    assert torch.cuda.is_available()\n    DEVICE = "cuda"',
    # assigned twice, or from something that is no literal device
    'DEVICE = "cuda"\nif not torch.cuda.is_available():\n    DEVICE = "cpu"',
    'DEVICE = "cuda" if torch.cuda.is_available() else "cpu"',
    'DEVICE = sys.argv[1]',
    # rebound by a function, or inside a loop, or only under some condition
    'def pick():\n    global DEVICE\n    DEVICE = "cpu"\nDEVICE = "cuda"',
    'for DEVICE in ["cuda"]:\n    pass',
    'if len(sys.argv) > 1:\n    DEVICE = "cuda"',
])
def test_a_late_module_device_that_is_not_certain_stays_silent(main):
    assert codes(_LATE.format(main=main)) == []


def test_a_late_module_name_does_not_reach_a_function_that_binds_it():
    src = 'import torch\n\ndef run(x):\n    if x is None:\n        DEVICE = "cpu"\n    return x.to(DEVICE)\n\nDEVICE = "cuda"\n'
    assert codes(src) == []


def test_a_class_body_runs_before_the_late_assignment():
    src = 'import torch\n\nclass Config:\n    weights = torch.ones(1).to(DEVICE)\n\nDEVICE = "cuda"\n'
    assert codes(src) == []


@pytest.mark.parametrize(
    "name, guard",
    [
        ("use_amp", True), ("useAmp", True), ("is_mps_available", True), ("isMPS", True),
        ("local_rank", True), ("half_precision", True), ("ngpu", True), ("use_cuda", True),
        ("farthest_point_sample", False), ("upsample", False), ("clamp_min", False),
        ("timestamps", False), ("rerank", False), ("ranking", False), ("sampler", False),
    ],
)
def test_guard_words_are_whole_words_of_a_name(name, guard):
    src = f"import torch\nif {name}:\n    x = torch.zeros(2).cuda()\n"
    assert (codes(src, "DEV101") == []) is guard


def test_an_argparse_error_exits_and_a_warning_does_not():
    exits = (
        "import argparse, torch\nparser = argparse.ArgumentParser()\n"
        "if not torch.cuda.is_available():\n    parser.error('this evaluation needs CUDA')\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
    )
    assert codes(exits, "DEV101") == []
    warns = exits.replace("parser.error('this evaluation needs CUDA')", "warnings.warn('no GPU: slow')")
    assert codes(warns, "DEV101") == [(5, "DEV101")]


def test_a_map_location_lambda_runs_in_its_load_and_other_lambdas_run_elsewhere():
    src = (
        "import torch\n"
        "ckpt = torch.load('x.pt', map_location=lambda storage, loc: storage.cuda())\n"
        "to_gpu = lambda t: t.cuda()\n"
        "if torch.cuda.is_available():\n"
        "    ckpt = torch.load('x.pt', map_location=lambda storage, loc: storage.cuda())\n"
    )
    assert codes(src, "DEV101") == [(2, "DEV101")]
    assert fixed(src) == src  # a storage's `.to()` takes no positional device


def test_reading_back_what_the_function_saved_is_a_round_trip():
    src = (
        "import torch\n"
        "def train(model, path):\n"
        "    torch.save(model, path)\n"
        "    again = torch.load(path)\n"
        "    other = torch.load(path + '.bak')\n"
        "    cuda = torch.load(path, map_location='cuda')\n"
        "def evaluate(path):\n"
        "    return torch.load(path)\n"
    )
    assert codes(src, "DEV103") == [(5, "DEV103"), (6, "DEV103"), (8, "DEV103")]


def test_a_round_trip_through_file_objects_compares_the_paths_opened():
    src = (
        "import torch\n"
        "with open(args.save, 'wb') as f:\n    torch.save(model, f)\n"
        "with open(args.save, 'rb') as f:\n    model = torch.load(f)\n"
        "with open(args.pretrained, 'rb') as f:\n    model = torch.load(f)\n"
    )
    assert codes(src, "DEV103") == [(7, "DEV103")]


def test_an_output_device_without_device_ids_fails_only_from_index_two():
    src = (
        "import torch\nfrom torch.nn import DataParallel\n"
        "a = DataParallel(module=model, output_device=1)\n"
        "b = DataParallel(model, output_device=2)\n"
        "c = DataParallel(model, device_ids=[0], output_device=1)\n"
    )
    assert codes(src, "DEV104") == [(4, "DEV104"), (5, "DEV104")]


@pytest.mark.parametrize(
    "name, guarded",
    [("forward_cuda", True), ("CudaKernel", True), ("_gpu_impl", True), ("to_gpu_if_available", True),
     ("to_cuda", False), ("_to_cuda", False), ("batch_to_device", False), ("move_to_gpu", False)],
)
def test_a_helper_named_for_its_move_is_no_gpu_code_path(name, guarded):
    src = f"import torch\ndef {name}(batch):\n    return {{k: v.cuda() for k, v in batch.items()}}\n"
    assert (codes(src, "DEV101") == []) is guarded


def test_no_fix_beside_a_map_location_given_to_the_wrong_call():
    src = "import torch\nmodel.load_state_dict(torch.load(path), map_location=device)\n"
    assert codes(src, "DEV103") == [(2, "DEV103")]
    assert fixed(src) == src


def test_cuda_with_a_chosen_index_is_cuda_unless_the_class_is_someone_elses():
    src = (
        "import torch\nfrom hqq.core.quantize import HQQLinear\n"
        "def place(model, device):\n"
        "    rank = int(os.environ['LOCAL_RANK'])\n"
        "    torch.cuda.set_device(rank)\n"
        "    model.cuda(rank)\n"
        "    for module in model.modules():\n"
        "        if isinstance(module, HQQLinear):\n"
        "            module.cuda(rank)\n"
        "        if isinstance(module, torch.nn.Linear):\n"
        "            module.cuda(rank)\n"
        "    model.cuda(device)\n"  # a parameter picks the index, never the backend
    )
    assert codes(src, "DEV101") == [(5, "DEV101"), (6, "DEV101"), (11, "DEV101"), (12, "DEV101")]


def test_cuda_of_a_module_without_tensors_asks_nothing_of_cuda():
    src = (
        "import torch\nimport torch.nn as nn\n"
        "criterion = nn.BCELoss()\ncriterion.cuda()\n"
        "weighted = nn.CrossEntropyLoss(weight=torch.ones(3))\nweighted.cuda()\n"
        "positional = nn.CrossEntropyLoss(torch.ones(3)).cuda()\n"
        "net = nn.Linear(2, 2).cuda()\n"
    )
    assert codes(src, "DEV101") == [(6, "DEV101"), (7, "DEV101"), (8, "DEV101")]


def test_cuda_of_a_module_class_of_the_file_that_holds_no_tensors_asks_nothing_of_cuda():
    classes = (
        "import torch\nimport torch.nn as nn\n"
        "class ECE(nn.Module):\n"
        "    def __init__(self, bins: int = 15):\n"
        "        super().__init__()\n"
        "        edges = torch.linspace(0, 1, bins + 1)\n"
        "        self.lowers = edges[:-1]\n"
        "        self.margin = 0.5\n"
        "class Content(nn.Module):\n"
        "    def __init__(self, target):\n"
        "        super().__init__()\n"
        "        self.target = target.detach()\n"
        "class Wrapped(nn.Module):\n"  # keeps whatever it is given: may be a module
        "    def __init__(self, inner):\n"
        "        super().__init__()\n"
        "        self.inner = inner\n"
        "class Buffered(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.register_buffer('w', torch.ones(2))\n"
        "class Layer(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(2, 2)\n"
        "class Deeper(Layer):\n"
        "    pass\n"
        "class Reward(nn.Module):\n"  # submodules that hold nothing either
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.log_softmax = nn.LogSoftmax(dim=1)\n"
        "        self.ece = ECE()\n"
        "class Weighted(nn.Module):\n"  # a loss whose first argument is its weight
        "    def __init__(self, w):\n"
        "        super().__init__()\n"
        "        self.nll = nn.NLLLoss(w)\n"
        "class Holder(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.layer = Layer()\n"
    )
    src = classes + (
        "ece = ECE().cuda()\n"  # line 40
        "content = Content(torch.ones(2)).cuda()\n"
        "wrapped = Wrapped(nn.Linear(2, 2)).cuda()\n"
        "buffered = Buffered().cuda()\n"
        "layer = Layer().cuda()\n"
        "deeper = Deeper().to('cuda')\n"
        "reward = Reward().cuda()\n"
        "weighted = Weighted(torch.ones(3)).cuda()\n"
        "holder = Holder().cuda()\n"
    )
    assert codes(src, "DEV101") == [(42, "DEV101"), (43, "DEV101"), (44, "DEV101"), (45, "DEV101"), (47, "DEV101"), (48, "DEV101")]


def test_a_long_try_whose_handler_gives_up_guards_nothing():
    body = "".join(f"        step{i}()\n" for i in range(6))
    src = (
        "import torch\n"
        "def train(x):\n"
        "    try:\n"
        f"{body}"
        "        x = x.to(torch.device('cuda'))\n"
        "    except Exception as e:\n"
        "        print(e)\n"
        "        return None, None\n"
        "def place(x):\n"
        "    try:\n"
        "        return x.cuda()\n"
        "    except Exception:\n"
        "        return x\n"
    )
    assert codes(src, "DEV101") == [(10, "DEV101")]


def test_a_device_keyword_that_places_nothing_is_no_cuda_placement():
    # A scaler told "cuda" warns and turns itself off without CUDA (DEV107 says
    # so); memory statistics read 0 before CUDA starts.
    src = (
        "import torch\n"
        "scaler = torch.amp.GradScaler(device='cuda')\n"
        "print(torch.cuda.max_memory_allocated(device='cuda:0'))\n"
        "gen = torch.Generator(device='cuda')\n"
    )
    assert codes(src, "DEV101") == [(4, "DEV101")]
    # The unguarded CUDA generator makes the script GPU-only: DEV107 leaves it to DEV101.
    assert codes(src, "DEV107") == []
    assert codes(src.replace("gen = torch.Generator(device='cuda')\n", ""), "DEV107") == [(2, "DEV107")]


def test_a_cuda_type_reached_through_a_name_on_every_path_is_the_legacy_type():
    src = (
        "import torch\n"
        "def cast(x, half, cuda):\n"
        "    both = torch.cuda.HalfTensor if half else torch.cuda.FloatTensor\n"
        "    x.type(both)\n"  # 4: CUDA either way
        "    alias = both\n"
        "    alias(2)\n"  # 6: through two names
        "    either = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
        "    x.type(either)\n"  # the CPU type on the other path: the flag picks the device
        "    either(2)\n"
    )
    assert codes(src, "DEV106") == [(4, "DEV106"), (6, "DEV106")]


def test_cuda_of_each_module_of_a_list_that_holds_no_tensors_asks_nothing_of_cuda():
    src = (
        "import torch\n"
        "from torch import nn\n"
        "\n"
        "\n"
        "class StyleLoss(nn.Module):\n"
        "    def forward(self, inputs, targets):\n"
        "        return nn.MSELoss()(inputs, targets)\n"
        "\n"
        "\n"
        "def build(make):\n"
        "    loss_fns = [StyleLoss()] * 5 + [nn.MSELoss()]\n"
        "    loss_fns = [fn.cuda() for fn in loss_fns]\n"
        "    mixed = [StyleLoss(), nn.Linear(2, 2)]\n"
        "    mixed = [m.cuda() for m in mixed]\n"
        "    for m in make():\n"
        "        m.cuda()\n"
        "    for x in [x]:\n"
        "        x.cuda()\n"
        "    criterion = nn.BCELoss()\n"
        "    for c in [criterion, nn.L1Loss()]:\n"
        "        c.cuda()\n"
        "    return loss_fns\n"
    )
    # The mixed list, an unknown iterable and a self-referring loop keep their findings.
    assert codes(src, "DEV101") == [(14, "DEV101"), (16, "DEV101"), (18, "DEV101")]


def test_a_call_that_leaves_out_a_cuda_default_picks_cuda():
    src = (
        "import torch\n"
        "def place(x, device='cuda'):\n"
        "    return x.to(device)\n"
        "def relabel(x, device='cuda'):\n"  # rebound before use: not the default any more
        "    device = torch.device('cpu')\n"
        "    return x.to(device)\n"
        "class Runner:\n"
        "    def run(self, x, device=torch.device('cuda:0')):\n"
        "        return x.to(device)\n"
        "place(torch.ones(2))\n"  # 10
        "place(torch.ones(2), 'cpu')\n"
        "place(*[torch.ones(2)])\n"  # may pass it
        "relabel(torch.ones(2))\n"
        "runner = Runner()\n"
        "runner.run(torch.ones(2))\n"  # 15
        "runner.run(torch.ones(2), device='cpu')\n"
    )
    assert codes(src, "DEV101") == [(10, "DEV101"), (15, "DEV101")]


# -- a try around a whole training loop ---------------------------------------

LONG_TRY = """\
import traceback
import torch


def fit(model, batches, logger):
    try:
        model.train()
        for x in batches:
            x = x.cuda()
            loss = model(x).pow(2).mean()
            loss.backward()
{extra}    except Exception as exc:
        logger.info("stopped: %s" % exc)
        traceback.print_exc()
"""


def test_a_try_whose_nested_body_is_long_and_handler_gives_up_is_no_guard():
    # Three statements at the top of the try, eight in all: a training loop
    # whose crash the handler only reports (no fallback to the CPU).
    src = LONG_TRY.format(extra="            logger.info('step')\n        logger.info('done')\n")
    assert codes(src, "DEV101") == [(9, "DEV101")]


def test_a_short_try_with_a_reporting_handler_still_guards():
    src = """\
import torch


def to_gpu(x, logger):
    try:
        x = x.cuda()
    except Exception as exc:
        logger.info("no GPU: %s" % exc)
    return x
"""
    assert codes(src, "DEV101") == []


# -- a default-True flag and the calls that set it ------------------------------

MIXUP = """\
import torch


def mixup(x, alpha=1.0, use_cuda=True):
    if use_cuda:
        index = torch.randperm(x.size(0)).cuda()
    else:
        index = torch.randperm(x.size(0))
    return x[index]


available = torch.cuda.is_available()
{calls}
"""


@pytest.mark.parametrize(
    "calls",
    [
        "mixup(torch.zeros(3), use_cuda=torch.cuda.is_available())",
        "mixup(torch.zeros(3), 0.5, available)\nmixup(torch.zeros(3), use_cuda=available and True)",
    ],
)
def test_a_default_true_flag_every_call_sets_from_the_probe_is_a_guard(calls):
    assert codes(MIXUP.format(calls=calls), "DEV101") == []


@pytest.mark.parametrize(
    "calls",
    [
        "",  # no call: the default is what runs
        "mixup(torch.zeros(3), use_cuda=available)\nmixup(torch.zeros(3))",
        "mixup(torch.zeros(3), use_cuda=not available)",
        "mixup(torch.zeros(3), use_cuda=args.cuda)",
    ],
)
def test_a_default_true_flag_some_call_leaves_on_is_no_guard(calls):
    assert codes(MIXUP.format(calls=calls), "DEV101") == [(6, "DEV101")]
