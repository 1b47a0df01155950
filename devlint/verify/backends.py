"""Which device backends this machine has, and how to start a process on each.

Detection runs in a child process (forked by a supervisor, like a snippet):
asking CUDA anything initialises it, and the verifier itself never imports
torch.

| backend | present when | the snippet's process |
| --- | --- | --- |
| `cpu` | always | the machine as it is |
| `no-accel` | no accelerator can be seen, or CUDA/ROCm devices can be hidden | as it is on a CPU-only build or a machine without a GPU; else `CUDA_VISIBLE_DEVICES=""` (and `HIP_VISIBLE_DEVICES=""`), checked by detecting again under it |
| `cuda` | one or more CUDA (or ROCm) devices | exactly one GPU visible: the first one |
| `multi-gpu` | two or more | the machine as it is |
| `mps` | Apple silicon with MPS | the machine as it is |

Backends that map to the same environment share their runs: on a CPU-only
machine `cpu` and `no-accel` are one environment, so each cell runs once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ..claims import BACKENDS
from .sandbox import Environment, Sandbox

AS_IS = Environment("as-is", (), "the machine as it is")
NO_ACCEL = Environment("no-accel", (("CUDA_VISIBLE_DEVICES", ""), ("HIP_VISIBLE_DEVICES", "")), 'CUDA_VISIBLE_DEVICES=""')
DETECT_TIMEOUT = 300.0


class DetectionError(Exception):
    """torch could not be imported or asked in a child process."""


@dataclass(frozen=True)
class Backend:
    name: str
    present: bool
    environment: Optional[Environment]
    detail: str  # how it is provided, or why it is absent


@dataclass(frozen=True)
class Machine:
    info: dict  # what `child.py detect` reported
    backends: dict  # name -> Backend, in BACKENDS order

    @property
    def present(self) -> list[str]:
        return [b for b in BACKENDS if self.backends[b].present]

    def environment(self, backend: str) -> Optional[Environment]:
        b = self.backends.get(backend)
        return b.environment if b and b.present else None

    def environments(self) -> list[Environment]:
        seen: dict[str, Environment] = {}
        for name in self.present:
            env = self.backends[name].environment
            seen.setdefault(env.key, env)
        return list(seen.values())

    def served_by(self, environment: Environment) -> list[str]:
        return [b for b in self.present if self.backends[b].environment.key == environment.key]

    @property
    def name(self) -> str:
        """A short name for the machine: the GPU's, or `cpu`."""
        devices = self.info.get("cuda_devices") or []
        if devices:
            return devices[0]
        if self.info.get("mps_available"):
            return "mps"
        return "cpu"


def _first_visible(variable: str) -> str:
    current = os.environ.get(variable)
    if current:
        return current.split(",")[0].strip()
    return "0"


def machine_from(info: dict, hidden_info: Optional[dict] = None) -> Machine:
    """Map what detection saw to backends. `hidden_info` is what detection saw
    with accelerators hidden (`CUDA_VISIBLE_DEVICES=""`), where that was tried."""
    cuda_count = int(info.get("cuda_device_count") or 0)
    mps = bool(info.get("mps_available"))
    hip = bool(info.get("hip_build"))
    devices = info.get("cuda_devices") or []
    backends: dict[str, Backend] = {}
    build = "ROCm" if hip else f"CUDA {info['cuda_build']}" if info.get("cuda_build") else "CPU-only"
    backends["cpu"] = Backend("cpu", True, AS_IS, f"torch {info.get('torch')} ({build} build)")

    if cuda_count == 0 and not mps:
        why = "CPU-only torch build" if build == "CPU-only" else f"{build} build, no GPU visible"
        backends["no-accel"] = Backend("no-accel", True, AS_IS, f"{why}: the machine as it is")
    elif cuda_count and hidden_info is not None and not hidden_info.get("cuda_device_count") and not hidden_info.get("mps_available"):
        backends["no-accel"] = Backend("no-accel", True, NO_ACCEL, 'GPUs hidden with CUDA_VISIBLE_DEVICES=""')
    elif cuda_count:
        backends["no-accel"] = Backend("no-accel", False, None, 'the GPUs could not be hidden with CUDA_VISIBLE_DEVICES=""')
    else:
        backends["no-accel"] = Backend("no-accel", False, None, "MPS cannot be hidden from a process")

    if cuda_count == 1:
        backends["cuda"] = Backend("cuda", True, AS_IS, devices[0] if devices else "1 GPU")
    elif cuda_count >= 2:
        variable = "HIP_VISIBLE_DEVICES" if hip else "CUDA_VISIBLE_DEVICES"
        first = _first_visible(variable)
        env = Environment("one-gpu", ((variable, first),), f"{variable}={first}")
        backends["cuda"] = Backend("cuda", True, env, f"{devices[0] if devices else 'GPU'}, alone ({variable}={first})")
    else:
        backends["cuda"] = Backend("cuda", False, None, "no CUDA device")

    if cuda_count >= 2:
        names = sorted(set(devices)) or ["GPU"]
        backends["multi-gpu"] = Backend("multi-gpu", True, AS_IS, f"{cuda_count} x {', '.join(names)}")
    else:
        backends["multi-gpu"] = Backend("multi-gpu", False, None, "fewer than 2 GPUs")

    backends["mps"] = (
        Backend("mps", True, AS_IS, "Apple MPS") if mps else Backend("mps", False, None, "no MPS device")
    )
    return Machine(info, {b: backends[b] for b in BACKENDS})


def _detect_in(sandbox: Sandbox, environment: Environment) -> dict:
    outcome = sandbox.detect(environment, DETECT_TIMEOUT)
    info = outcome.report.get("detect")
    if outcome.kind != "ok" or not isinstance(info, dict):
        lines = outcome.output.strip().splitlines()
        raise DetectionError(f"backend detection failed: {outcome.describe()}" + (f": {lines[-1]}" if lines else ""))
    if "torch_error" in info:
        raise DetectionError(f"torch cannot be imported in an isolated interpreter (python -I): {info['torch_error']}")
    return info


def detect(sandbox: Sandbox) -> Machine:
    info = _detect_in(sandbox, AS_IS)
    hidden = None
    if info.get("cuda_device_count"):
        hidden = _detect_in(sandbox, NO_ACCEL)
    return machine_from(info, hidden)
