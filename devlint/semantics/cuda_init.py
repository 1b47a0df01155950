"""When does a process initialise CUDA, and has it done so before a given point?

CUDA reads `CUDA_VISIBLE_DEVICES` once, when the driver initialises (`cuInit`).
Importing torch does not initialise it; these do:

- `torch.cuda.is_available()` (it asks `cudaGetDeviceCount`, which runs
  `cuInit`), `torch.cuda.device_count()` (it asks NVML first, but falls back
  to `cudaGetDeviceCount` where NVML cannot answer: code that changes the
  variable after it works on some machines only), `torch.cuda.init()`, `current_device()`, `set_device()`,
  `get_device_name()` / `_properties()` / `_capability()`, `synchronize()`,
  `mem_get_info()`, `is_bf16_supported()`, streams and events,
  `with torch.cuda.device(i):`;
- placing data on CUDA: `.cuda()`, `.to("cuda")`, `device="cuda"`, or a
  device chosen by an availability check (`torch.device("cuda" if
  torch.cuda.is_available() else "cpu")`), which is CUDA wherever there is one.

Not: `manual_seed` (queued until initialisation),
`empty_cache`/`memory_allocated` (no-ops before it).

Questions:
- `may_initialize_cuda(ctx, call)`: does this call (possibly) initialise CUDA?
- `touched_before(ctx, chain)`: the first call that initialises CUDA and runs
  before the node at the top of `chain` (its ancestors, outermost first), in
  the same process: earlier statements of the enclosing function(s), the
  module code before them, and — for a module-level function — the code that
  runs before any of its call sites in the file.
- `launches_processes(ctx, scope)`: does this function (or module) start other
  processes (`subprocess`, `multiprocessing`, `torch.multiprocessing.spawn`)?
  Then environment variables it sets are meant for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional, Sequence

import libcst as cst

from .names import dotted
from .values import Device
from .tree import children

if TYPE_CHECKING:
    from .context import Context

# torch.cuda functions that run torch's lazy CUDA initialisation (`_lazy_init`):
# in a forked child of a process that has initialised CUDA they raise
# "Cannot re-initialize CUDA in forked subprocess".
LAZY_INIT_FUNCTIONS = frozenset(
    f"torch.cuda.{n}"
    for n in (
        "init current_device set_device get_device_name get_device_properties "
        "get_device_capability synchronize mem_get_info is_bf16_supported Stream Event "
        "current_stream default_stream device ipc_collect get_rng_state set_rng_state "
        "set_per_process_memory_fraction set_sync_debug_mode"
    ).split()
)
# ... and those that initialise the driver, which reads CUDA_VISIBLE_DEVICES then.
INITIALIZING_FUNCTIONS = LAZY_INIT_FUNCTIONS | {"torch.cuda.is_available", "torch.cuda.device_count"}

# Calls that start other processes, by qualified name prefix / exact name.
_SPAWN_PREFIXES = ("subprocess.", "multiprocessing.", "torch.multiprocessing.", "torch.distributed.run",
                   "torch.distributed.launcher", "torch.distributed.elastic", "concurrent.futures.")
# ... but not their set-up and queries, which start nothing.
_SETUP_NAMES = frozenset(
    {"set_start_method", "get_start_method", "get_all_start_methods", "get_context", "freeze_support",
     "cpu_count", "set_sharing_strategy", "get_sharing_strategy", "set_executable", "current_process",
     "active_children", "parent_process", "get_logger", "log_to_stderr", "Queue", "SimpleQueue",
     "Event", "Lock", "RLock", "Manager", "Value", "Array", "Pipe", "Barrier", "Semaphore", "Condition"}
)
_SPAWN_CALLS = frozenset({"os.system", "os.popen", "os.fork", "os.posix_spawn", "os.posix_spawnp"})
_SPAWN_PREFIX_CALLS = ("os.exec", "os.spawn")
# ... and, when not resolvable through imports, by their last dotted component.
_SPAWN_NAMES = frozenset(
    {"Popen", "spawn", "start_processes", "Process", "Pool", "execute_subprocess_async", "run_command",
     "check_call", "check_output", "ProcessPoolExecutor", "launch", "notebook_launcher", "debug_launcher"}
)


def may_initialize_cuda(ctx: "Context", call: cst.Call, driver_probes: bool = True) -> bool:
    """Does this call initialise CUDA (or place data where CUDA may be)?
    `driver_probes=False`: only what runs torch's lazy initialisation, not
    `torch.cuda.is_available()` (which initialises the driver only)."""
    qual = ctx.qualify(call.func)
    if qual is not None and qual in (INITIALIZING_FUNCTIONS if driver_probes else LAZY_INIT_FUNCTIONS):
        return True
    from .placements import placement  # placements imports the context

    found = placement(ctx, call)
    if found is None or found.how == "map_location" or ctx.qualify(call.func) == "torch.set_default_device":
        return False
    return _cuda_or_chosen(found.device)


def _cuda_or_chosen(device: Optional[Device]) -> bool:
    """A CUDA device, or one chosen by an availability check (CUDA where there is one)."""
    if device is None:
        return False
    return device.type == "cuda" or (device.type is None and device.guarded)


def touched_before(ctx: "Context", chain: Sequence[cst.CSTNode]) -> Optional[cst.Call]:
    """The first call that initialises CUDA before the top of `chain` runs (see module docs)."""
    module = chain[0]
    found = _first_init_before(ctx, module, chain)
    if found is not None:
        return found
    # A module-level function: the code before each of its call sites in the file.
    func = _outermost_function(chain)
    if func is None:
        return None
    for site_chain in _call_sites(module, func.name.value):
        if any(n is func for n in site_chain):
            continue  # recursion: not a call from outside
        found = _first_init_before(ctx, module, site_chain)
        if found is not None:
            return found
    return None


def launches_processes(ctx: "Context", scope: cst.CSTNode) -> bool:
    """Does `scope` (a function or the module) start other processes?"""
    for node in _walk(scope, skip_defs=not isinstance(scope, cst.FunctionDef)):
        if isinstance(node, cst.Call) and _is_spawn(ctx, node.func):
            return True
    return False


def _is_spawn(ctx: "Context", func: cst.BaseExpression) -> bool:
    qual = ctx.qualify(func)
    if qual is not None:
        if qual.rsplit(".", 1)[-1] in _SETUP_NAMES:
            return False
        if qual.startswith(_SPAWN_PREFIXES) or qual in _SPAWN_CALLS or qual.startswith(_SPAWN_PREFIX_CALLS):
            return True
    name = dotted(func)
    return name is not None and name.rsplit(".", 1)[-1] in _SPAWN_NAMES


# -- scanning in execution order ----------------------------------------------
def _first_init_before(ctx: "Context", root: cst.CSTNode, chain: Sequence[cst.CSTNode]) -> Optional[cst.Call]:
    """Pre-order (= execution order for straight-line code) from `root` up to the
    top of `chain`, skipping the bodies of functions and lambdas that do not
    contain it (they do not run there)."""
    target = chain[-1]
    ancestors = {id(n) for n in chain}
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if node is target:
            return None
        if isinstance(node, (cst.FunctionDef, cst.Lambda)) and id(node) not in ancestors:
            continue
        if isinstance(node, cst.Call) and id(node) not in ancestors and may_initialize_cuda(ctx, node):
            return node
        stack.extend(reversed(children(node)))
    return None


def _outermost_function(chain: Sequence[cst.CSTNode]) -> Optional[cst.FunctionDef]:
    """The function defined at module level around the top of `chain`."""
    if len(chain) > 2 and isinstance(chain[1], cst.FunctionDef):
        return chain[1]
    return None


def _call_sites(module: cst.CSTNode, name: str) -> Iterator[list[cst.CSTNode]]:
    """Ancestor chains (outermost first) of every `name(...)` call in `module`."""
    stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        path.append(node)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == name:
            yield list(path)
        stack.extend((child, depth + 1) for child in reversed(children(node)))


def _walk(root: cst.CSTNode, skip_defs: bool) -> Iterator[cst.CSTNode]:
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        if skip_defs and node is not root and isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children(node))
