"""What devlint knows about the PyTorch API: plain tables, asked by the rest of
the semantic layer. Names are fully qualified (``torch.zeros``), as resolved by
:mod:`devlint.semantics.names`."""

from __future__ import annotations

import re

# Functions that create a tensor from nothing (or from data) and take `device=`.
FACTORIES = frozenset(
    f"torch.{n}"
    for n in (
        "zeros ones empty full rand randn randint randperm arange range linspace "
        "logspace eye tensor as_tensor asarray from_numpy frombuffer empty_strided "
        "complex polar tril_indices triu_indices bartlett_window blackman_window "
        "hamming_window hann_window kaiser_window normal sparse_coo_tensor"
    ).split()
)

# Factories that copy shape/device from another tensor: never a placement bug.
LIKE_FACTORIES = frozenset(
    f"torch.{n}" for n in "zeros_like ones_like empty_like full_like rand_like randn_like randint_like".split()
)

# Other torch functions whose result is a tensor (used to learn that a name is one).
TENSOR_FUNCTIONS = FACTORIES | LIKE_FACTORIES | frozenset(
    f"torch.{n}"
    for n in (
        "cat concat concatenate stack hstack vstack dstack matmul mm bmm einsum where "
        "clamp clip exp log sqrt abs sum mean max min softmax log_softmax sigmoid tanh "
        "relu flatten reshape squeeze unsqueeze transpose permute gather index_select "
        "masked_fill cumsum cumprod outer cross norm sort argsort argmax argmin topk "
        "multinomial bernoulli nonzero flip roll repeat_interleave tile diag triu tril "
        "clone chunk_cat addmm baddbmm lerp pow mul add sub div floor ceil round sign "
        "isnan isinf isfinite logical_and logical_or logical_not bucketize searchsorted dist cdist "
        "stft istft maximum minimum square rsqrt sin cos atan2 neg reciprocal log1p expm1 "
        "real imag angle view_as_real view_as_complex"
    ).split()
) | frozenset(f"torch.nn.functional.{n}" for n in (
    "relu gelu silu softmax log_softmax linear conv1d conv2d conv3d dropout layer_norm "
    "normalize pad interpolate cross_entropy mse_loss l1_loss nll_loss embedding one_hot "
    "scaled_dot_product_attention sigmoid tanh leaky_relu elu softplus logsigmoid "
    "binary_cross_entropy binary_cross_entropy_with_logits smooth_l1_loss kl_div "
    "cosine_similarity avg_pool1d avg_pool2d max_pool1d max_pool2d adaptive_avg_pool1d "
    "adaptive_avg_pool2d conv_transpose1d conv_transpose2d grid_sample pixel_shuffle unfold fold"
).split()) | frozenset(f"torch.fft.{n}" for n in (
    "fft ifft rfft irfft fft2 ifft2 rfft2 irfft2 fftn ifftn rfftn irfftn fftshift ifftshift"
).split())

# torch.nn modules that hold no parameters or buffers (losses are told by
# their name, `*Loss`, when given no `weight`): moving one moves nothing.
STATELESS_MODULES = frozenset(
    "ReLU ReLU6 LeakyReLU ELU SELU GELU SiLU Mish Sigmoid Tanh Softmax LogSoftmax Softplus Dropout "
    "Dropout2d Identity Flatten Unflatten".split()
)

# Tensor methods that return a (new) tensor, so `t.<m>(...)` of a tensor is a tensor.
TENSOR_RETURNING_METHODS = frozenset(
    (
        "to cuda cpu mps xpu half float double bfloat16 int long bool byte char short "
        "type type_as contiguous clone detach view view_as reshape reshape_as flatten "
        "squeeze unsqueeze permute transpose t expand expand_as repeat narrow select "
        "index_select masked_fill sum mean max min abs exp log sqrt pow softmax "
        "log_softmax sigmoid tanh relu matmul mm bmm mul add sub div float_power "
        "unfold chunk_ split_ pin_memory requires_grad_ new_zeros new_ones new_empty "
        "new_full new_tensor argmax argmin clamp clip to_dense to_sparse coalesce "
        "float_ half_ masked_select nan_to_num exp_ add_ mul_ sub_ div_ clamp_ zero_ fill_ "
        "copy_ normal_ uniform_ abs_ neg sign round floor ceil "
        # comparisons and reductions: a tensor where the receiver is (`pred.eq(y).sum()`)
        "eq ne gt lt ge le logical_and logical_or logical_not logical_xor isnan isinf isfinite "
        "prod cumsum norm std var any all count_nonzero"
    ).split()
)

