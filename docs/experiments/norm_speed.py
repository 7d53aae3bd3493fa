# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
#   resnorm:
#     runs_alone: true
# ---

# %% [markdown]
# # Making norms fast
#
# How long does a LayerNorm or an RMSNorm take, and how close does it get to
# what the machine can do? This page races four implementations of each norm:
# the from-scratch modules of this handbook (`snippets/layer_norm.py`,
# `snippets/rms_norm.py`), `nn.LayerNorm` / `nn.RMSNorm`, `F.layer_norm` /
# `F.rms_norm`, and `torch.compile` of the from-scratch modules. It times them
# on two tensor sizes, forward alone and forward plus backward, and turns
# every time into an achieved bandwidth, compared with the bandwidth of a plain
# copy measured on the same machine in the same run. The code is
# `snippets/norm_speed.py`.
#
# **Timings vary from run to run and from machine to machine.** Every time,
# bandwidth, speedup and verdict on this page was measured when this page was
# built, on the machine that built it (named below), which may have been
# running other work at the same time. So every implementation is timed many
# times, with the repeats of all of them interleaved so that background load
# falls on all of them alike, and every timing is given as a **median with its
# interquartile range** (the middle half of the samples). **A verdict says
# that one is faster than another only when the ranges of their times do not
# overlap**; otherwise it says that no difference was measurable at this
# precision. A
# ratio such as a speedup carries its range too, and that range excludes 1
# exactly when the verdict finds a difference. The non-timing numbers (bytes,
# operation counts, numerical errors) are the same on every run.

# %% [markdown]
# ## What we found
#
# ### GPU
#
# [[gpu-results:norm_speed-verdict]]
#
# Every size, dtype and pass:
#
# [[gpu-results:norm_speed]]
#
# GPU figures come from `make bench-gpu`, not from the run of this page,
# which is built on a CPU ("On a GPU" below says how they are measured). The
# rule is the CPU's, applied to the ranges the tables print: each figure's
# range is the interquartile range of its own times, as shares of the copy's
# median, and an implementation is put after the fastest only where its range
# overlaps none of theirs.
#
# **Use the bold cells.** For each dtype, size and pass, they name the
# fastest implementation and those not measurably slower than it: the ones to
# use in a model of that shape. A norm near 100 % of the copy has nothing
# left to gain on its own; beyond that, only fusing more work into the same
# pass over memory helps, such as the residual add before the norm:
# [RMSNorm on a GPU](../../fast/rmsnorm-gpu/) fuses it in a Triton kernel
# and measures that kernel the same way.
#
# **How a benchmark compiles and times decides its verdict.** An earlier
# version of this page timed its compiled modules on a GPU as it times them
# on the CPU. The same modules, timed that way in the same run:
#
# [[gpu-results:old_method]]
#
# What that way measures instead of the kernels a model gets:
#
# - Compiled code is kept per function and shared by every instance of a
#   class: a second `RMSNorm` of the same shape runs the graph compiled for
#   the first (counted in "On a GPU" below), and past
#   `torch._dynamo.config.recompile_limit` entries the function runs
#   uncompiled.
# - With `dynamic=True` one kernel, tuned at the first row count it meets,
#   serves every row count.
# - A lone compiled call passes Dynamo's guards and Inductor's Python wrapper
#   on the host before its kernels start. Where that takes about as long as
#   the kernels, a wall clock over back-to-back calls times the host, and a
#   compiled LayerNorm and a compiled RMSNorm come out alike. In a model
#   compiled whole, the guards are checked once per call of the model, not
#   once per norm. The GPU tables mark with † the figures where the host's
#   time per call comes near the GPU's.
# - At 2048 × 1024 in float32, $x$ fits in the L2 cache of a large GPU, so a
#   call on the same input as the last one reads much of it from the cache.

# %% [markdown]
# ### CPU
#
# Every ordering below is the verdict of the rule (ranges that do not
# overlap), printed by the cells below and in the summary at the end of the
# page; the prose says what the operation counts predict, not what one run
# measured.
#
# **The formula is not the speed.** RMSNorm does fewer flops per element, yet
# both norms sit far below the ridge point: memory traffic sets their time.
# The operation counts predict, before any clock is read, that which norm is
# faster depends on the implementation:
#
# - `nn.LayerNorm` and `F.layer_norm` run one fused kernel forward and one
#   backward, with the ideal traffic.
# - On the CPU, `nn.RMSNorm` and `F.rms_norm` run the same chain of
#   elementwise operations and reductions as the from-scratch RMSNorm,
#   several times the ideal traffic, so the counts predict LayerNorm ahead
#   in "nn vs nn" and "F vs F"; the verdicts in the race below say whether
#   this run measured it. The fused RMSNorm kernels PyTorch has added are for
#   CUDA and MPS.
# - The from-scratch LayerNorm moves more bytes than the from-scratch RMSNorm
#   (the counts below): subtracting the mean costs a reduction and more full
#   elementwise passes. Between these two eager modules the counts predict
#   RMSNorm ahead; the "scratch vs scratch" line gives the measured saving,
#   its range and its verdict. That is the situation the paper measured, in
#   frameworks that ran each step of the formula as its own kernel.
# - `torch.compile` turns each from-scratch module into a few fused kernels
#   (listed below), so the two compiled norms move almost the same bytes;
#   the verdict of "compiled vs compiled" says whether any difference was
#   measurable here.
#
# **On "7–64 %".** It is not a FLOP count, and it is not a property of the
# norm: it is the running time of whole models in 2019 frameworks. For the
# norm alone, the verdict line compares the fastest RMSNorm with the fastest
# LayerNorm on this machine, the comparison a practitioner can choose. In a
# Transformer the norm is also a small part of the time: the matrix products
# next to it do $O(H)$ flops per element of the residual stream against the
# norm's handful, so a saving on the norm shrinks further in a whole model.
# For Transformers the paper's own figure is the 6.9 % of Transformer-base;
# 64 % belongs to pRMSNorm on a recurrent model. And "RMSNorm makes inference
# more efficient" holds only where the RMSNorm kernel is as good as the
# LayerNorm kernel it replaces; `nn.RMSNorm` on a CPU runs a chain of
# operations that moves several times the bytes of `nn.LayerNorm`'s one
# kernel.
#
# **On the goal.** The goal lines say, at the large size, whether the
# fastest RMSNorm reached half the copy bandwidth, first with the default
# allocator, then with freed memory kept for reuse; where the range of its
# percentage holds 50 %, the question is not decided. Where it falls short,
# the causes are those this page measures: the page faults of the fresh
# memory each large output lands on ("The allocator" below); an eager chain's
# extra passes over memory (its "at best" fraction); a compiled backward that
# reads $x$ and $\partial L/\partial y$ twice, because it sums
# $\partial L/\partial\gamma$ over all rows before it computes
# $\partial L/\partial x$ (its source is what `run_and_get_code` returns);
# and few cores shared with other work, which make short timings coarse and
# move the copy bandwidth from run to run. That is why every timing carries
# its range.

