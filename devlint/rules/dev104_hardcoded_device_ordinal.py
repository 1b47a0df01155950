from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import guards, keyword, torchapi
from ..semantics.names import dotted
from ..semantics.placements import placement


class HardcodedDeviceOrdinal(Rule):
    """
    ## What it does
    Flags a literal GPU index above 0 — `"cuda:1"`, `.cuda(1)`,
    `torch.device("cuda", 2)` used for placement, `torch.cuda.set_device(3)`,
    `with torch.cuda.device(1):`, `DataParallel(m, device_ids=[0, 1])`,
    `"cuda:1" if torch.cuda.is_available() else "cpu"` (that checks a GPU
    exists, not how many), or `device_ids=args.gpus` where the argparse
    option's default is `[0, 1]` — that no check of
    `torch.cuda.device_count()` guards.

    ## Why is this bad?
    The code runs only on machines with at least that many GPUs. On a laptop,
    a single-GPU workstation or a cloud instance with one GPU it crashes with
    `RuntimeError: CUDA error: invalid device ordinal`
    (`AssertionError: Invalid device id` from `DataParallel`).

    A check of `torch.cuda.device_count()` in an enclosing condition or an
    early exit (`if torch.cuda.device_count() < 2: return`), a multi-GPU test
    decorator (`@require_torch_multi_gpu`,
    `skipif(torch.cuda.device_count() < 2)`), a GPU count or a rank in the
    condition (`if n_gpu > 1:`, `if rank == 1:`) silence the rule. An
    `is_available()` check does not: it says one GPU is there, not two.

    ## Example
    ```python
    model = Net().to("cuda:1")
    ```

    ## Use instead
    ```python
    index = 1 if torch.cuda.device_count() > 1 else 0
    model = Net().to(torch.device("cuda", index))
    ```
    or let the user pick GPUs with `CUDA_VISIBLE_DEVICES` and use `cuda:0`.

    ## Fix safety
    No fix: which GPU to use instead is the author's choice.
    """

    code = "DEV104"
    name = "hardcoded-device-ordinal"
    message = "Hardcoded GPU index {index} fails with `invalid device ordinal` on machines with fewer GPUs"
    claim = Claim(
        backends=("cuda",),
        summary="RuntimeError: CUDA error: invalid device ordinal (one GPU)",
        raises="RuntimeError|AssertionError",
        match=r"invalid device ordinal|Invalid device id",
    )
    # 'cuda:1', .cuda(1), torch.device('cuda', 2), set_device: all say cuda; the
    # parallel wrappers are named (DataParallel, DistributedDataParallel, data_parallel).
    triggers = ("cuda", "DataParallel", "data_parallel")

    def visit_Call(self, node: cst.Call) -> None:
        index = self._ordinal(node)
        if index is not None and index > 0:
            self.report(node, self.message.format(index=index), condition=self.ctx.unguarded(guards.DEVICE_COUNT))
        elif index is None and self.ctx.qualify(node.func) in torchapi.DATA_PARALLEL:
            self._option_default(node)

    def _option_default(self, node: cst.Call) -> None:
        """`DataParallel(model, device_ids=args.gpus)` with an argparse
        `--gpus` whose default is `[0, 1]`: what runs when no flag is given."""
        ids = keyword(node, "device_ids") or _positional(node, 1)
        if not isinstance(ids, cst.Attribute):
            return
        dest, options, unguarded = ids.attr.value, self.ctx.option_defaults, self.ctx.unguarded(guards.DEVICE_COUNT)

        def hardcoded() -> bool:  # the parser may be built below the call
            default = options.get(dest)
            largest = _largest(default) if default is not None else None
            return largest is not None and largest > 0 and unguarded()

        message = (
            f"GPU index above 0 in the argparse default of `{dotted(ids)}` fails with `Invalid device id` "
            "on machines with fewer GPUs"
        )
        self.report(node, message, condition=hardcoded)

    def _ordinal(self, node: cst.Call) -> Optional[int]:
        if self.ctx.qualify(node.func) in torchapi.DATA_PARALLEL:
            ids = keyword(node, "device_ids") or _positional(node, 1)
            output = keyword(node, "output_device") or _positional(node, 2)
            if ids is None:
                # Every visible GPU: with none or one, DataParallel never uses
                # `output_device`; with two, index 1 exists.
                largest = _largest(output)
                return largest if largest is not None and largest >= 2 else None
            return _largest(ids, output)
        found = placement(self.ctx, node)
        device = found.device if found is not None else None
        if device is None:
            return None
        if device.type == "cuda" or (device.type is None and device.guarded):
            # A guarded choice (`"cuda:1" if torch.cuda.is_available() else "cpu"`)
            # checks that a GPU exists, not how many.
            return device.index
        return None


def _positional(call: cst.Call, i: int) -> Optional[cst.BaseExpression]:
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    return positional[i] if len(positional) > i else None


def _largest(*exprs: Optional[cst.BaseExpression]) -> Optional[int]:
    """The largest literal index in `[0, 1]`, `(0, 1)`, `1`, `'cuda:1'`."""
    found: list[int] = []
    for expr in exprs:
        items = [e.value for e in expr.elements] if isinstance(expr, (cst.List, cst.Tuple)) else [expr]
        for item in items:
            if isinstance(item, cst.Integer):
                found.append(int(item.value))
            elif isinstance(item, cst.SimpleString) and isinstance(item.evaluated_value, str):
                text = item.evaluated_value
                match = torchapi.DEVICE_STRING.match(text)
                if match and match.group("type") == "cuda" and match.group("index"):
                    found.append(int(match.group("index")))
    return max(found) if found else None
