"""How fast are LayerNorm and RMSNorm? Time per call, bytes moved, achieved bandwidth.

A norm does a handful of flops per element it reads, far too few to keep the arithmetic
units busy, so its speed limit is memory traffic: the fewest bytes it must read and write,
divided by the bandwidth the machine reaches on the simplest memory-bound op there is, a
copy. This module times the implementations of both norms, counts those bytes and turns the
two into achieved bandwidth (GB/s) and a fraction of the measured copy bandwidth.

A timing on a shared machine is noisy, so every implementation is timed many times, with the
repeats of all of them interleaved, and reported as a median with its interquartile range. One
is called faster than another only when their ranges do not overlap (`compare`).

The from-scratch modules are passed in (a snippet never imports another snippet), so the
same code races snippets/layer_norm.py and snippets/rms_norm.py against torch.nn and
torch.nn.functional.
"""

# --8<-- [start:timer]
import math
import numbers
import os
import platform
import random
import statistics
import time
from typing import NamedTuple

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


def interleaved_times(calls, *, repeats: int = 15, number: int = 1, device="cpu", seed=0) -> dict:
    """{name: [seconds per call, one per round]} for a dict {name: no-argument callable}.

    Round-robin: a round times one sample (`number` back-to-back calls) of every callable,
    in a fresh random order (seeded), and `repeats` rounds are run. A burst of background load
    then falls on all of them alike, instead of on whichever was being timed at that moment.
    No warmup: make each first call (compile, allocate) before.
    """
    for name, value in (("repeats", repeats), ("number", number)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not isinstance(calls, dict) or not calls:
        raise ValueError(f"calls must be a non-empty dict of callables, got {calls!r}")
    for name, fn in calls.items():
        if not callable(fn):
            raise TypeError(f"calls[{name!r}] must be callable, got {type(fn).__name__}")
    rng = random.Random(seed)
    order, samples = list(calls), {name: [] for name in calls}
    synchronize(device)
    for _ in range(repeats):
        rng.shuffle(order)
        for name in order:
            fn = calls[name]
            start = time.perf_counter()
            for _ in range(number):
                fn()
            synchronize(device)
            samples[name].append((time.perf_counter() - start) / number)
    return samples


# --8<-- [end:timer]


# --8<-- [start:spread]
MIN_SAMPLES = 3  # with fewer, the quartiles interpolate between one or two points: no spread
FASTER, SLOWER, UNRESOLVED = "faster", "slower", "no measurable difference"
VERDICTS = (FASTER, SLOWER, UNRESOLVED)


class Spread(NamedTuple):
    """A median and the range around it (for timings: the first and third quartiles)."""

    median: float
    low: float
    high: float


def _seconds(samples, name: str) -> list:
    """The samples as a list of positive finite numbers, or a clear error."""
    if isinstance(samples, (str, bytes, dict)) or not hasattr(samples, "__iter__"):
        raise TypeError(f"{name} must be a sequence of seconds, got {type(samples).__name__}")
    values = list(samples)
    if not values:
        raise ValueError(f"{name} is empty: a spread needs at least one timing")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"{name} must hold real numbers, got {v!r}")
        if not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must hold positive finite seconds, got {v!r}")
    return values


def quartiles(samples) -> Spread:
    """Median and interquartile range of timings: Spread(median, first quartile, third).

    Half the samples lie inside the range, and one sample slowed by background load moves it
    little, unlike a min-max range. Linear interpolation between the sorted samples (numpy's
    default method), so a single sample gives a range of zero width.
    """
    xs = sorted(_seconds(samples, "samples"))

    def at(p):
        pos = p * (len(xs) - 1)
        i = math.floor(pos)
        return xs[i] if i == pos else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)

    return Spread(at(0.5), at(0.25), at(0.75))