# %% [markdown]
# ## What we expected
#
# **The claim.** Articles on Pre-LN Transformers often say that RMSNorm "cuts
# 7–64 % of the normalization FLOPs", makes inference more efficient, and is
# what makes large models fast. The figure comes from Zhang & Sennrich 2019
# ([arXiv 1910.07467](https://arxiv.org/abs/1910.07467)), whose abstract says
# RMSNorm "reduces the running time by 7%∼64% on different models". It is a
# running-time reduction of **whole models** (in TensorFlow, Theano and
# PyTorch, on GPUs), not a FLOP count of the norm: in the paper's result
# tables (see
# [RMSNorm in released models](../../reference/rmsnorm-models/#is-rmsnorm-what-makes-llms-fast)
# and the sources below), the Transformer-base model saves 6.9 % (the "7 %"),
# and the "64 %" is pRMSNorm, the partial variant, on a GRU order-embedding
# model (63.9 %); plain RMSNorm peaks at 40.8 %.
#
# **FLOPs.** Per element of $x$, the LayerNorm forward adds for the mean,
# subtracts it, squares, adds for the variance, multiplies by
# $1/\sqrt{\sigma^2+\varepsilon}$, by $\gamma$, and adds $\beta$; RMSNorm
# squares, adds, multiplies by $1/\mathrm{RMS}$ and by $\gamma$. RMSNorm does
# fewer flops per element (counted in the first code cell), but a norm is
# **memory-bound**: it does about one flop per byte it moves, while a CPU core
# or a GPU can do many flops in the time it takes to move one byte (measured
# below as the "ridge point"). Its time is therefore set by the bytes it reads
# and writes, and those are almost the same for both norms: read $x$, write
# $y$, plus a vector or two of parameters.
#
# **So we expected** a well-implemented RMSNorm and a well-implemented
# LayerNorm to take about the same time, both close to a copy of $x$, and any
# large difference between them to come from **how many passes over memory an
# implementation makes**, not from the formula. PyTorch runs LayerNorm as
# one dedicated kernel (`native_layer_norm`, seen below); its fused RMSNorm
# kernels are recent (CUDA: pytorch/pytorch PR #153666, 2025; MPS:
# PR #145301), so on a CPU `nn.RMSNorm` may run as a chain of elementwise
# operations. Eager from-scratch code runs each operation of its formula as
# its own pass over memory; `torch.compile` can fuse them.
#
# **The goal** set for this page: the fastest RMSNorm reaches at least half of
# the measured copy bandwidth at the large size on the CPU.

# %% [markdown]
# ## Settings
#
# - Inputs $x$ of shape (rows, hidden) = (2048, 1024) and (4096, 4096),
#   float32: 8 and 64 MiB. The first is small enough for a last-level cache
#   to hold much of it. The second is the "large size": many times a core's
#   L2 cache, and above the size from which the C library's `malloc` hands
#   out fresh memory on every request by default (see "The allocator"
#   below). The caches of the machine are printed below; a last-level cache
#   shared with other work may hold part of them. Only the large size
#   decides the verdicts.
# - $x = 2\,\mathcal{N}(0, 1) + 0.5$, seeded from the shape; the upstream
#   gradient is $\cos(x)$, one tensor for every call at a size. Weights
#   uniform in $[0.5, 1.5]$ and LayerNorm's bias uniform in $[-0.5, 0.5]$,
#   seeded from hidden; every implementation of a norm shares the same
#   parameter tensors.
# - $\varepsilon = 10^{-5}$ for both norms (`nn.RMSNorm`'s default would be the
#   float32 machine epsilon; the value does not change the speed).
# - **forward**: one call under `torch.no_grad()`. **forward+backward**: one
#   call and `torch.autograd.grad` with respect to $x$ and every parameter.
# - Timing, per size: every implementation and pass first runs once, timed
#   apart (for the `torch.compile` variant this call compiles it). Then come
#   15 rounds; a round takes one sample of every implementation, pass and of
#   the two copies below, in an order shuffled anew each round (seeded). A
#   sample is one call (a GPU is timed otherwise: see "On a GPU"). Reported:
#   the median of the 15
#   samples and their interquartile range, written "median (first
#   quartile–third quartile)". Fewer samples would make the quartiles scatter
#   so much that the rule below would often call two runs of the same code
#   different (its rate of such false alarms is computed below).
# - Copy bandwidth: `dst.copy_(src)` on as many elements as $x$, counted as
#   2 × size (read + write), timed in the same rounds as the norms; and
#   `src.clone()`, a copy into a tensor allocated on every call, as a norm's
#   output is.
# - `torch.compile(module, dynamic=True)` with the default Inductor backend:
#   one compilation per norm, hidden size and grad mode, serving every row
#   count. Its compile time is reported.
# - Threads: PyTorch's default, printed below; nothing is changed.
# - Memory: the C library's default `malloc` settings, until the section
#   "The allocator", which changes them for the rest of the notebook and
#   measures the large size again.
# - Seed 0 for anything else.

# %% tags=["collapse"]
import itertools
import mmap
import re
import time
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from IPython.display import display
from matplotlib.ticker import FuncFormatter, LogLocator