# Calls on a tensor that move it (or convert it) and return a *new* tensor.
# As a bare statement these do nothing on a Tensor; nn.Module's versions are in-place.
MOVE_METHODS = frozenset(
    "to cuda cpu mps xpu half float double bfloat16 int long bool byte char short type".split()
)

# Module methods that return the module itself.
MODULE_RETURNING_METHODS = frozenset(
    "to cuda cpu mps xpu half float double bfloat16 type train eval requires_grad_ to_empty share_memory apply".split()
)

# Namespaces of torch whose capitalised callables build nn.Modules.
MODULE_NAMESPACES = ("torch.nn.", "torch.nn.modules.", "torch.nn.parallel.")
# ... except these, which are tensors or containers of them.
NOT_MODULE_CONSTRUCTORS = frozenset(
    "torch.nn.Parameter torch.nn.Buffer torch.nn.UninitializedParameter "
    "torch.nn.UninitializedBuffer torch.nn.parameter.Parameter torch.nn.parameter.Buffer".split()
)
TENSOR_CONSTRUCTORS = NOT_MODULE_CONSTRUCTORS | frozenset({"torch.Tensor"})
# torch calls whose `device=` places nothing: a device object, a gradient
# scaler (it warns and disables itself without CUDA), memory statistics (0
# before CUDA starts).
DEVICE_KEYWORD_NOT_PLACING = frozenset(
    {
        "torch.device", "torch.amp.GradScaler", "torch.amp.grad_scaler.GradScaler", "torch.GradScaler",
        "torch.cuda.memory_allocated", "torch.cuda.max_memory_allocated", "torch.cuda.memory_reserved",
        "torch.cuda.max_memory_reserved", "torch.cuda.memory_stats", "torch.cuda.memory_cached",
        "torch.cuda.max_memory_cached",
    }
)
# `Variable(t)`: a no-op since torch 0.4, a plain tensor (nothing registers it).
PLAIN_TENSOR_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Wrappers that return their tensor argument's data, where it already lives:
# `nn.Parameter(t)`, `Variable(t)`.
WRAPPING_CONSTRUCTORS = PLAIN_TENSOR_WRAPPERS | frozenset(
    {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer", "torch.nn.parameter.Buffer"}
)
# Tensor methods whose result is a tensor, never the module that a module's
# method of the same name returns (`.float()`, `.cuda()`, `.to()`: not here).
TENSOR_ONLY_RESULTS = frozenset(
    "detach clone view reshape unsqueeze squeeze t transpose permute flatten expand repeat mean sum "
    "contiguous exp log sqrt abs pow mul add sub div matmul softmax".split()
)
MODULE_BASES = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.Container"})


def is_module_constructor(qual: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.parallel.DistributedDataParallel`: builds an nn.Module."""
    if qual in NOT_MODULE_CONSTRUCTORS or qual in MODULE_BASES:
        return qual in MODULE_BASES
    for ns in MODULE_NAMESPACES:
        if qual.startswith(ns):
            rest = qual[len(ns):]
            last = rest.rsplit(".", 1)[-1]
            # `torch.nn.Linear` directly, or deeper only under nn.modules / nn.parallel.
            if last[:1].isupper() and ("." not in rest or ns != "torch.nn."):
                return True
    return False

DTYPE_NAMES = frozenset(
    (
        "float16 half float32 float float64 double bfloat16 complex32 complex64 cfloat "
        "complex128 cdouble uint8 int8 int16 short int32 int int64 long bool "
        "float8_e4m3fn float8_e5m2 float8_e4m3fnuz float8_e5m2fnuz uint16 uint32 uint64 "
        "quint8 qint8 qint32 quint4x2"
    ).split()
)
DTYPES = frozenset(f"torch.{n}" for n in DTYPE_NAMES)

# Legacy typed-tensor constructors (`torch.FloatTensor`, `torch.cuda.HalfTensor`).
LEGACY_TENSOR_TYPES = frozenset(
    "FloatTensor DoubleTensor HalfTensor BFloat16Tensor ByteTensor CharTensor "
    "ShortTensor IntTensor LongTensor BoolTensor".split()
)

# Calls that probe availability: a condition that calls one of these is a guard.
AVAILABILITY_PROBES = frozenset(
    {
        "torch.cuda.is_available",
        "torch.cuda.device_count",
        "torch.cuda.is_initialized",
        "torch.backends.mps.is_available",
        "torch.backends.mps.is_built",
        "torch.mps.is_available",
        "torch.xpu.is_available",
        "torch.accelerator.is_available",
        "torch.accelerator.current_accelerator",
        "torch.accelerator.device_count",
        "torch.cuda.is_bf16_supported",
    }
)

# Device types torch accepts at the start of a device string.
DEVICE_TYPES = frozenset(
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan "
    "mps meta hpu mtia privateuseone".split()
)
ACCELERATOR_TYPES = frozenset({"cuda", "mps", "xpu", "hip"})

# A device string torch parses: type, optional ':index'.
DEVICE_STRING = re.compile(r"^(?P<type>[a-z_]+)(?::(?P<index>\d+))?$")

# Identifiers that, in a condition, almost always mean "is an accelerator here?"
# (`if args.cuda:`, `if use_gpu:`, `if is_torch_cuda_available():`). Precision
# first: a condition that mentions one is treated as a guard.
# `sys.platform` / `platform.system()` / `is_macos`: a platform check is how code
# tells Apple silicon (MPS) apart.
class NameWords:
    """Words that mark an identifier: `substrings` match anywhere in it
    (`ngpu`, `use_cuda`, `isCudaBuild`); `tokens` only as a whole word of it,
    split at `_`, digits and camelCase (`use_amp`, `isMPS`, `local_rank`) —
    `sample`, `timestamps`, `ranking` and `rerank` are no such word."""

    def __init__(self, substrings: str, tokens: str) -> None:
        self._substrings = re.compile(substrings, re.I)
        self._tokens = frozenset(tokens.split())

    def search(self, word: str) -> bool:
        if self._substrings.search(word):
            return True
        return any(token.lower() in self._tokens for token in _WORD_TOKEN.findall(word))


_WORD_TOKEN = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+")

GUARD_WORDS = NameWords(
    r"cuda|gpu|xpu|accel|available|device|distributed|world_size|fp16|cudnn|platform|darwin|macos",
    "mps amp half rank ranks nrank nranks ddp",
)

# Words that make a function or class accelerator-specific by its name
# (`forward_cuda`, `CUDAGraphRunner`, `test_amp`, a library's `_setup_devices`,
# whose branches each serve one backend). Narrower than a condition's words:
# `init_distributed()` or `train_ddp()` runs wherever it is called, and a
# distributed run needs no GPU (gloo).
CUDA_NAME_WORDS = NameWords(
    r"cuda|gpu|xpu|accel|available|device|fp16|cudnn|platform|darwin|macos",
    "mps amp half",
)

# Tensor properties that name its device type: `t.is_cuda`, never `t.is_cuda()`.
TENSOR_DEVICE_PROPERTIES = frozenset(
    "is_cuda is_cpu is_mps is_xpu is_meta is_ipu is_maia is_mtia is_mkldnn is_vulkan is_xla".split()
)

# The CPU legacy constructors (`torch.FloatTensor(...)`) and the dtype each builds.
# `torch.Tensor` builds the default dtype.
LEGACY_CPU_CONSTRUCTORS = {
    "torch.FloatTensor": "float32", "torch.DoubleTensor": "float64", "torch.HalfTensor": "float16",
    "torch.BFloat16Tensor": "bfloat16", "torch.ByteTensor": "uint8", "torch.CharTensor": "int8",
    "torch.ShortTensor": "int16", "torch.IntTensor": "int32", "torch.LongTensor": "int64",
    "torch.BoolTensor": "bool", "torch.Tensor": None,
}

# Raw-text triggers of a call that makes a fresh host tensor (`residence.host_factory`):
# every factory's name, and the legacy constructors (`torch.FloatTensor(...)`,
# `torch.Tensor(...)`), which all end in `Tensor(`.
HOST_FACTORY_TRIGGERS = tuple(sorted({f"{q.rsplit('.', 1)[1]}(" for q in FACTORIES} | {"Tensor("}))

# Device types whose tensors always carry an index (`cuda:0`); a tensor on
# `cpu` or `meta` reports no index.
INDEXED_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu"})

# Exceptions only an accelerator raises: their handler runs only where one is.
ACCELERATOR_FAILURES = frozenset({"torch.cuda.OutOfMemoryError", "torch.OutOfMemoryError"})

# Probes of how many accelerators there are. A condition comparing with one of
# these checks a device ordinal (`if torch.cuda.device_count() > 1:`).
# Probes whose truth says an accelerator is there (`not` of one: that none is),
# so the other branch of a test made of them runs without one.
# And the backend each asks about: in `"cuda" if torch.cuda.is_available() else
# "mps"` the `else` branch is taken wherever CUDA is missing, MPS or not.
PROBED_TYPE = {
    "torch.cuda.is_available": "cuda",
    "torch.backends.mps.is_available": "mps",
    "torch.mps.is_available": "mps",
    "torch.xpu.is_available": "xpu",
}
PRESENCE_PROBES = frozenset(PROBED_TYPE)
DEVICE_COUNT_PROBES = frozenset(
    {"torch.cuda.device_count", "torch.accelerator.device_count", "torch.xpu.device_count", "torch.mps.device_count"}
)
# Identifiers that, in a condition or a decorator, almost always mean "are there
# enough GPUs?" (`if n_gpu > 1:`, `@require_torch_multi_gpu`, `RunIf(min_cuda_gpus=2)`).
# A rank/world size also ties an ordinal to the processes actually launched.
COUNT_WORDS = NameWords(
    r"device_count|n_?gpus?\b|num_?gpus|gpus?_?count|ngpus?|multi_?gpu|multi_?accelerator|min_\w*gpus"
    r"|num_devices|n_devices|world_size|^gpus$|gpu_ids|^devices$",
    "rank ranks nrank nranks",
)

# Boolean probes that are easy to leave uncalled (`if torch.cuda.is_available:`):
# a function object is always true.
UNCALLED_PROBES = AVAILABILITY_PROBES | frozenset(
    {"torch.backends.cudnn.is_available", "torch.backends.cuda.is_built", "torch.xpu.is_bf16_supported"}
)

# Deprecated build-time flags (true on a CUDA build without a GPU) and what to ask instead.
DEPRECATED_DEVICE_FLAGS = {
    "torch.has_cuda": "torch.cuda.is_available()",
    "torch.has_mps": "torch.backends.mps.is_available()",
    "torch.has_cudnn": "torch.backends.cudnn.is_available()",
}

# The legacy CUDA typed-tensor classes: `torch.cuda.FloatTensor`, ...
LEGACY_CUDA_TENSOR_TYPES = frozenset(f"torch.cuda.{n}" for n in LEGACY_TENSOR_TYPES)

# Mixed precision. The CUDA-only spellings are deprecated aliases of the
# device-generic classes with device "cuda" (same defaults, keyword arguments).
DEPRECATED_CUDA_AMP = {
    "torch.cuda.amp.autocast": "amp.autocast",
    "torch.cuda.amp.autocast_mode.autocast": "amp.autocast",
    "torch.cuda.amp.GradScaler": "amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "amp.GradScaler",
}
# Device-generic AMP entry points and the keyword naming their device.
AMP_DEVICE_KEYWORD = {
    "torch.autocast": "device_type",
    "torch.amp.autocast": "device_type",
    "torch.amp.autocast_mode.autocast": "device_type",
    "torch.amp.GradScaler": "device",
    "torch.amp.grad_scaler.GradScaler": "device",
}

# Wrappers that spread a module over GPUs by index (`device_ids=[0, 1]`).
DATA_PARALLEL = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
     "torch.nn.parallel.data_parallel", "torch.nn.parallel.DistributedDataParallel",
     "torch.nn.parallel.distributed.DistributedDataParallel"}
)

# Every probe a strict availability/count test can rest on, for a cheap text pre-check.
PROBE_NAMES = AVAILABILITY_PROBES | DEVICE_COUNT_PROBES