def compare(samples_a, samples_b) -> str:
    """FASTER if a takes less time than b, SLOWER if more, UNRESOLVED if the ranges overlap.

    The rule: a is faster only when its whole interquartile range lies below b's. Ranges that
    overlap, or touch, say that no difference was measurable at this precision, whatever the
    medians say. Each side needs at least MIN_SAMPLES timings.
    """
    spreads = []
    for name, samples in (("samples_a", samples_a), ("samples_b", samples_b)):
        values = _seconds(samples, name)
        if len(values) < MIN_SAMPLES:
            raise ValueError(
                f"{name} must hold at least {MIN_SAMPLES} timings to state a spread, "
                f"got {len(values)}"
            )
        spreads.append(quartiles(values))
    a, b = spreads
    if a.high < b.low:
        return FASTER
    if b.high < a.low:
        return SLOWER
    return UNRESOLVED


def ratio_spread(numerator, denominator) -> Spread:
    """median(numerator) / median(denominator), from the far ends of the two ranges.

    low = first quartile / third quartile, high = third quartile / first quartile, so the range
    excludes 1 exactly when compare() finds a difference: a speedup t_b / t_a whose range lies
    above 1 is a measured speedup, one whose range holds 1 is not.
    """
    num, den = quartiles(numerator), quartiles(denominator)
    return Spread(num.median / den.median, num.low / den.high, num.high / den.low)