from snippets.layer_norm import LayerNorm
from snippets.norm_speed import (
    FASTER,
    FORWARD_FLOPS_PER_ELEMENT,
    IMPLEMENTATIONS,
    NORMS,
    PASSES,
    SLOWER,
    UNRESOLVED,
    Spread,
    benchmark,
    bytes_moved,
    compare,
    compile_counts,
    describe,
    false_difference_rate,
    fastest,
    fastest_group,
    find,
    gpu_benchmark,
    interleaved_times,
    keep_freed_memory,
    machine,
    machine_parts,
    max_error,
    minor_page_faults,
    norm_call,
    norm_variants,
    op_traffic,
    pct_of_copy,
    quartiles,
    ratio_spread,
    speedup,
)
from snippets.rms_norm import RMSNorm

torch.manual_seed(0)
SIZES = [(2048, 1024), (4096, 4096)]
LARGE = SIZES[-1:]
LARGEST = SIZES[-1]
REPEATS = 15  # rounds: samples per implementation, pass and size
DTYPE = torch.float32
SCRATCH = {"layer_norm": LayerNorm, "rms_norm": RMSNorm}
NAMES = {
    ("layer_norm", "scratch"): "LayerNorm from scratch",
    ("layer_norm", "nn"): "nn.LayerNorm",
    ("layer_norm", "F"): "F.layer_norm",
    ("layer_norm", "compiled"): "compiled LayerNorm",
    ("rms_norm", "scratch"): "RMSNorm from scratch",
    ("rms_norm", "nn"): "nn.RMSNorm",
    ("rms_norm", "F"): "F.rms_norm",
    ("rms_norm", "compiled"): "compiled RMSNorm",
}


def cache_sizes():
    """Data cache sizes of cpu0, from Linux's /sys when it exists."""
    caches = []
    try:
        for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text()
            if kind.strip() != "Instruction":
                caches.append(f"L{level} {(index / 'size').read_text().strip()}")
    except OSError:
        pass
    return ", ".join(caches) or "unknown"


MACHINE = machine()
print("measured on:", MACHINE)
print(f"caches per core or shared (cpu0): {cache_sizes()}")
for norm, flops in FORWARD_FLOPS_PER_ELEMENT.items():
    print(f"{norm}: {flops} flops per element, forward; {flops / 8:.2f} flop per byte in fp32")
fewer = 1 - FORWARD_FLOPS_PER_ELEMENT["rms_norm"] / FORWARD_FLOPS_PER_ELEMENT["layer_norm"]
print(f"RMSNorm does {fewer:.0%} fewer flops per element than LayerNorm")

# %% [markdown]
# ## The bytes we count
#
# A call's achieved bandwidth is the **fewest bytes it must move** divided by
# its time (`bytes_moved` in the snippet). For $x$ of $R \times H$ elements of
# $b$ bytes:
#
# - **forward** reads $x$ and $\gamma$ (and $\beta$), and writes $y$;
# - **forward, when training**, also writes the per-row statistics kept for
#   the backward pass (LayerNorm: the mean and $1/\sigma$; RMSNorm:
#   $1/\mathrm{RMS}$), in float32;
# - **backward** reads $x$, $\partial L/\partial y$, the statistics and
#   $\gamma$, and writes $\partial L/\partial x$ and $\partial L/\partial\gamma$
#   (and $\partial L/\partial\beta$).
#
# So forward moves $2RHb$ bytes plus the parameters, and forward+backward
# $5RHb$ plus small terms: $\partial L/\partial x$ needs both $x$ (to rebuild
# $\hat x$ from the saved statistics) and $\partial L/\partial y$. This is the
# traffic of an ideal implementation that reads each tensor once; one that makes
# more passes moves more bytes, which shows up as a lower achieved bandwidth
# by this count. A copy of $x$ moves $2RHb$, the same as an ideal forward.

# %%
rows, hidden = LARGEST
size = rows * hidden * DTYPE.itemsize
for norm in NORMS:
    for p in PASSES:
        moved = bytes_moved(norm, rows, hidden, itemsize=DTYPE.itemsize, passes=p)
        print(f"{norm:10} {p:16}: {moved:>11,} bytes = {moved / size:.3f} x the size of x")

# %% [markdown]
# ## What each eager implementation runs
#
# Before timing anything: which operations does one eager call run, and how
# many bytes do they move? `op_traffic` records every ATen operation that
# reads or writes a tensor as large as $x$ (with a `TorchDispatchMode`) and
# adds up those tensors. When $x$ is far larger than the caches, nothing stays
# in cache from one operation to the next, so this is what the call moves;
# the ideal count divided by it is then the largest fraction of copy
# bandwidth the implementation can reach.

# %%
probe = torch.randn(64, 1024, generator=torch.Generator().manual_seed(0))
unit = probe.numel() * probe.element_size()
ceiling = {}  # (norm, impl, passes) -> ideal bytes / eager bytes
for norm in NORMS:
    variants = norm_variants(norm, 1024, SCRATCH[norm], compile=False)
    params = list(variants["nn"].parameters())
    for impl in ("scratch", "nn", "F"):
        for p in PASSES:
            ops = op_traffic(variants[impl], probe, params, passes=p)
            moved = sum(b for _, b in ops) / unit
            ideal = bytes_moved(norm, *probe.shape, passes=p) / unit
            ceiling[(norm, impl, p)] = ideal / moved
            names = " ".join(name for name, _ in ops)
            print(f"{NAMES[(norm, impl)]:23} {p:16} {len(ops):2} ops, {moved:4.0f}x size of x")
            print(f"{'':23} {names}")

# %% [markdown]
# The fused `native_layer_norm` kernels move the ideal traffic. Every other
# eager line above is a chain of operations, each one a full pass over memory,
# and several write a temporary as large as $x$ that the next one reads back.
#
# `torch.compile` replaces such a chain with generated kernels. The next cell
# compiles the from-scratch modules once on a small input and lists the
# kernels Inductor generated (with `torch._inductor.utils.run_and_get_code`,
# a testing helper of PyTorch; if it is missing, the cell says so).

