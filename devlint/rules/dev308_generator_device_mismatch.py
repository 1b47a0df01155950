from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import Kind, keyword

_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_SPLITS = frozenset({"torch.utils.data.random_split", "torch.utils.data.dataset.random_split"})
_SAMPLERS = frozenset(
    f"torch.utils.data{mod}.{name}"
    for mod in ("", ".sampler")
    for name in ("RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler")
)
_DEFAULT_DEVICE_MESSAGE = (
    "With the default device set to an accelerator, shuffling runs `randperm` there with a CPU generator and raises; "
    "pass a `generator=` on the default device"
)


class GeneratorDeviceMismatch(Rule):
    """
    ## What it does
    Flags a `torch.Generator` on an accelerator (`torch.Generator(device="cuda")`)
    passed as `generator=` to a `DataLoader`, `random_split` or a random
    sampler; and shuffling data loaders, `random_split` and random samplers
    without a generator after `torch.set_default_device("cuda")`.

    ## Why is this bad?
    Data loading draws its random numbers on the CPU: a `DataLoader` seeds
    its workers with `torch.empty((), dtype=torch.int64).random_(generator=...)`,
    samplers and `random_split` call `torch.randperm(n, generator=...)`. A
    CUDA generator there raises
    `RuntimeError: Expected a 'cpu' device type for generator but found 'cuda'`.
    Conversely, with the default device set to CUDA, `randperm` runs on the
    GPU with the samplers' CPU generator:
    `RuntimeError: Expected a 'cuda' device type for generator but found 'cpu'`.

    So a generator on the accelerator is right once the default device is
    the accelerator (`torch.set_default_device("cuda")`, or the legacy
    `torch.set_default_tensor_type(torch.cuda.FloatTensor)`), and is not
    flagged then — for a generator made in a function, wherever the file
    sets it, since a main block at the bottom runs before the functions it
    calls. A generator on a device the caller
    passes in may be on the CPU and is not flagged either.

    ## Example
    ```python
    generator = torch.Generator(device="cuda").manual_seed(0)
    loader = DataLoader(dataset, shuffle=True, generator=generator)
    ```

    ## Use instead
    ```python
    generator = torch.Generator().manual_seed(0)
    loader = DataLoader(dataset, shuffle=True, generator=generator)
    ```

    ## Fix safety
    No fix: a CPU generator draws a different sequence than a CUDA one, so
    seeded runs change.
    """

    code = "DEV308"
    name = "generator-device-mismatch"
    message = "Data loading draws on a CPU generator; a generator on an accelerator raises here"
    claim = Claim(
        backends=("cuda",),
        summary="RuntimeError: Expected a 'cpu' device type for generator but found 'cuda'",
        raises="RuntimeError",
        match=r"Expected a '\w+' device type for generator but found '\w+'",
    )
    triggers = ("Generator", "set_default_device", "set_default_tensor_type")

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualify(node.func)
        if qual not in _LOADERS and qual not in _SPLITS and qual not in _SAMPLERS:
            return
        generator = keyword(node, "generator")
        if generator is None and qual in _SPLITS:
            positional = [a for a in node.args if a.keyword is None]
            generator = positional[2].value if len(positional) > 2 and not positional[2].star else None
        if generator is not None:
            # With the default device on the accelerator, an accelerator generator
            # is what shuffling needs (the usual workaround), not the bug.
            if self._on_accelerator(generator) and self.ctx.events.default_device_call is None:
                if not any(isinstance(n, cst.FunctionDef) for n in self.ctx.stack):
                    self.report(node)  # module level: the text's order is the run's
                    return
                # In a function, judged once the whole file is read: the main block
                # at the bottom may set the default device before calling it.
                events = self.ctx.events
                self.report(node, condition=lambda: events.default_device_call is None)
            return
        if self.ctx.events.default_device_call is None:
            return
        if qual in _LOADERS:
            shuffle = keyword(node, "shuffle")
            sampler = keyword(node, "sampler") or keyword(node, "batch_sampler")
            if sampler is not None or not (isinstance(shuffle, cst.Name) and shuffle.value == "True"):
                return
        self.report(node, _DEFAULT_DEVICE_MESSAGE)

    def _on_accelerator(self, generator: cst.BaseExpression) -> bool:
        value = self.ctx.value_of(generator)
        if value.kind is not Kind.GENERATOR or value.device is None:
            return False
        # A named accelerator, or one chosen by an availability check (there is
        # one wherever it runs on a GPU); a device the caller passes may be the CPU.
        return value.device.is_accelerator or value.device.guarded