def false_difference_rate(repeats: int, *, trials: int = 2000, seed=0) -> float:
    """How often compare() calls two sets of `repeats` timings different when both come from
    one distribution (log-normal, skewed as timings are): the rule's rate of false alarms.

    Quartiles of a few samples scatter, so two ranges from one distribution can miss each
    other by chance; the rate falls as the samples grow. This is why a verdict needs many
    rounds.
    """
    for name, value, low in (("repeats", repeats, MIN_SAMPLES), ("trials", trials, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        a, b = ([rng.lognormvariate(0.0, 0.5) for _ in range(repeats)] for _ in range(2))
        hits += compare(a, b) != UNRESOLVED
    return hits / trials


def describe(verdict: str, a: str, b: str) -> str:
    """The sentence for compare(a's timings, b's timings)."""
    if verdict == FASTER:
        return f"{a} is faster than {b}"
    if verdict == SLOWER:
        return f"{a} is slower than {b}"
    if verdict == UNRESOLVED:
        return f"no difference between {a} and {b} was measurable at this precision"
    raise ValueError(f"verdict must be one of {VERDICTS}, got {verdict!r}")


# --8<-- [end:spread]


# --8<-- [start:machine]
def machine_parts(cpuinfo="/proc/cpuinfo") -> dict:
    """Where the timings ran: CPU model, logical CPUs, torch threads and version, CUDA GPU
    (None without one).

    The CPU model comes from the "model name" line of Linux's /proc/cpuinfo; elsewhere (or
    where the line is missing) from platform.processor(), then platform.machine().
    """
    if not isinstance(cpuinfo, (str, os.PathLike)):
        raise TypeError(f"cpuinfo must be a path, got {type(cpuinfo).__name__}")
    cpu = None
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    cpu = value.strip()
                    break
    except OSError:  # no such file: not Linux
        pass
    return {
        "cpu": cpu or platform.processor() or platform.machine() or "unknown CPU",
        "cores": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
    }


def machine(cpuinfo="/proc/cpuinfo") -> str:
    """machine_parts in one line of text."""
    m = machine_parts(cpuinfo)
    return ", ".join(
        [
            f"CPU {m['cpu']}",
            f"{m['cores']} logical CPUs" if m["cores"] else "logical CPU count unknown",
            f"{m['threads']} torch threads",
            f"torch {m['torch']}",
            f"GPU {m['gpu']}" if m["gpu"] else "no CUDA GPU",
        ]
    )


# --8<-- [end:machine]


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
    norm: str,
    hidden: int,
    scratch,
    *,
    eps=1e-5,
    compile=True,
    dynamic=True,
    mode=None,
    device="cpu",
    dtype=None,
):
    """{implementation: callable} for one norm, all sharing one weight (and bias).

    scratch: the from-scratch class (LayerNorm or RMSNorm), built like its nn twin.
    "compiled" (left out when compile=False) is torch.compile(module, dynamic=dynamic,
    mode=mode) of the from-scratch module; it compiles on its first call, once per grad mode.
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
        # Compiled code is kept per function, shared by every instance of the class: see
        # gpu_benchmark for a compile that each measured size gets afresh.
        variants["compiled"] = torch.compile(ours, dynamic=dynamic, mode=mode)
    return variants


def norm_call(fn, x, params, *, passes="forward", grad_y=None):
    """A no-argument function doing one call: fn(x) without autograd, or fn(x) and its backward.

    The backward asks for the gradients of x and of every parameter (what training needs),
    through torch.autograd.grad, so nothing accumulates into .grad between calls. grad_y is
    the upstream gradient (default cos(x)); pass one tensor to every call that is raced, so
    that they all read the same memory.
    """
    if passes not in PASSES:
        raise ValueError(f"passes must be one of {PASSES}, got {passes!r}")
    if grad_y is not None and (not torch.is_tensor(grad_y) or grad_y.shape != x.shape):
        got = tuple(grad_y.shape) if torch.is_tensor(grad_y) else type(grad_y).__name__
        raise ValueError(f"grad_y must be a tensor of x's shape {tuple(x.shape)}, got {got}")
    if passes == "forward":

        def call():
            with torch.no_grad():
                return fn(x)

        return call
    x = x.detach().requires_grad_()  # the caller's tensor is left alone
    inputs = (x, *params)
    if grad_y is None:
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
    passes=PASSES,
    device="cpu",
    dtype=torch.float32,
    repeats=15,
    number=1,
    min_sample_s=0.0,
    max_number=10,
    seed=0,
):
    """Time every (norm, implementation, pass) on every (rows, hidden); returns the results table.

    sizes:    [(rows, hidden), ...]
    variants: function (norm, hidden) -> {implementation: callable}, e.g. a partial of
              norm_variants; called once per (norm, hidden), so a compiled variant compiles
              once per hidden size and grad mode and serves every row count.
    only:     what to time, as implementation names or (norm, implementation) pairs
              (default: everything `variants` returns).
    At each size, every call first runs once, timed apart (the warmup; it compiles a
    torch.compile variant), then interleaved_times takes `repeats` samples of `number` calls
    of each, round-robin, together with a copy into an existing tensor (the ceiling) and into
    a new one (clone) of as many elements as x. With
    min_sample_s > 0, `number` is chosen per size instead: enough calls (at most max_number)
    that a sample lasts about min_sample_s if a call took as long as one copy of x, so that
    short calls are not timed one by one.
    Returns (table, failures): table is a list of dicts with keys norm, impl, rows, hidden,
    passes, number, samples (seconds per call, one per round), seconds (their median), bytes,
    gbps, copy_bytes, copy_samples, copy_gbps, clone_samples, clone_gbps, pct_of_copy (from the
    medians) and first_call_s; failures maps (norm, impl) to the error that stopped it (e.g.
    torch.compile finding no C++ compiler).
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
        copy_bytes = 2 * x.numel() * x.element_size()  # a copy reads and writes x once
        n = number
        if min_sample_s > 0:
            one_copy_s = copy_bytes / copy_bandwidth(
                x.numel(), device=device, dtype=dtype, warmup=1, repeats=1
            )
            n = min(max_number, max(1, math.ceil(min_sample_s / one_copy_s)))
        dst, grad_y = torch.empty_like(x), torch.cos(x)  # one upstream gradient for all
        calls = {"copy": lambda x=x, dst=dst: dst.copy_(x), "clone": x.clone}
        first = {}
        for norm in NORMS:
            if (norm, hidden) not in built:
                built[(norm, hidden)] = variants(norm, hidden)
            impls = built[(norm, hidden)]
            params = list(impls["nn"].parameters())  # shared by every variant
            for impl, fn in impls.items():
                if only is not None and impl not in only and (norm, impl) not in only:
                    continue
                for p in passes:
                    if (norm, impl) in failures:
                        break
                    call = norm_call(fn, x, params, passes=p, grad_y=grad_y)
                    start = time.perf_counter()
                    try:
                        call()
                        synchronize(device)
                    except Exception as err:  # report it, and race the others
                        failures[(norm, impl)] = f"{type(err).__name__}: {err}".splitlines()[0]
                        continue
                    first[(norm, impl, p)] = time.perf_counter() - start
                    calls[(norm, impl, p)] = call
        calls["copy"](), calls["clone"]()  # their first calls
        samples = interleaved_times(calls, repeats=repeats, number=n, device=device, seed=seed)
        copy_s = statistics.median(samples["copy"])
        clone_s = statistics.median(samples["clone"])
        for (norm, impl, p), first_s in first.items():
            if (norm, impl) in failures:  # failed on a later pass
                continue
            seconds = statistics.median(samples[(norm, impl, p)])
            moved = bytes_moved(norm, rows, hidden, itemsize=x.element_size(), passes=p)
            table.append(
                {
                    "norm": norm,
                    "impl": impl,
                    "rows": rows,
                    "hidden": hidden,
                    "passes": p,
                    "number": n,
                    "samples": samples[(norm, impl, p)],
                    "seconds": seconds,
                    "bytes": moved,
                    "gbps": moved / seconds / 1e9,
                    "copy_bytes": copy_bytes,
                    "copy_samples": samples["copy"],
                    "copy_gbps": copy_bytes / copy_s / 1e9,
                    "clone_samples": samples["clone"],
                    "clone_gbps": copy_bytes / clone_s / 1e9,
                    "pct_of_copy": 100 * moved / seconds / (copy_bytes / copy_s),
                    "first_call_s": first_s,
                }
            )
    return table, failures


def find(table, norm, impl, *, rows, hidden, passes) -> dict:
    """The table's row for one (norm, implementation) at one size and pass."""
    key = (norm, impl, rows, hidden, passes)
    for r in table:
        if (r["norm"], r["impl"], r["rows"], r["hidden"], r["passes"]) == key:
            return r
    raise KeyError(f"no measurement for {norm} {impl} {rows}x{hidden} {passes}")


def speedup(table, *, rows, hidden, passes, rms_impl, ln_impl) -> Spread:
    """time(LayerNorm, ln_impl) / time(RMSNorm, rms_impl) at one size, with its range.

    Above 1 RMSNorm was faster; the range (see ratio_spread) lies wholly above 1 only when
    compare() finds RMSNorm faster.
    """
    kw = {"rows": rows, "hidden": hidden, "passes": passes}
    ln, rms = find(table, "layer_norm", ln_impl, **kw), find(table, "rms_norm", rms_impl, **kw)
    return ratio_spread(ln["samples"], rms["samples"])


def pct_of_copy(row) -> Spread:
    """A row's achieved bandwidth as a percentage of the copy bandwidth, with its range."""
    ratio = ratio_spread(row["copy_samples"], row["samples"])  # copy time / norm time
    scale = 100 * row["bytes"] / row["copy_bytes"]
    return Spread(*(scale * v for v in ratio))


def fastest(table, norm, *, rows, hidden, passes) -> dict:
    """The row of the implementation of `norm` with the lowest median time at one size."""
    candidates = [
        r
        for r in table
        if (r["norm"], r["rows"], r["hidden"], r["passes"]) == (norm, rows, hidden, passes)
    ]
    if not candidates:
        raise KeyError(f"no measurement for {norm} {rows}x{hidden} {passes}")
    return min(candidates, key=lambda r: r["seconds"])


def fastest_group(table, norm, *, rows, hidden, passes) -> list:
    """The implementations of `norm` not measurably slower than the fastest, in table order.

    The fastest by median may win by noise alone; every implementation whose timings overlap
    its range (compare() finds no difference) shares the place.
    """
    best = fastest(table, norm, rows=rows, hidden=hidden, passes=passes)
    return [
        r["impl"]
        for r in table
        if (r["norm"], r["rows"], r["hidden"], r["passes"]) == (norm, rows, hidden, passes)
        and compare(r["samples"], best["samples"]) != SLOWER
    ]


# --8<-- [end:benchmark]


# --8<-- [start:gpu]
# How the GPU path compiles: what `torch.compile(module)` gives a user whose model runs at
# one fixed shape, made afresh for every measured size (see gpu_benchmark).
GPU_COMPILE = {"dynamic": False, "mode": "default"}
L2_ROTATION = 2  # the inputs a size rotates through hold at least this many times the L2


def l2_cache_bytes(device="cuda") -> int:
    """The L2 cache of a CUDA device, in bytes, as the driver reports it."""
    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"l2_cache_bytes needs a CUDA device, got {device}")
    return torch.cuda.get_device_properties(device).L2_cache_size