# %%
compile_seconds = {}
try:
    from torch._inductor.utils import run_and_get_code
except ImportError as err:
    run_and_get_code = None
    print(f"kernels not listed: {err}")
for norm in NORMS:
    variants = norm_variants(norm, 1024, SCRATCH[norm])
    params = list(variants["nn"].parameters())
    for p in PASSES if run_and_get_code else ():
        call = norm_call(variants["compiled"], probe, params, passes=p)
        start = time.perf_counter()
        try:
            _, sources = run_and_get_code(call)
        except Exception as err:  # e.g. no C++ compiler: the benchmark will say so too
            print(f"compiled {norm:10} {p:16}: failed ({type(err).__name__}: {err})")
            continue
        finally:
            compile_seconds[(norm, p)] = time.perf_counter() - start
        kernels = [k for s in sources for k in re.findall(r"^(\w+) = async_compile", s, re.M)]
        print(f"compiled {norm:10} {p:16}: {len(kernels)} kernel(s): {', '.join(kernels)}")

# %% [markdown]
# ## Same numbers from every implementation
#
# A race is fair only if every runner computes the same function. For each
# norm and hidden size, every implementation's output and gradients (with
# respect to $x$ and the parameters) are compared with `nn.LayerNorm` /
# `nn.RMSNorm` on a small input. These are also the objects timed below; the
# first call of each compiled one compiles it.

# %%
built = {}
for hidden in sorted({h for _, h in SIZES}):
    x = 2 * torch.randn(16, hidden, generator=torch.Generator().manual_seed(hidden)) + 0.5
    for norm in NORMS:
        variants = norm_variants(norm, hidden, SCRATCH[norm], device="cpu")
        start = time.perf_counter()
        try:
            errors = max_error(variants, x)
        except Exception as err:  # torch.compile could not build its kernels here
            print(f"compiled {norm} left out: {type(err).__name__}: {err}".splitlines()[0])
            del variants["compiled"]
            errors = max_error(variants, x)
        compile_seconds[(norm, hidden)] = time.perf_counter() - start
        built[(norm, hidden)] = variants
        same = {impl: err < 1e-4 for impl, err in errors.items()}
        print(f"{norm:10} hidden {hidden}: same as nn (max |diff| < 1e-4): {same}")
        assert all(same.values()), errors
total_compile = sum(compile_seconds.values())
print(f"time spent compiling (and checking) so far: {total_compile:.1f} s")

# %% [markdown]
# ## The race, on the CPU
#
# Each size starts with its copy bandwidth, and with the bandwidth of a copy
# into a new tensor (`clone`) as a percentage of it. Each line then gives, per
# size, the time per call as a median with its interquartile range (the
# ranges the verdicts compare), and the achieved bandwidth (by the ideal byte
# count) as a percentage of the copy bandwidth, with the range that the
# quartiles of both timings allow.


# %% tags=["collapse"]
def ms(samples):
    q = quartiles(samples)
    return f"{q.median * 1e3:.1f} ({q.low * 1e3:.1f}–{q.high * 1e3:.1f}) ms"


def pct(s: Spread):
    return f"{s.median:.0f}% ({s.low:.0f}–{s.high:.0f}%)"


def times(s: Spread):
    return f"{s.median:.2f}× ({s.low:.2f}–{s.high:.2f})"


def copy_gbps(row):
    q = quartiles(row["copy_samples"])  # the fastest copy time gives the highest bandwidth
    b = row["copy_bytes"] / 1e9
    return Spread(b / q.median, b / q.high, b / q.low)


def clone_pct(row):
    return Spread(*(100 * v for v in ratio_spread(row["copy_samples"], row["clone_samples"])))


def print_table(table):
    sizes = sorted({(r["rows"], r["hidden"]) for r in table}, key=lambda s: s[0] * s[1])
    ceil = {(r["rows"], r["hidden"]): r for r in table}  # a row of each size: its copies

    def line(label, cells):
        print(f"{label:24}" + "".join(f"{c:>42}" for c in cells))

    for p in PASSES:
        print(f"{p}: time per call | % of copy bandwidth; median (interquartile range)")
        line("", [f"{r} x {h}" for r, h in sizes])
        gbps = [copy_gbps(ceil[s]) for s in sizes]
        line("copy bandwidth", [f"{g.median:.1f} ({g.low:.1f}–{g.high:.1f}) GB/s" for g in gbps])
        line("copy to a new tensor", [pct(clone_pct(ceil[s])) for s in sizes])
        for norm in NORMS:
            for impl in IMPLEMENTATIONS:
                cells = {
                    (r["rows"], r["hidden"]): r
                    for r in table
                    if (r["norm"], r["impl"], r["passes"]) == (norm, impl, p)
                }
                if cells:
                    line(
                        NAMES[(norm, impl)],
                        [
                            f"{ms(c['samples'])} {pct(pct_of_copy(c)):>15}"
                            if (c := cells.get(s))
                            else "-"
                            for s in sizes
                        ],
                    )
        print()


start = time.perf_counter()
table, failures = benchmark(SIZES, lambda norm, hidden: built[(norm, hidden)], repeats=REPEATS)
bench_seconds = time.perf_counter() - start
for (norm, impl), why in failures.items():
    print(f"{NAMES[(norm, impl)]} could not run and is left out: {why}")
print_table(table)
first = sum(r["first_call_s"] for r in table if r["impl"] == "compiled")
print(f"benchmark: {bench_seconds:.0f} s; first calls of the compiled variants: {first:.1f} s")
compiled_s = total_compile + first
print(f"compiling in total, before and during the benchmark (one measurement): {compiled_s:.1f} s")


# %% [markdown]
# ## Roofline view
#
# For a memory-bound operation the roof is a bandwidth, not a flop rate. Each
# panel plots the achieved bandwidth of every implementation against the size
# of $x$, under the copy bandwidth of the same size (black, dotted): the
# ceiling. The grey dashed line is the copy into a new tensor. Each point is a
# median; its bar spans the interquartile range. The small size can beat the
# large-size ceiling because $x$ then fits in cache.


