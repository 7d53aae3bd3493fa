"""What one training step keeps in memory: tensors saved for backward, and the peak.

``saved_for_backward`` runs one forward pass under
``torch.autograd.graph.saved_tensors_hooks`` and lists every storage that autograd
keeps for the backward pass, with the module that saved it. ``peak_step_memory``
measures the highest memory allocated while a step (forward + backward) runs. Both
take any model, so two models that differ only in their norm placement can be
compared.
"""

# --8<-- [start:saved]
import contextlib
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class Saved:
    """One storage kept for backward."""

    module: str  # qualified name of the innermost module running when it was saved
    kind: str  # that module's class name, e.g. "LayerNorm", "Linear"
    shape: tuple[int, ...]  # shape of the first saved tensor that uses the storage
    nbytes: int  # bytes of the whole storage: a saved view keeps all of it alive


def _storage_key(t: torch.Tensor) -> tuple[str, int]:
    return str(t.device), t.untyped_storage().data_ptr()


def saved_for_backward(model: nn.Module, *args, **kwargs) -> list[Saved]:
    """The storages autograd saves for backward during one ``model(*args, **kwargs)``.

    Counting rule: a storage is counted once, with all its bytes, however many
    saved tensors (views, reshapes, the same tensor saved by two ops) point into
    it, and it is charged to the module that saved it first. The model's
    parameters and buffers are not counted: they are in memory anyway.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    kept = {_storage_key(t) for t in (*model.parameters(), *model.buffers())}
    names = {m: name for name, m in model.named_modules()}
    running: list[nn.Module] = []  # the modules whose forward is running, innermost last
    records: dict[tuple[str, int], Saved] = {}
    alive: list[torch.Tensor] = []  # holds every saved storage, so no address is reused

    def pack(t: torch.Tensor) -> torch.Tensor:
        key = _storage_key(t)
        nbytes = t.untyped_storage().nbytes()
        if key not in kept and key not in records and nbytes > 0:
            m = running[-1] if running else model
            records[key] = Saved(names[m], type(m).__name__, tuple(t.shape), nbytes)
            alive.append(t)
        return t

    def enter(m: nn.Module, args) -> None:
        running.append(m)

    def leave(m: nn.Module, args, out) -> None:  # returns None: the output is left alone
        running.pop()

    hooks = []
    for m in names:
        hooks.append(m.register_forward_pre_hook(enter))
        hooks.append(m.register_forward_hook(leave, always_call=True))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model(*args, **kwargs)
    finally:
        for h in hooks:
            h.remove()
    return list(records.values())


def layer_index(module: str) -> int | None:
    """The i of a module named like ``...layers.i...`` (a block of a stack), else None."""
    match = re.search(r"(?:^|\.)layers\.(\d+)(?:\.|$)", module)
    return int(match.group(1)) if match else None


def total_bytes(records: list[Saved], where: Callable[[Saved], bool] | None = None) -> int:
    """Sum of the records' bytes, optionally of those for which ``where`` is true."""
    return sum(r.nbytes for r in records if where is None or where(r))


# --8<-- [end:saved]


# --8<-- [start:formula]
def korthikanti_bytes_per_layer(
    s: int, b: int, h: int, a: int, bytes_per_element: int = 2, dropout: bool = True
) -> int:
    """Activation bytes of one Transformer layer, Korthikanti et al. 2022 (arXiv 2205.05198), §4.1.

    Attention: the QKV input, Q and K, the softmax output (a*s*s*b), V and the output
    projection's input; MLP: the two linear inputs (h and 4h wide) and the GeLU input
    (4h); one input per LayerNorm (two per layer). With dropout, its 1-byte masks and
    the attention-dropout output are added. bytes_per_element=2 and dropout=True give
    the paper's Eq. 1, s*b*h*(34 + 5*a*s/h).
    """
    sizes = dict(s=s, b=b, h=h, a=a, bytes_per_element=bytes_per_element)
    for name, n in sizes.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:  # -s would count s² as bytes
            raise ValueError(f"{name} must be a positive int, got {n!r}")
    sbh, as2b = s * b * h, a * s * s * b
    attention = (1 + 2 + 1 + 1) * sbh + as2b  # QKV input, Q and K, V, projection input; softmax
    mlp = (1 + 4 + 4) * sbh  # h -> 4h input, GeLU input, 4h -> h input
    norms = 2 * sbh  # each LayerNorm keeps its input, wherever the norm sits
    elements = attention + mlp + norms
    if not dropout:
        return bytes_per_element * elements
    masks = as2b + sbh + sbh  # 1 byte per element: attention probabilities, attention, MLP
    return bytes_per_element * (elements + as2b) + masks  # + the attention-dropout output


# --8<-- [end:formula]


# --8<-- [start:peak]
@contextlib.contextmanager
def _quiet_fd2():
    """Silence file descriptor 2 (the profiler's C++ start/stop log lines)."""
    sys.stderr.flush()
    saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def peak_step_memory(step: Callable[[], object], device) -> int:
    """Highest memory allocated while ``step()`` runs, above what was allocated before it.

    CUDA: the caching allocator's own counters (torch.cuda.max_memory_allocated).
    CPU: PyTorch has no such counter, so the profiler records every allocation and
    free of the CPU allocator during the step, and the running sum's maximum is the
    peak. Memory that Python, the allocator's free lists or the OS hold is not seen.
    """
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        step()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    if device.type != "cpu":
        raise ValueError(f"peak_step_memory measures on 'cpu' or 'cuda', got {device.type!r}")
    prof = torch.autograd.profiler.profile(profile_memory=True)
    with _quiet_fd2():
        prof.__enter__()
    try:
        step()
    finally:
        with _quiet_fd2():
            prof.__exit__(None, None, None)
    events = prof.kineto_results.events()
    changes = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    live = peak = 0
    for _, nbytes in changes:  # + for an allocation, - for a free
        live += nbytes
        peak = max(peak, live)
    return peak


# --8<-- [end:peak]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(4, 16, 32)  # (B, T, C)
    for name, model in [
        ("Linear", nn.Linear(32, 32)),
        ("LayerNorm", nn.LayerNorm(32)),
        (
            "Linear -> GELU -> Linear",
            nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)),
        ),
    ]:
        records = saved_for_backward(model, x)
        print(f"{name:>24}: {total_bytes(records):6d} bytes saved, {[r.kind for r in records]}")
    print("Eq. 1, s=2048 b=1 h=12288 a=96:", korthikanti_bytes_per_layer(2048, 1, 12288, 96))

    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
    peak = peak_step_memory(lambda: model(x).square().mean().backward(), "cpu")
    print("peak of one CPU step above the start:", peak, "bytes")
# --8<-- [end:demo]
