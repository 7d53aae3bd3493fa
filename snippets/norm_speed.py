"""How fast are LayerNorm and RMSNorm? Time per call, bytes moved, achieved bandwidth.

A norm does a handful of flops per element it reads, far too few to keep the arithmetic
units busy, so its speed limit is memory traffic: the fewest bytes it must read and write,
divided by the bandwidth the machine reaches on the simplest memory-bound op there is, a
copy. This module times the implementations of both norms, counts those bytes and turns the
two into achieved bandwidth (GB/s) and a fraction of the measured copy bandwidth.

The from-scratch modules are passed in (a snippet never imports another snippet), so the
same code races snippets/layer_norm.py and snippets/rms_norm.py against torch.nn and
torch.nn.functional.
"""

# --8<-- [start:timer]
import math
import statistics
import time

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils._python_dispatch import TorchDispatchMode


def synchronize(device) -> None:
    """Wait for queued GPU work: CUDA and MPS calls return before the kernel has run."""
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def median_time(fn, *, warmup: int = 2, repeats: int = 5, number: int = 1, device="cpu") -> float:
    """Median wall-clock seconds of one fn() call.

    warmup calls first (allocator, caches, lazy compilation), then `repeats` timed samples of
    `number` back-to-back calls each; the median of the samples resists a stray slow one.
    """
    for name, value, low in (("warmup", warmup, 0), ("repeats", repeats, 1), ("number", number, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    for _ in range(warmup):
        fn()
    synchronize(device)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        synchronize(device)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


# --8<-- [end:timer]


# --8<-- [start:ceilings]
def copy_bandwidth(
    numel: int, *, fresh=False, device="cpu", dtype=torch.float32, **timing
) -> float:
    """Bytes per second of dst.copy_(src) on `numel` elements: the ceiling for a norm.

    A copy reads every byte once and writes every byte once, so it moves 2 * size bytes
    (the STREAM convention; the cache line a CPU reads before writing to it is not counted).
    fresh=True times src.clone() instead: a copy into a new tensor, allocated on every call
    as the output of a norm (or of any out-of-place op) is.
    """
    if isinstance(numel, bool) or not isinstance(numel, int) or numel < 1:
        raise ValueError(f"numel must be a positive int, got {numel!r}")
    src = torch.ones(numel, device=device, dtype=dtype)
    dst = torch.empty_like(src)
    fn = src.clone if fresh else (lambda: dst.copy_(src))
    seconds = median_time(fn, device=device, **timing)
    return 2 * src.numel() * src.element_size() / seconds


def matmul_flops(n: int, *, device="cpu", dtype=torch.float32, **timing) -> float:
    """Flops per second of an (n, n) @ (n, n) product, 2 n³ flops: what the cores can compute."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    a = torch.ones(n, n, device=device, dtype=dtype)
    seconds = median_time(lambda: a @ a, device=device, **timing)
    return 2 * n**3 / seconds


# --8<-- [end:ceilings]


# --8<-- [start:allocator]
def minor_page_faults(fn) -> int | None:
    """Page faults the process takes during one fn() (None where `resource` is missing).

    A fresh page of memory faults on its first write and the kernel fills it with zeros;
    memory the allocator hands back from its own free lists does not fault again.
    """
    try:
        import resource  # Unix only
    except ImportError:
        return None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc <malloc.h>


def keep_freed_memory(limit: int = 1 << 30) -> bool:
    """Make glibc's malloc keep freed blocks below `limit` bytes for reuse, for this process.

    By default glibc serves a block larger than its mmap threshold (at most 32 MiB on 64-bit)
    with a fresh mmap and unmaps it on free, so every large tensor starts on fresh pages.
    Raising the mmap and trim thresholds keeps such blocks on the heap for the next request,
    as jemalloc and TCMalloc do by design (the environment variables MALLOC_MMAP_THRESHOLD_
    and MALLOC_TRIM_THRESHOLD_ set the same at start-up). Returns False, changing nothing,
    where the C library has no mallopt.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit < 2**31:
        raise ValueError(f"limit must be an int in (0, 2**31), got {limit!r}")
    import ctypes

    libc = ctypes.CDLL(None)  # the C library this process already uses
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, limit)) and bool(mallopt(M_TRIM_THRESHOLD, limit))


# --8<-- [end:allocator]