# %% alt="GB/s of each LayerNorm and RMSNorm version vs size, under the copy line" tags=["collapse"]
def roofline(table, title):
    sizes = sorted({(r["rows"], r["hidden"]) for r in table}, key=lambda s: s[0] * s[1])
    labels = [f"{r}x{h}\n{r * h * DTYPE.itemsize / 2**20:.0f} MiB" for r, h in sizes]
    ceil = {(r["rows"], r["hidden"]): r for r in table}
    styles = {
        "scratch": ("o-", "from scratch"),
        "nn": ("s-", "nn.LayerNorm / nn.RMSNorm"),
        "F": ("^--", "F.layer_norm / F.rms_norm"),
        "compiled": ("D-", "torch.compile of the from-scratch module"),
    }
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharey=True, constrained_layout=True)
    for i, p in enumerate(PASSES):
        for j, norm in enumerate(NORMS):
            ax = axes[i, j]
            xs = list(range(len(sizes)))
            ax.plot(xs, [ceil[s]["copy_gbps"] for s in sizes], "k:", lw=2.5, label="copy (ceiling)")
            clone = [ceil[s]["clone_gbps"] for s in sizes]
            ax.plot(xs, clone, "--", color="grey", label="copy to a new tensor")
            for impl in IMPLEMENTATIONS:
                pts = {
                    (r["rows"], r["hidden"]): r
                    for r in table
                    if (r["norm"], r["impl"], r["passes"]) == (norm, impl, p)
                }
                at = [k for k, s in enumerate(sizes) if s in pts]
                q = [quartiles(pts[sizes[k]]["samples"]) for k in at]
                gb = [pts[sizes[k]]["bytes"] / 1e9 for k in at]
                mid = [b / t.median for b, t in zip(gb, q, strict=True)]
                bars = [
                    [m - b / t.high for m, b, t in zip(mid, gb, q, strict=True)],
                    [b / t.low - m for m, b, t in zip(mid, gb, q, strict=True)],
                ]
                style, label = styles[impl]
                ax.errorbar(at, mid, yerr=bars, fmt=style, capsize=3, label=label)
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1, 2, 5)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            ax.set_xticks(xs, labels)
            ax.set_title(f"{'LayerNorm' if norm == 'layer_norm' else 'RMSNorm'}, {p}")
            ax.set_xlabel("x: rows x hidden, float32")
            if j == 0:
                ax.set_ylabel("achieved bandwidth, GB/s\n(ideal bytes / time)")
            ax.grid(True, which="both", alpha=0.3)
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=3, fontsize=9)
    fig.suptitle(title)
    plt.show()


roofline(table, f"CPU, {torch.get_num_threads()} threads: achieved bandwidth under the copy roof")

# %% [markdown]
# The ridge point of the roofline, measured here: the flop rate of a float32
# matrix product divided by the copy bandwidth at the largest size. An
# operation with fewer flops per byte than the whole range of the ridge point
# is limited by memory.

# %%
largest = next(r for r in table if (r["rows"], r["hidden"]) == LARGEST)
copy_large = copy_gbps(largest)
n = 1024
a = torch.ones(n, n)
a @ a  # first call
matmul_s = interleaved_times({"matmul": lambda: a @ a}, repeats=REPEATS)["matmul"]
q, gflop = quartiles(matmul_s), 2 * n**3 / 1e9
flops = Spread(gflop / q.median, gflop / q.high, gflop / q.low)
ridge = Spread(
    *(2 * n**3 / largest["copy_bytes"] * r for r in ratio_spread(largest["copy_samples"], matmul_s))
)
print(
    f"copy bandwidth at {LARGEST[0]} x {LARGEST[1]}: {copy_large.median:.1f} "
    f"({copy_large.low:.1f}–{copy_large.high:.1f}) GB/s"
)
print(f"float32 matmul {n} x {n}: {flops.median:.0f} ({flops.low:.0f}–{flops.high:.0f}) GFLOP/s")
print(f"ridge point: {ridge.median:.1f} ({ridge.low:.1f}–{ridge.high:.1f}) flop per byte")
for norm, f in FORWARD_FLOPS_PER_ELEMENT.items():
    print(f"{norm}: {f / 8:.2f} flop per byte -> memory-bound: {f / 8 < ridge.low}")

# %% [markdown]
# ## RMSNorm against LayerNorm
#
# The paper reports the **running time saved**, $1 - t_\text{RMSNorm} /
# t_\text{LayerNorm}$; the lines below give it for the same implementation of
# both norms, and for the fastest RMSNorm against the fastest LayerNorm (the
# lowest median of each), at every size, with its range and the verdict of
# the rule. A negative value means RMSNorm took longer. The verdicts quoted
# elsewhere use the large size, where a call lasts long enough to time well.
# The claim under test is a saving, so the verdict line on it asks only
# whether one was measured: "RMSNorm slower" and "no measurable difference"
# both mean that none was.
#
# Two pairs run the same operations and so make a check of the rule itself:
# `nn.RMSNorm` and `F.rms_norm`, and `nn.LayerNorm` and `F.layer_norm` (the
# operation counts above). Between them the rule should find no difference.


# %% tags=["collapse"]
WORD = {FASTER: "RMSNorm faster", SLOWER: "RMSNorm slower", UNRESOLVED: "no measurable difference"}


def saved(s: Spread):
    """Time saved by RMSNorm, 1 - t_RMS / t_LN, from a speedup t_LN / t_RMS and its range."""
    return Spread(*(100 * (1 - 1 / v) for v in s))


def pair(table, rows, hidden, p, rms_impl, ln_impl):
    """(speedup with its range, verdict) of one RMSNorm against one LayerNorm."""
    kw = {"rows": rows, "hidden": hidden, "passes": p}
    rms, ln = find(table, "rms_norm", rms_impl, **kw), find(table, "layer_norm", ln_impl, **kw)
    s = speedup(table, rms_impl=rms_impl, ln_impl=ln_impl, **kw)
    return s, compare(rms["samples"], ln["samples"])


