from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import Rule
from ..semantics.devices import known_device
from ..semantics.values import parse_device_string


class DeviceComparedToString(Rule):
    """
    ## What it does
    Flags `==` / `!=` between a value that is certainly a `torch.device` —
    `x.device` of a known tensor, `torch.device(...)`, a parameter annotated
    `torch.device`, a name bound to one — and a device string such as `"cpu"`.

    ## Why is this bad?
    A `torch.device` never equals a string: `torch.device("cpu") == "cpu"` is
    `False`, so `if x.device == "cpu":` never runs its branch and `!=` always
    does.

    Values that may be strings (`args.device`, an unannotated `device`
    parameter) are not flagged: comparing two strings is fine.

    ## Example
    ```python
    if x.device == "cpu":
        x = x.float()
    ```

    ## Use instead
    ```python
    if x.device.type == "cpu":
        x = x.float()
    ```

    ## Fix safety
    Safe. A string without an index compares the device type
    (`x.device.type == "cpu"`); one with an index compares with the device it
    names (`x.device == torch.device("cuda:0")`), which keeps the index check.
    """

    code = "DEV206"
    name = "device-compared-to-string"
    message = "A `torch.device` never equals a string: `{op} {text}` is always {result}; {advice}"
    fix_availability = FixAvailability.SAFE
    claim = Claim(
        backends=("cpu",),
        summary="torch.device('cpu') == 'cpu' is False",
        postcondition=True,
    )
    triggers = ("device",)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        left = node.left
        for target in node.comparisons:
            right = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                for device_side, text_side in ((left, right), (right, left)):
                    if self._check(node, target, device_side, text_side):
                        return
            left = right

    def _check(self, node, target, device_side, text_side) -> bool:
        if not isinstance(text_side, cst.SimpleString):
            return False
        text = text_side.evaluated_value
        if not isinstance(text, str):
            return False
        named = parse_device_string(text)
        if named is None:
            return False
        known = known_device(self.ctx, device_side)
        if known is None:
            return False
        equal = isinstance(target.operator, cst.Equal)
        advice = "compare `.type`" if named.index is None else f"compare with `torch.device({text_side.value})`"
        message = self.message.format(op="==" if equal else "!=", text=text_side.value, result=not equal, advice=advice)
        fix = None
        if len(node.comparisons) == 1:
            if named.index is None:
                fix = self.fix(
                    "Compare the device type", [(device_side, cst.Attribute(value=device_side, attr=cst.Name("type")))]
                )
            else:
                torch = self.ctx.torch_alias()
                if torch is not None:
                    new = cst.parse_expression(f"{torch}.device({text_side.value})")
                    fix = self.fix("Compare with the device it names", [(text_side, new)])
        self.report(node, message, fix=fix, condition=known[1])
        return True