# --8<-- [start:bytes]
NORMS = ("layer_norm", "rms_norm")
PASSES = ("forward", "forward+backward")
STAT_BYTES = 4  # the per-row statistics are kept in float32 (mean and rstd, or rstd)
# Forward flops per element of x, read off the two formulas (the 1/H, + eps and rsqrt are
# done once per row, not per element):
#   LayerNorm: sum for the mean, x - mean, square, sum of squares, * rstd, * weight, + bias  = 7
#   RMSNorm:   square, sum of squares, * rstd, * weight                                      = 4
FORWARD_FLOPS_PER_ELEMENT = {"layer_norm": 7, "rms_norm": 4}


def bytes_moved(norm: str, rows: int, hidden: int, *, itemsize: int = 4, passes="forward") -> int:
    """The fewest bytes one call must read and write: the compulsory traffic.

    x is (rows, hidden); the weight (and LayerNorm's bias) are (hidden,).
    forward (inference): read x and the parameters, write y.
    forward+backward (training), without recomputing anything:
      forward  reads x and the parameters, writes y and the per-row statistics it saves
               (LayerNorm: mean and rstd; RMSNorm: rstd), in float32;
      backward reads x, grad_y, the statistics and the weight, writes grad_x and one
               gradient per parameter; grad_x needs x (or y) and grad_y, hence two reads.
    An implementation that makes more passes over x moves more bytes than this, and so
    achieves less bandwidth by this count: the count is the ideal, not what a kernel does.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if passes not in PASSES:
        raise ValueError(f"passes must be one of {PASSES}, got {passes!r}")
    for name, value in (("rows", rows), ("hidden", hidden), ("itemsize", itemsize)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    tensor = rows * hidden * itemsize  # x, y, grad_y and grad_x each
    params = (2 if norm == "layer_norm" else 1) * hidden * itemsize  # weight (+ bias)
    stats = (2 if norm == "layer_norm" else 1) * rows * STAT_BYTES
    if passes == "forward":
        return 2 * tensor + params
    forward = 2 * tensor + params + stats
    backward = 3 * tensor + stats + hidden * itemsize + params  # reads weight, writes grads
    return forward + backward


# --8<-- [end:bytes]


# --8<-- [start:variants]
IMPLEMENTATIONS = ("scratch", "nn", "F", "compiled")


def norm_variants(
    norm: str, hidden: int, scratch, *, eps=1e-5, compile=True, device="cpu", dtype=None
):
    """{implementation: callable} for one norm, all sharing one weight (and bias).

    scratch: the from-scratch class (LayerNorm or RMSNorm), built like its nn twin.
    "compiled" (left out when compile=False) is torch.compile of the from-scratch module; it
    compiles on its first call, once per grad mode.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    shape = (hidden,)
    if norm == "layer_norm":
        ref = nn.LayerNorm(hidden, eps=eps, device=device, dtype=dtype)
    else:
        ref = nn.RMSNorm(hidden, eps=eps, device=device, dtype=dtype)
    ours = scratch(hidden, eps=eps, device=device, dtype=dtype)
    gen = torch.Generator().manual_seed(hidden)  # its own seed: the same weights every run
    with torch.no_grad():  # weight away from 1 and bias away from 0, so a mix-up would show
        ref.weight.copy_(torch.rand(shape, generator=gen) + 0.5)
        if norm == "layer_norm":
            ref.bias.copy_(torch.rand(shape, generator=gen) - 0.5)
    ours.weight = ref.weight  # one set of parameters: all variants compute the same function
    if norm == "layer_norm":
        ours.bias = ref.bias

        def functional(x):
            return F.layer_norm(x, shape, ref.weight, ref.bias, eps)
    else:

        def functional(x):
            return F.rms_norm(x, shape, ref.weight, eps)

    variants = {"scratch": ours, "nn": ref, "F": functional}
    if compile:
        # dynamic=True: one kernel for every row count. dynamic=False compiles once per shape
        # and, past torch._dynamo's recompile limit (8 per function), falls back to eager.
        variants["compiled"] = torch.compile(ours, dynamic=True)
    return variants