def fastest_pair(table, rows, hidden, p):
    kw = {"rows": rows, "hidden": hidden, "passes": p}
    return fastest(table, "rms_norm", **kw)["impl"], fastest(table, "layer_norm", **kw)["impl"]


timed = {(r["norm"], r["impl"]) for r in table}
measured_impls = [i for i in IMPLEMENTATIONS if all((n, i) in timed for n in NORMS)]
head = "".join(f"{f'{r} x {h}':>48}" for r, h in SIZES)
for p in PASSES:
    print(f"{p}: time saved by RMSNorm, median (range): verdict\n{'':22}{head}")
    for impl in [*measured_impls, "fastest"]:
        cells = []
        for r, h in SIZES:
            impls = fastest_pair(table, r, h, p) if impl == "fastest" else (impl, impl)
            s, v = pair(table, r, h, p, *impls)
            cells.append(f"{pct(saved(s))}: {WORD[v]}")
        label = "fastest vs fastest" if impl == "fastest" else f"{impl} vs {impl}"
        print(f"{label:22}" + "".join(f"{c:>48}" for c in cells))
    print()

print("The same operations, timed apart (the rule should find no difference):")
false_differences = 0
for norm, pair_names in (
    ("rms_norm", ("nn.RMSNorm", "F.rms_norm")),
    ("layer_norm", ("nn.LayerNorm", "F.layer_norm")),
):
    if {(norm, "nn"), (norm, "F")} <= timed:
        for (r, h), p in itertools.product(SIZES, PASSES):
            kw = {"rows": r, "hidden": h, "passes": p}
            nn_row, f_row = find(table, norm, "nn", **kw), find(table, norm, "F", **kw)
            v = compare(nn_row["samples"], f_row["samples"])
            false_differences += v != UNRESOLVED
            print(f"  {p:16} {r} x {h}: {describe(v, *pair_names)}")
trials = 2000
rate = false_difference_rate(REPEATS, trials=trials)
print(
    f"By simulation, with {REPEATS} samples each, the rule calls two sets of timings drawn from "
    f"one distribution different in {rate:.1%} of {trials} trials."
)
if false_differences:
    print(
        f"The rule found a difference between the same operations {false_differences} time(s): "
        "this run was noisier than its ranges show, and its verdicts deserve less trust."
    )
else:
    print("The rule found no difference between the same operations, at any size or pass.")


def fastest_verdicts(table, size):
    """{pass: (speedup, verdict)} of the fastest RMSNorm against the fastest LayerNorm."""
    return {p: pair(table, *size, p, *fastest_pair(table, *size, p)) for p in PASSES}


PAPER = {
    "below": "below the paper's 7–64 %",
    "above": "above the paper's 7–64 %",
    "inside": "inside the paper's 7–64 %",
    "unplaced": "not placed against the paper's 7–64 % at this precision",
}


def paper_key(s: Spread):
    """Where a measured saving lies against the paper's 7-64 %, by the same rule."""
    lo, hi = saved(s).low, saved(s).high
    if hi < 7:
        return "below"
    if lo > 64:
        return "above"
    if lo >= 7 and hi <= 64:
        return "inside"
    return "unplaced"


def against_paper(s: Spread):
    return PAPER[paper_key(s)]


large = fastest_verdicts(table, LARGEST)
if any(v == FASTER for _, v in large.values()):
    found = "; ".join(
        f"{p}, a saving {against_paper(s)}" if v == FASTER else f"{p}, no saving measurable"
        for p, (s, v) in large.items()
    )
else:
    found = "no saving by RMSNorm was measurable, forward or forward+backward, let alone 7–64 %"
verdict_7_64 = (
    f"the norm alone, fastest RMSNorm vs fastest LayerNorm, {LARGEST[0]} x {LARGEST[1]} float32 "
    f"on this machine: {found}; the paper's 7–64 % are whole-model running times"
)
print()
print("Verdict:", verdict_7_64)

# %% [markdown]
# ## The goal: half the copy bandwidth
#
# Does the fastest RMSNorm reach at least half the copy bandwidth at the large
# size? By the same rule, the goal is met only when the whole range of its
# percentage lies at or above 50 %, and missed only when the whole range lies
# below. And how far could each eager implementation get at best, given the
# traffic its chain of operations moves (from the operation count above)?


# %%
def goal_word(s: Spread):
    if s.low >= 50:
        return "met"
    if s.high < 50:
        return "not met"
    return "not decided at this precision"


def names(table, norm, **kw):
    """The fastest implementations of a norm: those not measurably slower than the best."""
    group = [NAMES[(norm, i)] for i in fastest_group(table, norm, **kw)]
    return group[0] if len(group) == 1 else " and ".join(group) + " (no measurable difference)"


def goal_lines(table, tag):
    met = {}
    for p in PASSES:
        for r, h in LARGE:
            kw = {"rows": r, "hidden": h, "passes": p}
            best = pct_of_copy(fastest(table, "rms_norm", **kw))
            met[(p, (r, h))] = goal_word(best)
            print(
                f"{tag}{p:16} {r} x {h}: fastest RMSNorm {names(table, 'rms_norm', **kw)}, "
                f"{pct(best)} of copy bandwidth -> goal {met[(p, (r, h))]}"
            )
    return met


goal = goal_lines(table, "")
print()
for (norm, impl, p), c in ceiling.items():
    if norm == "rms_norm":
        print(f"at best, by its traffic, {NAMES[(norm, impl)]}, {p}: {c:.0%} of copy bandwidth")
clone_large = clone_pct(largest)
print(
    f"a copy into a new tensor at {LARGEST[0]} x {LARGEST[1]}: {pct(clone_large)} of copy bandwidth"
)

