from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import torchapi


class LegacyConstructorWithDevice(Rule):
    """
    ## What it does
    Flags `torch.FloatTensor(data, device=...)`, `torch.Tensor(..., device=...)`
    and the other CPU legacy constructors (`LongTensor`, `HalfTensor`, ...)
    given a device that is not known to be the CPU.

    ## Why is this bad?
    The legacy constructors build tensors of one fixed type, and those types
    live on the CPU. A `device=` of any other type is rejected:
    `RuntimeError: legacy constructor expects device type: cpu but device type: cuda was passed`.
    With `device=device` the code works on a CPU-only machine and crashes on
    the first machine with a GPU.

    ## Example
    ```python
    weights = torch.FloatTensor([0.2, 0.8], device=device)
    buffer = torch.LongTensor(4, 16, device=device)
    ```

    ## Use instead
    ```python
    weights = torch.tensor([0.2, 0.8], dtype=torch.float32, device=device)
    buffer = torch.empty(4, 16, dtype=torch.int64, device=device)
    ```

    ## Fix safety
    Unsafe: offered for a literal list/tuple of data (`torch.tensor`) or
    literal sizes (`torch.empty`). The fixed code creates the tensor on the
    requested device instead of raising. `torch.Tensor(...)` becomes
    `dtype=torch.float32`, which differs if the program changed the default
    dtype with `torch.set_default_dtype`.
    """

    code = "DEV207"
    name = "legacy-constructor-with-device"
    message = (
        "`{ctor}(..., device=...)`: legacy constructors build CPU tensors and reject any other device; "
        "use `torch.tensor(..., dtype=..., device=...)`"
    )
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("cpu",),
        summary="RuntimeError: legacy constructor expects device type: cpu but device type: cuda was passed",
        raises="RuntimeError",
        match=r"legacy constructor expects device type: cpu but device type: \w+ was passed",
    )
    triggers = ("Tensor",)

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.ctx.qualify(node.func)
        if qual not in torchapi.LEGACY_CPU_CONSTRUCTORS:
            return
        device = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device"), None)
        if device is None:
            return
        named = self.ctx.device_of(device)
        if named is not None and named.type == "cpu":
            return  # works, if pointless
        if qual == "torch.Tensor" and "set_default_tensor_type" in self.ctx.source:
            return  # the default tensor type may be a CUDA one
        ctor = qual if isinstance(node.func, cst.Attribute) else qual.rsplit(".", 1)[-1]
        self.report(node, self.message.format(ctor=ctor), fix=self._fix(node, qual, device))

    def _fix(self, node: cst.Call, qual: str, device: cst.BaseExpression) -> Optional[NodeFix]:
        torch = self.ctx.torch_alias()
        positional = [a for a in node.args if a.keyword is None]
        if torch is None or any(a.star for a in node.args) or len(positional) + 1 != len(node.args):
            return None
        dtype = torchapi.LEGACY_CPU_CONSTRUCTORS[qual] or "float32"
        if len(positional) == 1 and isinstance(positional[0].value, (cst.List, cst.Tuple, cst.ListComp)):
            factory = "tensor"
        elif positional and all(isinstance(a.value, cst.Integer) for a in positional):
            factory = "empty"
        else:
            return None
        args = [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in positional]
        args.append(cst.Arg(keyword=cst.Name("dtype"), value=cst.parse_expression(f"{torch}.{dtype}"),
                            equal=_EQUAL))
        args.append(cst.Arg(keyword=cst.Name("device"), value=device, equal=_EQUAL))
        new = node.with_changes(func=cst.parse_expression(f"{torch}.{factory}"), args=args)
        return self.fix(f"Use `{torch}.{factory}(..., dtype=..., device=...)`", [(node, new)])


_EQUAL = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
