"""The semantic layer: what names, values and guards mean. Rules ask it; they
never re-derive PyTorch facts themselves."""

from .context import Context, keyword, string_value
from .names import dotted
from .values import Device, Kind, Value

__all__ = ["Context", "Device", "Kind", "Value", "dotted", "keyword", "string_value"]