# %% [markdown]
# ## On a GPU
#
# The GPU figures at the top of the page come from `gpu_benchmark`, which
# differs from the CPU race in four ways, each for a reason given there:
#
# - every dtype and size gets a fresh `torch.compile(dynamic=False)`, after
#   `torch._dynamo.reset()`; the graphs and recompilations it took are
#   counted (`compile_counts`), and so is any compilation while timing;
# - the inputs, upstream gradients and copy buffers cycle through `rotation`
#   copies that together hold at least twice the L2 cache
#   (`L2_cache_size` of the device);
# - CUDA events time each sample, and the host's own time per call is
#   recorded beside it;
# - float32 and bfloat16, at 4096 × 4096 and at the sizes of real LLM layers,
#   32768 × 4096 and 16384 × 8192 (tokens × hidden).
#
# `make bench-gpu` (`scripts/bench_gpu.py`) runs it at all these sizes, and
# the old way too, and writes `docs/experiments/results/gpu_norm_speed.json`
# with the GPU, driver, CUDA, torch and Triton versions, the commit, a hash of
# the code and every sample; the build draws the tables above from that file.
#
# Why a fresh compile for every size: Dynamo keeps compiled code per function,
# not per module. Two new `RMSNorm` instances of one shape, compiled apart,
# share one graph (`backend="eager"` keeps Dynamo's capture and cache and
# skips generating kernels):

# %%
x_demo = torch.randn(4, 1024)
made = []
for _ in range(2):
    module = torch.compile(RMSNorm(1024, eps=1e-5), dynamic=False, backend="eager")
    before = compile_counts()["graphs"]
    with torch.no_grad():
        module(x_demo)
    made.append(compile_counts()["graphs"] - before)
print(f"graphs compiled by its first call: first instance {made[0]}, second instance {made[1]}")

# %% [markdown]
# When this notebook runs on a GPU, the cell below runs the benchmark at
# 32768 × 4096; without a GPU it says so.

# %%
if torch.cuda.is_available():
    print("GPU:", torch.cuda.get_device_name())

    def cuda_variants(norm, hidden, dtype):
        scratch = SCRATCH[norm]
        return norm_variants(norm, hidden, scratch, dynamic=False, device="cuda", dtype=dtype)

    gpu_table, gpu_failures = gpu_benchmark([(32768, 4096)], cuda_variants, repeats=REPEATS)
    for (norm, impl, dtype, r, h), why in gpu_failures.items():
        print(f"{NAMES[(norm, impl)]}, {dtype} {r} x {h}: could not run ({why})")
    for dtype, p in itertools.product(("float32", "bfloat16"), PASSES):
        rows_here = [r for r in gpu_table if (r["dtype"], r["passes"]) == (dtype, p)]
        if not rows_here:
            continue
        g = copy_gbps(rows_here[0])
        print(f"{dtype}, {p}: copy {g.median:.0f} ({g.low:.0f}–{g.high:.0f}) GB/s")
        for row in rows_here:
            c, how = row["compile"], ""
            if c:  # what torch.compile built to warm up, and while timing (should be 0)
                how = f" [{c['graphs']} graphs, {c['recompiles']} recompiles; timing: "
                how += f"{c['timed_graphs']}]"
            print(f"  {NAMES[(row['norm'], row['impl'])]:23} {pct(pct_of_copy(row))}{how}")
        kw = {"rows": 32768, "hidden": 4096, "passes": p}
        for norm in NORMS:
            print(f"  fastest {norm}: {names(rows_here, norm, **kw)}")
else:
    print("GPU part skipped: torch.cuda.is_available() is False on this machine.")

# %% [markdown]
# ## The allocator
#
# At the large size a copy into a **new** tensor can be slower than one into
# an existing tensor, and every norm call writes a new output. PyTorch's CPU
# allocator takes each tensor from `malloc` and returns it with `free`; glibc
# serves a block above its mmap threshold (at most 32 MiB on 64-bit systems)
# with a fresh `mmap` and unmaps it on `free`, so each page of the next output
# faults on its first write (sources below). The page faults of one call:

# %%
x_large = 2 * torch.randn(*LARGEST, generator=torch.Generator().manual_seed(1)) + 0.5
ln = built[("layer_norm", LARGEST[1])]["nn"]
one_ln_call = norm_call(ln, x_large, list(ln.parameters()))
dst = torch.empty_like(x_large)
page = mmap.PAGESIZE


def faults(tag):
    for name, fn in [
        ("nn.LayerNorm forward", one_ln_call),
        ("copy to a new tensor", x_large.clone),
        ("copy into an existing tensor", lambda: dst.copy_(x_large)),
    ]:
        fn(), fn()  # first calls, so that only the steady state is counted
        counts = [minor_page_faults(fn) for _ in range(3)]
        if None in counts:
            print(f"{tag}{name}: page faults cannot be counted on this platform")
            continue
        per_call = sum(counts) / len(counts)
        pages = per_call * page / x_large.numel() / x_large.element_size()
        print(
            f"{tag}{name}: {per_call:.0f} page faults of {page} bytes per call "
            f"(mean of 3) = {pages:.2f} x the size of x"
        )


faults("default allocator | ")

# %% [markdown]
# Raising glibc's mmap and trim thresholds (`mallopt`) keeps freed blocks for
# the next call, as jemalloc and TCMalloc, which the PyTorch performance
# tuning guide recommends on the CPU, do by design. `keep_freed_memory` does
# it for the rest of this notebook; the large size is then measured again for
# `nn.LayerNorm` and the two compiled modules. (On a GPU, PyTorch's caching
# allocator keeps freed blocks by design.)

# %%
reuse = keep_freed_memory(1 << 30)
print("glibc now keeps freed blocks up to 1 GiB for reuse:", reuse)
goal_reuse, large_reuse = {}, {}
if reuse:
    faults("memory reused | ")
    fastest_kinds = [("layer_norm", "nn"), ("layer_norm", "compiled"), ("rms_norm", "compiled")]
    reuse_table, _ = benchmark(
        LARGE, lambda n, h: built[(n, h)], only=fastest_kinds, repeats=REPEATS
    )
    print()
    print_table(reuse_table)
    goal_reuse = goal_lines(reuse_table, "memory reused | ")
    large_reuse = fastest_verdicts(reuse_table, LARGEST)
    for p, (s, v) in large_reuse.items():
        rms, ln = fastest_pair(reuse_table, *LARGEST, p)
        said = describe(v, NAMES[("rms_norm", rms)], NAMES[("layer_norm", ln)])
        print(f"memory reused | {p:16} {said} (LayerNorm's time / RMSNorm's: {times(s)})")
