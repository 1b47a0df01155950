from __future__ import annotations

import libcst as cst

from ..claims import Claim
from ..rule import Rule
from ..semantics import cuda_init, dataloading, residence
from ..semantics.placements import placement


class CudaInDataloaderWorker(Rule):
    """
    ## What it does
    Flags CUDA placement — `.cuda()`, `.to("cuda")`, `device="cuda"`, a device
    chosen by `torch.cuda.is_available()`, a device variable
    (`.to(self.device)`), `torch.cuda.set_device(...)` — in
    the code DataLoader workers run: a Dataset's `__getitem__`,
    `__getitems__` or `__iter__`, and a function (or lambda) the file passes
    as `collate_fn=` or `worker_init_fn=` to a DataLoader whose `num_workers`
    is not `0`.

    ## Why is this bad?
    With `num_workers > 0` the DataLoader starts worker processes, by forking
    the main process on Linux (the default start method before Python 3.14).
    Once the main process has initialised CUDA (the model is on the GPU), a
    forked child cannot use it: the first CUDA call in the worker raises
    `RuntimeError: Cannot re-initialize CUDA in forked subprocess`. Even where
    it works (the `spawn` start method), every worker builds its own CUDA
    context and the batches cross processes as CUDA IPC handles.

    Move the batch to the device in the main process, after the DataLoader
    yields it (`pin_memory=True` makes that copy fast). A `collate_fn` passed
    only to DataLoaders with `num_workers=0` (or none) runs in the main
    process and is not flagged; so does a Dataset's `__getitem__` when every
    DataLoader in the file that may take the dataset has no workers (none
    given, a literal `0`, or `**kwargs` from dicts that only ever hold `0`).
    A Dataset no DataLoader in the file takes is loaded elsewhere, with
    workers as likely as not: it is flagged — unless the file has no
    DataLoader at all and loops over the dataset itself (`for sample in
    tqdm(dataset):`), reading its items in its own process.

    ## Example
    ```python
    class Pairs(Dataset):
        def __getitem__(self, i):
            x, y = self.data[i]
            return x.to(device), y.to(device)

    loader = DataLoader(Pairs(), batch_size=32, num_workers=4)
    ```

    ## Use instead
    ```python
    class Pairs(Dataset):
        def __getitem__(self, i):
            return self.data[i]

    loader = DataLoader(Pairs(), batch_size=32, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    ```

    ## Fix safety
    No fix: the placement has to move out of the worker into the training
    loop.
    """

    code = "DEV402"
    name = "cuda-in-dataloader-worker"
    message = (
        "CUDA placement in {where} runs in a DataLoader worker: with `num_workers > 0` it raises "
        "'Cannot re-initialize CUDA in forked subprocess'; move the batch to the device after the loader yields it"
    )
    claim = Claim(
        backends=("cuda",),
        summary="RuntimeError: Cannot re-initialize CUDA in forked subprocess (num_workers > 0)",
        raises="RuntimeError",
        match=r"Cannot re-initialize CUDA in forked subprocess",
    )
    # Worker code needs a Dataset class or a DataLoader given a collate_fn / worker_init_fn.
    triggers = ("Dataset", "collate_fn", "worker_init_fn")

    def visit_Call(self, node: cst.Call) -> None:
        if not (cuda_init.may_initialize_cuda(self.ctx, node, driver_probes=False) or self._to_device_variable(node)):
            return
        where = dataloading.worker_code(self.ctx)
        if where is None:
            return
        self.report(node, self.message.format(where=where.what), condition=where.condition)

    def _to_device_variable(self, call: cst.Call) -> bool:
        """`.to(self.device)` / `.to(device)` with a device the caller chose: nothing
        but an accelerator makes it worth doing in a worker."""
        found = placement(self.ctx, call)
        if found is None or found.how not in ("method", "device-kwarg") or found.target is None:
            return False
        if found.device is not None and found.device.type is not None:
            return False  # a named device: CUDA is caught above, the CPU is fine
        return residence.target_may_be_accelerator(self.ctx, found.target)