def rotation(tensor_bytes: int, l2_bytes: int, *, factor: int = L2_ROTATION) -> int:
    """How many copies of an input to cycle through so that together they hold `factor`
    times the L2 (at least 2): a call then never finds its input in the L2, left there by
    the calls before it."""
    for name, value, low in (("tensor_bytes", tensor_bytes, 1), ("l2_bytes", l2_bytes, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return max(2, math.ceil(factor * l2_bytes / tensor_bytes))


def cycling(calls):
    """One no-argument callable that runs calls[0], calls[1], ... in turn, round and round."""
    calls, turn = list(calls), [0]
    if not calls:
        raise ValueError("cycling needs at least one callable")

    def call():
        fn = calls[turn[0] % len(calls)]
        turn[0] += 1
        return fn()

    return call


def compile_counts() -> dict:
    """Graphs torch.compile has built in this process, and how many of those were
    recompilations (a cached graph's guard failed: another shape, grad mode or device)."""
    from torch._dynamo.utils import counters, guard_failures

    return {
        "graphs": counters["stats"]["unique_graphs"],
        "recompiles": sum(len(reasons) for reasons in guard_failures.values()),
    }


def event_times(calls, *, repeats: int = 15, number: int = 1, seed=0, host=None) -> dict:
    """interleaved_times on CUDA, each sample timed by two CUDA events around it.

    The events mark the GPU's own stream, so the host need not wait after every sample:
    it queues a whole round (waiting once, at the end of it), the GPU runs the kernels
    back to back, and a sample times the kernels rather than the host's launches. Unless
    the host cannot keep up: then the GPU waits between kernels and the events count
    the wait. Pass a dict as `host` to get, per call and sample, the host's seconds to
    launch it: where they come near the GPU's, the sample timed the launches.
    """
    for name, value in (("repeats", repeats), ("number", number)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not torch.cuda.is_available():
        raise RuntimeError("event_times needs CUDA: torch.cuda.is_available() is False")
    rng = random.Random(seed)
    order, events = list(calls), {name: [] for name in calls}
    torch.cuda.synchronize()
    for _ in range(repeats):
        rng.shuffle(order)
        for name in order:
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            launch = time.perf_counter()
            for _ in range(number):
                calls[name]()
            if host is not None:
                host.setdefault(name, []).append((time.perf_counter() - launch) / number)
            end.record()
            events[name].append((start, end))
        torch.cuda.synchronize()
    # elapsed_time is in milliseconds
    return {n: [s.elapsed_time(e) / 1e3 / number for s, e in ev] for n, ev in events.items()}


def gpu_benchmark(
    sizes,
    variants,
    *,
    dtypes=(torch.float32, torch.bfloat16),
    passes=PASSES,
    device="cuda",
    repeats=15,
    min_sample_s=2e-3,
    max_number=100,
    l2_bytes=None,
    max_copies=64,
    seed=0,
):
    """benchmark, done right on a GPU. Returns (table, failures) as benchmark does.

    variants: function (norm, hidden, dtype) -> {implementation: callable}, e.g. a partial
              of norm_variants with dynamic=False; called afresh for every dtype and size.
    For every dtype and size: torch._dynamo.reset(), so that no compiled code made for
    another size, grad mode or instance serves this one (compiled code is cached per
    function, shared by every instance of a class); then new variants, whose compiled ones
    compile and autotune on their first calls, at exactly this shape. Inputs, upstream
    gradients and the copy's buffers are cycled through `rotation` copies (at most
    max_copies: an input so small that it needs more is timed by its launches anyway), so
    no call reads what the L2 kept from the call before. On CUDA each sample is timed with CUDA
    events (event_times), elsewhere with the wall clock (interleaved_times); a sample is
    enough calls (at most max_number) to last about min_sample_s if a call took as long
    as a copy of x. Each row adds to benchmark's keys: dtype, rotate (copies cycled), timer,
    host_samples (on CUDA, else None: the host's seconds to launch one call, per sample),
    and compile: None, or for a torch.compile variant {dynamic, mode, graphs, recompiles}
    built while warming it up, and timed_graphs, any built at this size while timing
    (0 when every timed call ran the compiled code it warmed up).
    """
    device = torch.device(device)
    bad = [p for p in passes if p not in PASSES]
    if bad or not passes:
        raise ValueError(f"passes must be a non-empty subset of {PASSES}, got {passes!r}")
    for dtype in dtypes:
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtypes must hold floating-point torch.dtypes, got {dtype!r}")
    if l2_bytes is None:
        l2_bytes = l2_cache_bytes(device)  # off CUDA: an error asking for l2_bytes
    table, failures = [], {}
    for dtype, (rows, hidden) in ((d, s) for d in dtypes for s in sizes):
        torch._dynamo.reset()
        gen = torch.Generator().manual_seed(rows * 100_003 + hidden)
        x0 = (torch.randn(rows, hidden, generator=gen) * 2 + 0.5).to(device, dtype)  # (R, H)
        k = min(max_copies, rotation(x0.numel() * x0.element_size(), l2_bytes))
        xs = [x0] + [x0.roll(i, dims=0) for i in range(1, k)]  # k copies, each its own memory
        grads = [torch.cos(x) for x in xs]
        calls, first, compiled = {}, {}, {}
        for norm in NORMS:
            impls = variants(norm, hidden, dtype)
            params = list(impls["nn"].parameters())
            for impl, fn in impls.items():
                before = compile_counts()
                for p in passes:
                    call = cycling(
                        norm_call(fn, x, params, passes=p, grad_y=g)
                        for x, g in zip(xs, grads, strict=True)
                    )
                    try:
                        first[(norm, impl, p)] = warm_up(call, k, device)
                    except Exception as err:  # e.g. out of memory: report it, race the rest
                        failures[(norm, impl, dtype, rows, hidden)] = failure(err)
                        break
                    calls[(norm, impl, p)] = call
                if isinstance(fn, torch._dynamo.eval_frame.OptimizedModule):
                    warm = compile_counts()
                    compiled[(norm, impl)] = {key: warm[key] - before[key] for key in warm}
        # a pass failed here: none of that variant's passes is shown
        first = {
            key: s for key, s in first.items() if (*key[:2], dtype, rows, hidden) not in failures
        }
        table += time_rows(
            calls, first, compiled, xs, bytes_moved, device=device, repeats=repeats,
            min_sample_s=min_sample_s, max_number=max_number, seed=seed,
        )  # fmt: skip
        del xs, grads, calls, call, x0  # before the next size allocates
    return table, failures


def failure(err: Exception) -> str:
    """An error in one line, as a failures entry reports it."""
    return f"{type(err).__name__}: {err}".splitlines()[0]


def warm_up(call, k: int, device) -> float:
    """Seconds for k + 1 calls, every rotated copy once: the first compiles and autotunes."""
    start = time.perf_counter()
    for _ in range(k + 1):
        call()
    synchronize(device)
    return time.perf_counter() - start


def time_rows(
    calls, first, compiled, sources, bytes_of, *, device="cuda", repeats=15,
    min_sample_s=2e-3, max_number=100, seed=0,
):  # fmt: skip
    """Time warmed-up calls against a copy of the same tensors, interleaved; a row each.

    calls: {(norm, impl, passes): no-argument callable, cycling through rotated inputs};
    first: {(norm, impl, passes): warm-up seconds}, the calls to report; compiled:
    {(norm, impl): graphs and recompiles built while warming up}; sources: the rotated
    copies of x, which the copy cycles through too; bytes_of(norm, rows, hidden, *,
    itemsize, passes): the bytes a call must move, as bytes_moved gives them. On CUDA each
    sample is timed with CUDA events (event_times), elsewhere with the wall clock
    (interleaved_times); a sample is enough calls (at most max_number) to
    last about min_sample_s if a call took as long as a copy of x.
    """
    device = torch.device(device)
    cuda = device.type == "cuda"

    def times(calls, host=None, **kw):
        if cuda:
            return event_times(calls, host=host, **kw)
        return interleaved_times(calls, device=device, **kw)

    x0 = sources[0]
    rows, hidden = x0.shape
    dsts = [torch.empty_like(x0) for _ in sources]
    copies = [lambda s=s, d=d: d.copy_(s) for s, d in zip(sources, dsts, strict=True)]
    calls = {"copy": cycling(copies), **calls}
    calls["copy"]()
    warm = compile_counts()
    one_copy_s = statistics.median(times({"copy": calls["copy"]}, repeats=3)["copy"])
    n = min(max_number, max(1, math.ceil(min_sample_s / one_copy_s)))
    host = {}  # on CUDA: the host's seconds per call, to tell launch-bound samples
    samples = times(calls, host=host, repeats=repeats, number=n, seed=seed)
    timed_graphs = compile_counts()["graphs"] - warm["graphs"]
    copy_s, copy_bytes = statistics.median(samples["copy"]), copy_bytes_of(x0)
    table = []
    for (norm, impl, p), first_s in first.items():
        seconds = statistics.median(samples[(norm, impl, p)])
        moved = bytes_of(norm, rows, hidden, itemsize=x0.element_size(), passes=p)
        info = compiled.get((norm, impl))
        table.append(
            {
                "norm": norm,
                "impl": impl,
                "rows": rows,
                "hidden": hidden,
                "dtype": str(x0.dtype).removeprefix("torch."),
                "passes": p,
                "number": n,
                "samples": samples[(norm, impl, p)],
                "seconds": seconds,
                "bytes": moved,
                "copy_bytes": copy_bytes,
                "copy_samples": samples["copy"],
                "pct_of_copy": 100 * moved / seconds / (copy_bytes / copy_s),
                "first_call_s": first_s,
                "rotate": len(sources),
                "timer": "cuda events" if cuda else "wall clock",
                "host_samples": host.get((norm, impl, p)) if cuda else None,
                "compile": None
                if info is None
                else GPU_COMPILE | info | {"timed_graphs": timed_graphs},
            }
        )
    return table


def copy_bytes_of(x: torch.Tensor) -> int:
    """Bytes a copy of x moves: it reads and writes every byte once."""
    return 2 * x.numel() * x.element_size()


# --8<-- [end:gpu]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    n = 1024 * 4096 * 4  # bytes of one 1024 x 4096 fp32 tensor
    for norm in NORMS:
        for p in PASSES:
            print(f"{norm}, {p}: {bytes_moved(norm, 1024, 4096, passes=p) / n:.3f} x size of x")
    t = median_time(lambda: torch.ones(1000).sum(), warmup=1, repeats=3)
    print("timer gives a positive, finite median:", t > 0 and math.isfinite(t))
    a, b, c = [1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3], [1.1, 1.2, 1.3, 1.4]
    print(describe(compare(a, b), "a", "b"), "|", describe(compare(a, c), "a", "c"))
# --8<-- [end:demo]
