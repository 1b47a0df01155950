from __future__ import annotations

from typing import Optional

import libcst as cst

from ..claims import Claim
from ..diagnostics import FixAvailability
from ..rule import NodeFix, Rule
from ..semantics import device_parameters
from ..semantics.placements import Placement, placement


class UnguardedCuda(Rule):
    """
    ## What it does
    Flags CUDA placement — `.cuda()`, `.to("cuda")`, `device="cuda"`, a
    `torch.device("cuda")` then used for placement, `torch.cuda.set_device`,
    `map_location="cuda"` — that no `torch.cuda.is_available()` check guards.

    ## Why is this bad?
    The code runs only where an NVIDIA GPU is. On a laptop, a CPU-only CI
    runner or a Mac it crashes with
    `AssertionError: Torch not compiled with CUDA enabled` (CPU-only build) or
    `RuntimeError: Found no NVIDIA driver on your system` (`torch.cuda.set_device`
    on a CPU-only build: `AttributeError: module 'torch._C' has no attribute
    '_cuda_setDevice'`).

    Guards come in many shapes and all silence the rule: `if`, an early
    `return`/`raise`/`sys.exit`/`parser.error(...)` under `if not ...` (or
    in the `else:` of `if torch.cuda.is_available():`), `assert`, a
    conditional expression, a flag assigned from `is_available()`, a name
    that says so (`use_cuda`, `args.gpu`, `use_amp`, `forward_cuda`),
    `device.type == "cuda"` (also `dev.type` of any name bound to a device),
    skip decorators, a `device` the caller supplies, a short `try` around
    the placement, an out-of-memory handler (`except
    torch.cuda.OutOfMemoryError:`, `if "out of memory" in str(e):`),
    `torch.accelerator.is_available()`, `with FakeTensorMode():` (its
    tensors hold no data, a CUDA one needs no GPU), a function or class that imports a
    library that exists only for NVIDIA GPUs (apex, Transformer Engine,
    flash-attn, Megatron, CuPy, PyCUDA; not an optional import under an `if`
    or in a `try` that goes on without it), and — one call away — callers: a
    function of the file that is called only where a real probe guards the
    call (after `main()`'s `if not torch.cuda.is_available(): sys.exit(1)`,
    or inside `if torch.cuda.is_available():`). A flag's name does not count
    at the call, nor does a `try` around it.

    A device parameter (`def embed(x, device="cuda")`, or `self.device =
    device` kept from `__init__`) places where the caller says — until a call
    of the file picks CUDA for it, unguarded: one that leaves out a CUDA
    default (`embed(batch)`), or passes CUDA itself (`embed(batch, "cuda")`,
    `embed(batch, gpu)` after `gpu = torch.device("cuda:0")`). That call is
    reported, unless the function checks availability before it places. A
    device named on the command line (`--device`, whatever its default) is
    the caller's choice too.

    A lambda runs where it is called, usually by a guarded caller; one handed
    to `map()`, `filter()`, `sorted()`, `min()`, `max()`, `.sort()` or
    `functools.reduce()` runs right here (`map(lambda t: t.cuda(), batch)`),
    as does a `torch.load` `map_location` lambda.

    Not guards:
    - the branch of an availability test that runs without a GPU: the
      `else:` of `if torch.cuda.is_available():` (or of `if use_cuda:` with
      `use_cuda = torch.cuda.is_available()`, or of `if torch.cuda.is_available()
      and args.ddp:`), the body of `if not torch.cuda.is_available():`, and
      what follows `if torch.cuda.is_available(): return ...`;
    - a check of another backend: `"mps" if torch.backends.mps.is_available()
      else "cuda"` falls back to CUDA unchecked;
    - a flag whose default is True (`use_gpu=True`, an argparse `--cuda`
      with `default=True`, also read as `self.opt.cuda`), and a switch that
      turns the GPU off, off by default (`use_cuda = not args.no_cuda`,
      `if not args.no_cuda:`, `"cpu" if args.cpu else "cuda"`);
    - a warning under `if not ...` (the code after it still runs);
    - a `try` whose handler raises again (`except Exception: log(e); raise`);
    - a long `try` whose `except` only reports and gives up (it hides the
      crash);
    - a name that only contains such a word (`sample` is not `amp`,
      `timestamps` is not `mps`), or a helper named for the move it makes
      (`to_cuda`, `move_to_gpu`).

    CUDA as plainly as a literal: device strings built at run time
    (`f"cuda:{rank}"`, `"cuda:%d" % i`, `"cuda:{}".format(i)`),
    `.cuda(args.gpu)` and `torch.cuda.set_device(local_rank)` (the launcher
    picks the index, not the type), and a `map_location=lambda storage, loc:
    storage.cuda()` (it runs inside its `torch.load`). Not flagged: `.cuda()`
    of a module that holds no tensors (`nn.BCELoss()`, `nn.ReLU()`), and of
    an object checked to be an instance of another library's class
    (`isinstance(m, HQQLinear)`), which may define `.cuda()` its own way.

    ## Example
    ```python
    model = Net().cuda()
    batch = batch.to("cuda")
    ```

    ## Use instead
    ```python
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Net().to(device)
    batch = batch.to(device)
    ```

    ## Fix safety
    Unsafe: the fix replaces the literal device with
    `"cuda" if torch.cuda.is_available() else "cpu"`, so the code runs on the
    CPU where it used to crash — behaviour changes, and choosing the device
    once at the top is still the better shape. No fix for CUDA-only APIs
    (`torch.cuda.set_device("cuda")`, `with torch.cuda.device("cuda"):`),
    which reject `"cpu"` as well: the whole statement needs the guard.
    """

    code = "DEV101"
    name = "unguarded-cuda"
    message = "CUDA placement without a `torch.cuda.is_available()` guard crashes on machines without a GPU"
    fix_availability = FixAvailability.UNSAFE
    claim = Claim(
        backends=("no-accel",),
        summary="AssertionError: Torch not compiled with CUDA enabled / RuntimeError: Found no NVIDIA driver",
        # A CPU-only build has no CUDA bindings at all: `torch.cuda.set_device`
        # fails there with AttributeError on `torch._C._cuda_setDevice`, and a
        # storage's `.cuda()` with a TypeError on the device index it never got;
        # `.cuda(0)` with an index asks the accelerator API, which has none.
        raises="AssertionError|RuntimeError|AttributeError|TypeError",
        match=(
            r"Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs are available"
            r"|no CUDA-capable device|has no attribute '_cuda_setDevice'"
            r"|'<' not supported between instances of 'NoneType' and 'int'"
            r"|Cannot access accelerator device when none is available"
            r"|Attempting to deserialize object on a CUDA device"
        ),
    )
    triggers = ("cuda",)

    def __init__(self, ctx, sink) -> None:
        super().__init__(ctx, sink)
        # Placements on the parameters of the file's functions (`def embed(x,
        # device="cuda"): return x.to(device)`), for the calls that give them CUDA.
        self._parameters = device_parameters.ParameterPlacements()

    def visit_Call(self, node: cst.Call) -> None:
        # A call of the file's function that picks CUDA for a parameter it places
        # with: `embed(batch)` leaving out `device="cuda"`, or `embed(batch, "cuda")`.
        for callee, param, omitted, condition in self._parameters.cuda_chosen_by(self.ctx, node):
            how = f"leaves out `{param}`, whose default is CUDA" if omitted else f"is given CUDA for `{param}`, which it places with"
            self.report(node, f"`{callee}()` {how}: {self.message}", condition=condition)
        found = placement(self.ctx, node)
        if found is None:
            return
        if not found.hardcoded("cuda"):
            self._parameters.record(self.ctx, found.target)
            return
        self.report(node, fix=self._fix(found), condition=self.ctx.unguarded())

    def _fix(self, found: Placement) -> Optional[NodeFix]:
        torch = self.ctx.torch_alias()
        if torch is None:
            return None
        choice = cst.parse_expression(f'"cuda" if {torch}.cuda.is_available() else "cpu"')
        func = found.call.func
        if found.target is None and isinstance(func, cst.Attribute) and not found.call.args:
            if any(isinstance(n, cst.Lambda) for n in self.ctx.stack):
                # `map_location=lambda storage, loc: storage.cuda()`: a storage's
                # `.to()` takes no positional device; the author picks the fix.
                return None
            # x.cuda() -> x.to("cuda" if torch.cuda.is_available() else "cpu")
            new = found.call.with_changes(func=func.with_changes(attr=cst.Name("to")), args=[cst.Arg(choice)])
            return self.fix("Fall back to the CPU when CUDA is unavailable", [(found.call, new)])
        target = found.target
        if (self.ctx.qualify(func) or "").startswith("torch.cuda."):
            # `torch.cuda.set_device(...)`, `with torch.cuda.device(...)`: CUDA-only APIs
            # reject "cpu" too; the whole statement needs the guard.
            return None
        if isinstance(target, cst.SimpleString) and target.evaluated_value == "cuda":
            parenthesized = choice.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            new_target = choice if found.how == "method" or _is_sole_arg(found.call, target) else parenthesized
            return self.fix("Fall back to the CPU when CUDA is unavailable", [(target, new_target)])
        return None


def _is_sole_arg(call: cst.Call, target: cst.BaseExpression) -> bool:
    return len(call.args) == 1 and call.args[0].value is target