def norm_call(fn, x, params, *, passes="forward"):
    """A no-argument function doing one call: fn(x) without autograd, or fn(x) and its backward.

    The backward asks for the gradients of x and of every parameter (what training needs),
    through torch.autograd.grad, so nothing accumulates into .grad between calls.
    """
    if passes not in PASSES:
        raise ValueError(f"passes must be one of {PASSES}, got {passes!r}")
    if passes == "forward":

        def call():
            with torch.no_grad():
                return fn(x)

        return call
    x = x.detach().requires_grad_()  # the caller's tensor is left alone
    inputs = (x, *params)
    grad_y = torch.cos(x.detach())  # any fixed, non-trivial upstream gradient

    def call():
        return torch.autograd.grad(fn(x), inputs, grad_y)

    return call


def max_error(variants, x, *, reference="nn") -> dict:
    """{implementation: largest |difference| from the reference}, over y and every gradient."""
    params = list(variants[reference].parameters())
    ref_y = variants[reference](x)
    want = (ref_y.detach(), *norm_call(variants[reference], x, params, passes=PASSES[1])())
    errors = {}
    for impl, fn in variants.items():
        got = (norm_call(fn, x, params)(), *norm_call(fn, x, params, passes=PASSES[1])())
        errors[impl] = max((g - w).abs().max().item() for g, w in zip(got, want, strict=True))
    return errors


# --8<-- [end:variants]


# --8<-- [start:traffic]
def _footprint(t: torch.Tensor) -> int:
    """Bytes a tensor occupies: a broadcast (stride-0) dim does not multiply its memory."""
    return t.element_size() * math.prod(s for s, st in zip(t.shape, t.stride(), strict=True) if st)


def _tensors(tree):
    if torch.is_tensor(tree):
        yield tree
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            yield from _tensors(item)
    elif isinstance(tree, dict):
        for item in tree.values():
            yield from _tensors(item)


class _OpLog(TorchDispatchMode):
    """Records every aten op that reads or writes a tensor as large as x, and those bytes."""

    def __init__(self, big: int):
        super().__init__()
        self.big, self.ops = big, []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:  # a view moves no data
            moved = sum(
                _footprint(t)
                for t in _tensors((args, kwargs or {}, out))
                if _footprint(t) >= self.big
            )
            if moved:
                self.ops.append((func.overloadpacket.__name__, moved))
        return out


def op_traffic(fn, x, params, *, passes="forward") -> list:
    """[(aten op, bytes), ...]: the ops one eager call runs on x-sized tensors, in order.

    Each op reads its x-sized inputs and writes its x-sized outputs once; at sizes far above
    the caches nothing survives from one op to the next, so the sum is the traffic the eager
    call moves (an in-place op reads and writes its tensor: counted twice). Ops on per-row
    statistics or on the (hidden,) parameters are left out, as in bytes_moved. Compiled code
    is not seen: a compiled call runs its own fused kernels.
    """
    call = norm_call(fn, x, params, passes=passes)
    with _OpLog(x.numel() * x.element_size()) as log:
        call()
    return log.ops


# --8<-- [end:traffic]


# --8<-- [start:benchmark]
def time_norm(fn, x, params, *, passes="forward", **timing) -> float:
    """Median seconds of one call (see norm_call) of fn on x."""
    return median_time(norm_call(fn, x, params, passes=passes), device=x.device, **timing)


