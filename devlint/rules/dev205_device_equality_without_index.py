from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics import torchapi
from ..semantics.devices import known_device


class DeviceEqualityWithoutIndex(Rule):
    """
    ## What it does
    Flags `t.device == torch.device("cuda")` (also `"mps"`, `"xpu"`, and
    `!=`): a tensor's device compared with an accelerator device that has no
    index.

    ## Why is this bad?
    A tensor on an accelerator always reports its index — `cuda:0`, never bare
    `cuda` — and `torch.device("cuda") == torch.device("cuda:0")` is `False`.
    The comparison is therefore always false (or `!=` always true), even for a
    tensor that is on the GPU.

    Only flagged when one side is certainly a tensor's device (`x.device` of a
    known tensor, or a name bound to it) and the other a `torch.device` of an
    accelerator type with no index. CPU tensors report no index, so
    `x.device == torch.device("cpu")` is fine.

    ## Example
    ```python
    if x.device == torch.device("cuda"):
        torch.cuda.synchronize()
    ```

    ## Use instead
    ```python
    if x.device.type == "cuda":
        torch.cuda.synchronize()
    ```

    ## Fix safety
    Safe: comparing the device types is what the comparison meant; it is true
    for a tensor on any CUDA device.
    """

    code = "DEV205"
    name = "device-equality-without-index"
    message = (
        "`torch.device(\"{type}\")` has no index but a tensor's device always has one (`{type}:0`): "
        "they never compare equal; compare `.type`"
    )
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="torch.device('cuda') == torch.device('cuda:0') is False",
        postcondition=True,
    )
    triggers = ("device",)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        for left, right in _equality_pairs(node):
            for ours, other in ((left, right), (right, left)):
                tensor_device = known_device(self.ctx, ours)
                if tensor_device is None or not tensor_device[0].of_tensor:
                    continue
                bare = known_device(self.ctx, other)
                if bare is None or not _bare_accelerator(bare[0]):
                    continue
                fix = None
                if len(node.comparisons) == 1:
                    fix = self.fix(
                        "Compare the device types",
                        [(ours, _dot_type(ours)), (other, _type_of(other))],
                    )
                later = tensor_device[1]
                self.report(node, self.message.format(type=bare[0].type), fix=fix, condition=later)
                return


def _equality_pairs(node: cst.Comparison) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression]]:
    left = node.left
    for target in node.comparisons:
        if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
            yield left, target.comparator
        left = target.comparator


def _bare_accelerator(device) -> bool:
    return device.type in torchapi.INDEXED_DEVICE_TYPES and device.index is None and not device.guarded


def _dot_type(expr: cst.BaseExpression) -> cst.BaseExpression:
    return cst.Attribute(value=expr, attr=cst.Name("type"))


def _type_of(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`torch.device("cuda")` -> `"cuda"`; any other device `d` -> `d.type`."""
    literal = _sole_string_argument(expr)
    return literal if literal is not None else _dot_type(expr)


def _sole_string_argument(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    if (
        isinstance(expr, cst.Call) and len(expr.args) == 1 and not expr.args[0].star
        and (expr.args[0].keyword is None or expr.args[0].keyword.value == "type")
    ):
        value = expr.args[0].value
        if isinstance(value, cst.SimpleString):
            return value
    return None