else:
    print("The C library here has no mallopt: the large size is not measured again.")

# %% [markdown]
# ## Sources
#
# - Zhang, Sennrich. *Root Mean Square Layer Normalization*, NeurIPS 2019,
#   [arXiv 1910.07467](https://arxiv.org/abs/1910.07467): abstract ("reduces
#   the running time by 7%∼64% on different models"), result tables (per-model
#   running-time reductions, read in transcriptions of the tables that agree
#   with each other, not checked against the PDF; see the
#   [RMSNorm in released models](../../reference/rmsnorm-models/#is-rmsnorm-what-makes-llms-fast)).
# - pytorch/pytorch PR #153666 (fused RMSNorm, CUDA) and PR #145301 (MPS);
#   `c10/core/impl/alloc_cpu.cpp` (the CPU allocator calls `posix_memalign`
#   and `free`).
# - PyTorch documentation: `torch.nn.LayerNorm`, `torch.nn.RMSNorm`,
#   `torch.nn.functional.rms_norm`, `torch.compile`, `torch.cuda.Event`,
#   `torch.cuda.get_device_properties`; `torch/_dynamo/config.py`
#   (`recompile_limit`) and `torch._dynamo.reset`; PyTorch performance
#   tuning guide (pytorch/tutorials `recipes_source/recipes/tuning_guide.py`,
#   "Switch Memory allocator").
# - GNU C Library manual, "Malloc Tunable Parameters" (`M_MMAP_THRESHOLD`,
#   `M_TRIM_THRESHOLD`, `MALLOC_MMAP_THRESHOLD_`); glibc `malloc/malloc.c`
#   (`DEFAULT_MMAP_THRESHOLD_MAX`, 32 MiB on 64-bit).
# - Williams, Waterman, Patterson. *Roofline: an insightful visual performance
#   model for multicore architectures*, Communications of the ACM 52(4), 2009.
# - McCalpin, STREAM benchmark: a copy counted as 2 × size bytes moved.

# %% tags=["publish"]
kw_f = {"rows": LARGEST[0], "hidden": LARGEST[1], "passes": "forward"}
kw_b = {"rows": LARGEST[0], "hidden": LARGEST[1], "passes": "forward+backward"}


def best_pct(t, kw):
    return pct(pct_of_copy(fastest(t, "rms_norm", **kw)))


def fastest_vs_fastest(kw):
    return times(large[kw["passes"]][0])


def same_impl(kw, impl):
    return times(speedup(table, rms_impl=impl, ln_impl=impl, **kw))


# The verdicts as numbers and keys: each language's page words them
SPEED = {FASTER: "speed.faster", SLOWER: "speed.slower", UNRESOLVED: "speed.unresolved"}
PASS = {"forward": "pass.forward", "forward+backward": "pass.forward_backward"}
size_keys = {"phrase": "size", "rows": str(LARGEST[0]), "hidden": str(LARGEST[1])}
size_keys["dtype"] = str(DTYPE).removeprefix("torch.")


def by_impl(kw):
    """The verdict per implementation, then for the fastest of each norm."""
    verdicts = [(i, pair(table, *LARGEST, kw["passes"], i, i)[1]) for i in measured_impls]
    verdicts.append(("fastest", large[kw["passes"]][1]))
    return [
        {"phrase": "speed.by_impl", "impl": {"phrase": f"impl.{i}"}, "word": {"phrase": SPEED[v]}}
        for i, v in verdicts
    ]


def found_key(p, s, v):
    """One pass of the fastest-vs-fastest verdict on the paper's 7-64 %."""
    if v != FASTER:
        return {"phrase": "paper.no_saving", "pass": {"phrase": PASS[p]}}
    where = {"phrase": f"paper.{paper_key(s)}"}
    return {"phrase": "paper.saving", "pass": {"phrase": PASS[p]}, "where": where}


if any(v == FASTER for _, v in large.values()):
    found_keys = [found_key(p, s, v) for p, (s, v) in large.items()]
else:
    found_keys = {"phrase": "paper.none"}
parts = machine_parts()
results = {
    "machine": {
        "phrase": "machine",
        "cpu": parts["cpu"],
        "cores": str(parts["cores"] or "?"),
        "threads": str(parts["threads"]),
        "torch": parts["torch"],
        "gpu": {"phrase": "gpu.named", "name": parts["gpu"]}
        if parts["gpu"]
        else {"phrase": "gpu.none"},
    },
    "largest_size": size_keys,
    "threads": str(torch.get_num_threads()),
    "repeats": {"phrase": "repeats", "rounds": str(REPEATS)},
    "copy_bandwidth_gbps": f"{copy_large.median:.1f} ({copy_large.low:.1f}–{copy_large.high:.1f})",
    "clone_pct_of_copy": pct(clone_large),
    "fastest_rms_pct_of_copy_forward": best_pct(table, kw_f),
    "fastest_rms_pct_of_copy_fwd_bwd": best_pct(table, kw_b),
    "fastest_rms_pct_of_copy_forward_reuse": best_pct(reuse_table, kw_f) if reuse else "n/a",
    "fastest_rms_pct_of_copy_fwd_bwd_reuse": best_pct(reuse_table, kw_b) if reuse else "n/a",
    "rms_vs_ln_speedup_fastest_forward": fastest_vs_fastest(kw_f),
    "rms_vs_ln_speedup_fastest_fwd_bwd": fastest_vs_fastest(kw_b),
    "rms_vs_ln_speedup_nn_forward": same_impl(kw_f, "nn"),
    "rms_vs_ln_speedup_nn_fwd_bwd": same_impl(kw_b, "nn"),
    "verdict_7_64": {"phrase": "paper.verdict", "size": size_keys, "found": found_keys},
    "verdict": {
        "phrase": "speed.verdict",
        "pass": {"phrase": PASS["forward"]},
        "size": size_keys,
        "by_impl": by_impl(kw_f),
    },
    "compile_seconds": f"{compiled_s:.1f}",
}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