def benchmark(
    sizes,
    variants,
    *,
    only=None,
    first_call=None,
    passes=PASSES,
    device="cpu",
    dtype=torch.float32,
    repeats=3,
    number=1,
    min_sample_s=0.0,
    max_number=10,
):
    """Time every (norm, implementation) on every (rows, hidden); returns the results table.

    sizes:    [(rows, hidden), ...]
    variants: function (norm, hidden) -> {implementation: callable}, e.g. a partial of
              norm_variants; called once per (norm, hidden), so a compiled variant compiles
              once per hidden size and grad mode and serves every row count.
    only:     what to time, as implementation names or (norm, implementation) pairs
              (default: everything `variants` returns).
    Each measurement is the median of `repeats` samples of `number` calls, after one first
    call timed apart (the warmup; it compiles a torch.compile variant) for the
    implementations in `first_call` (default: all). With min_sample_s > 0, `number` is
    chosen per size instead: enough calls (at most max_number) that a sample lasts about
    min_sample_s if a call took as long as one copy of x, so that short calls are not timed
    one by one against a coarse clock or a busy scheduler.
    Each size's copy bandwidth, into an existing tensor (the ceiling) and into a new one
    (clone), is measured just before its norms.
    Returns (table, failures): table is a list of dicts with keys norm, impl, rows, hidden,
    passes, number, seconds, bytes, gbps, copy_gbps, clone_gbps, pct_of_copy and
    first_call_s (None without a first call); failures maps (norm, impl) to the error that
    stopped it (e.g. torch.compile finding no C++ compiler).
    """
    device = torch.device(device)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    bad = [p for p in passes if p not in PASSES]
    if bad or not passes:
        raise ValueError(f"passes must be a non-empty subset of {PASSES}, got {passes!r}")
    built, table, failures = {}, [], {}
    for rows, hidden in sizes:
        gen = torch.Generator().manual_seed(rows * 100_003 + hidden)
        x = (torch.randn(rows, hidden, generator=gen) * 2 + 0.5).to(device, dtype)  # (R, H)
        timing = {"warmup": 0, "repeats": repeats, "number": number}
        if min_sample_s > 0:
            one = copy_bandwidth(x.numel(), device=device, dtype=dtype, warmup=1, repeats=1)
            one_copy_s = 2 * x.numel() * x.element_size() / one
            timing["number"] = min(max_number, max(1, math.ceil(min_sample_s / one_copy_s)))
        ceiling = {"device": device, "dtype": dtype} | timing | {"warmup": 1}
        copy = copy_bandwidth(x.numel(), **ceiling)
        clone = copy_bandwidth(x.numel(), fresh=True, **ceiling)
        for norm in NORMS:
            if (norm, hidden) not in built:
                built[(norm, hidden)] = variants(norm, hidden)
            impls = built[(norm, hidden)]
            params = list(impls["nn"].parameters())  # shared by every variant
            for impl, fn in impls.items():
                for p in passes:
                    wanted = only is None or impl in only or (norm, impl) in only
                    if (norm, impl) in failures or not wanted:
                        continue
                    start, first = time.perf_counter(), None
                    try:
                        if first_call is None or impl in first_call:
                            time_norm(fn, x, params, passes=p, warmup=0, repeats=1)
                            first = time.perf_counter() - start
                        seconds = time_norm(fn, x, params, passes=p, **timing)
                    except Exception as err:  # report it, and race the others
                        failures[(norm, impl)] = f"{type(err).__name__}: {err}".splitlines()[0]
                        continue
                    moved = bytes_moved(norm, rows, hidden, itemsize=x.element_size(), passes=p)
                    table.append(
                        {
                            "norm": norm,
                            "impl": impl,
                            "rows": rows,
                            "hidden": hidden,
                            "passes": p,
                            "number": timing["number"],
                            "seconds": seconds,
                            "bytes": moved,
                            "gbps": moved / seconds / 1e9,
                            "copy_gbps": copy / 1e9,
                            "clone_gbps": clone / 1e9,
                            "pct_of_copy": 100 * moved / seconds / copy,
                            "first_call_s": first,
                        }
                    )
    return table, failures


def speedup(table, *, rows, hidden, passes, rms_impl, ln_impl) -> float:
    """time(LayerNorm, ln_impl) / time(RMSNorm, rms_impl) at one size: > 1 means RMSNorm wins."""

    def seconds(norm, impl):
        for r in table:
            key = (r["norm"], r["impl"], r["rows"], r["hidden"], r["passes"])
            if key == (norm, impl, rows, hidden, passes):
                return r["seconds"]
        raise KeyError(f"no measurement for {norm} {impl} {rows}x{hidden} {passes}")

    return seconds("layer_norm", ln_impl) / seconds("rms_norm", rms_impl)


def fastest(table, norm, *, rows, hidden, passes) -> dict:
    """The row of the fastest implementation of `norm` at one size."""
    candidates = [
        r
        for r in table
        if (r["norm"], r["rows"], r["hidden"], r["passes"]) == (norm, rows, hidden, passes)
    ]
    if not candidates:
        raise KeyError(f"no measurement for {norm} {rows}x{hidden} {passes}")
    return min(candidates, key=lambda r: r["seconds"])


# --8<-- [end:benchmark]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    n = 1024 * 4096 * 4  # bytes of one 1024 x 4096 fp32 tensor
    for norm in NORMS:
        for p in PASSES:
            print(f"{norm}, {p}: {bytes_moved(norm, 1024, 4096, passes=p) / n:.3f} x size of x")
    t = median_time(lambda: torch.ones(1000).sum(), warmup=1, repeats=3)
    print("timer gives a positive, finite median:", t > 0 and math.isfinite(t))
# --8<-- [end:demo]
