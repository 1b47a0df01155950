"""What a value is, as far as the code makes it clear: a Tensor, an nn.Module,
a device, an availability flag — or unknown, which rules treat as "stay silent"."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

from . import torchapi


class Kind(Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"
    MODULE = "module"
    DEVICE = "device"  # a torch.device object
    DEVICE_STRING = "device-string"  # a str that names a device ('cuda:0')
    AVAILABILITY = "availability"  # a bool computed from an availability probe
    DEVICE_COUNT = "device-count"  # an int from torch.cuda.device_count() (also a probe)
    DTYPE = "dtype"
    OPTIMIZER = "optimizer"
    MODULE_OUTPUT = "module-output"  # what calling a Module returned: tensors, usually
    GENERATOR = "generator"  # a torch.Generator (Value.device: the device it draws on)
    OBJECT = "object"  # an instance of a local class that is no Module (see Value.cls)
    TRUE_CONSTANT = "true"  # the literal True (`use_gpu = True`: a flag that guards nothing)


@dataclass(frozen=True)
class Device:
    """A device as far as it is known. `type` None means unknown type."""

    type: Optional[str] = None
    index: Optional[int] = None
    # Hardcoded in the source ('cuda', torch.device('cuda')), not chosen at run time.
    literal: bool = False
    # Chosen by an availability check (`'cuda' if torch.cuda.is_available() else 'cpu'`).
    guarded: bool = False
    # The device of a live tensor (`x.device`): on an accelerator it always
    # carries an index (`cuda:0`), unlike `torch.device('cuda')`.
    of_tensor: bool = False

    @property
    def is_accelerator(self) -> bool:
        return self.type in torchapi.ACCELERATOR_TYPES

    def hardcoded(self, device_type: str) -> bool:
        return self.literal and not self.guarded and self.type == device_type


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    device: Optional[Device] = None  # for devices; for tensors/modules: where it was placed
    # The instance's class: a class defined in this file (its name), or a torch
    # class it was built from (its qualified name, `torch.nn.Linear`).
    cls: Optional[str] = None

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR

    @property
    def is_module(self) -> bool:
        return self.kind is Kind.MODULE


UNKNOWN = Value()
TENSOR = Value(Kind.TENSOR)
MODULE = Value(Kind.MODULE)


def parse_device_string(text: str) -> Optional[Device]:
    """`'cuda:1'` -> Device('cuda', 1, literal=True); None for text that is no device."""
    m = torchapi.DEVICE_STRING.match(text)
    if not m or m.group("type") not in torchapi.DEVICE_TYPES:
        return None
    index = m.group("index")
    return Device(m.group("type"), int(index) if index is not None else None, literal=True)
