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
# # 让归一化更快 { #making-norms-fast }
#
# 一次层归一化（LayerNorm）或均方根归一化（RMSNorm）要花多长时间？离机器能做到的极限还有多远？本页让两种归一化各自的四种实现同场赛跑：本手册从零实现的模块（`snippets/layer_norm.py`、`snippets/rms_norm.py`），`nn.LayerNorm` / `nn.RMSNorm`，`F.layer_norm` / `F.rms_norm`，以及用 `torch.compile` 编译的从零实现的模块。计时在两种张量尺寸上进行，分别测仅前向和前向加反向，并把每个时间换算成实际达到的带宽，与同一台机器在同一次运行中测得的普通拷贝的带宽相比较。代码见 `snippets/norm_speed.py`。
#
# **计时因运行而异，也因机器而异。** 本页的每一个时间、带宽、加速比和结论，都是在构建本页时、在构建它的那台机器（名称见下文）上测得的，而那台机器当时可能正同时运行着其他任务。因此，每种实现都计时多次，并且所有实现的重复测量交错进行，让后台负载均匀地落在每一种实现上；每个计时都以**中位数及其四分位距**（中间一半样本所在的范围）给出。**只有当两者的范围不重叠时，结论才会说其中一个比另一个快**；否则结论是：在这一精度下测不出差别。加速比这样的比值同样带有范围，并且恰好在结论认定存在差别时，这个范围不包含 1。与计时无关的数字（字节数、运算次数、数值误差）每次运行都相同。

# %% [markdown]
# ## 预期 { #what-we-expected }
#
# **说法。** 介绍前置层归一化（Pre-LN）Transformer 的文章常说，RMSNorm“能省掉 7–64% 的归一化浮点运算量”，能让推理更高效，是大模型速度快的原因。这个数字出自 Zhang & Sennrich 2019（[arXiv 1910.07467](https://arxiv.org/abs/1910.07467)），其摘要写的是 RMSNorm “reduces the running time by 7%∼64% on different models”，即在不同模型上把运行时间缩短 7%∼64%。这是**整个模型**运行时间的缩短（在 GPU 上，分别用 TensorFlow、Theano 和 PyTorch 实现），而不是归一化本身的浮点运算量：按 [RMSNorm 页面](../../foundations/rmsnorm/#is-rmsnorm-what-makes-llms-fast)所转录的论文结果表，Transformer-base 模型节省了 6.9%（即那个“7%”），而“64%”是部分均方根归一化 pRMSNorm（RMSNorm 的部分变体）在一个 GRU 顺序嵌入（order-embedding）模型上的结果（63.9%）；普通 RMSNorm 最多节省 40.8%。这些逐模型的数字来自几份彼此一致的结果表转录，并未对照 PDF 原文核实。
#
# **浮点运算。** 对 $x$ 的每个元素，LayerNorm 的前向要做：为求均值的加法，减去均值，平方，为求方差的加法，乘以 $1/\sqrt{\sigma^2+\varepsilon}$，乘以 $\gamma$，再加上 $\beta$；RMSNorm 则只有平方、加法、乘以 $1/\mathrm{RMS}$ 和乘以 $\gamma$。RMSNorm 每个元素的浮点运算更少（第一个代码单元格会把它们数出来），但归一化是**受内存带宽限制的（memory-bound）**：它每搬运一个字节大约只做一次浮点运算，而一个 CPU 核心或一块 GPU 在搬运一个字节的时间里能做许多次浮点运算（下文以“脊点”（ridge point）的形式测量这一比值）。因此，归一化的耗时由它读写的字节数决定，而在这一点上两种归一化几乎相同：读 $x$，写 $y$，外加一两个参数向量。
#
# **所以我们预期**：实现得好的 RMSNorm 与实现得好的 LayerNorm 耗时大致相同，都接近拷贝一遍 $x$ 的时间；两者之间如果有较大差别，也来自**实现对内存遍历了几遍**，而不是来自公式。PyTorch 把 LayerNorm 作为一个专用的内核（kernel）运行（即下文出现的 `native_layer_norm`）；它的融合 RMSNorm 内核则是最近才加入的（CUDA：pytorch/pytorch PR #153666，2025 年；MPS：PR #145301），所以在 CPU 上，`nn.RMSNorm` 可能是以一串逐元素运算的形式运行的。eager 模式下从零实现的代码，公式中的每一步运算都各自遍历一遍内存；`torch.compile` 则可以把它们融合起来。
#
# 为本页设定的**目标**是：在大尺寸下，CPU 上最快的 RMSNorm 至少达到实测拷贝带宽的一半。

# %% [markdown]
# ## 设置 { #settings }
#
# - 输入 $x$ 的形状（行数, 隐藏维度）为 (2048, 1024) 和 (4096, 4096)，float32，大小分别为 8 MiB 和 64 MiB。前者足够小，末级缓存可以容纳它的很大一部分。后者就是“大尺寸”：它是单个核心 L2 缓存的许多倍，而且超过了一个界限：从这个大小起，C 库的 `malloc` 默认每次请求都交出新的内存（见下文“分配器”一节）。机器的各级缓存大小打印在下面；与其他任务共享的末级缓存，可能有一部分被占用。只有大尺寸决定结论。
# - $x = 2\,\mathcal{N}(0, 1) + 0.5$，随机种子由形状决定；上游梯度为 $\cos(x)$，同一尺寸下的每次调用都用同一个张量。权重在 $[0.5, 1.5]$ 内均匀分布，LayerNorm 的偏置在 $[-0.5, 0.5]$ 内均匀分布，种子由隐藏维度决定；同一种归一化的所有实现共用同样的参数张量。
# - 两种归一化都取 $\varepsilon = 10^{-5}$（若用 `nn.RMSNorm` 的默认值，则会是 float32 的机器精度；这个取值不影响速度）。
# - **前向**（forward）：在 `torch.no_grad()` 下调用一次。**前向+反向**（forward+backward）：调用一次，再对 $x$ 和每个参数做一次 `torch.autograd.grad`。
# - 计时，按尺寸进行：每种实现在每种计算方式下先单独运行一次并计时（对于 `torch.compile` 版本，这次调用就是编译）。随后进行 15 轮；每一轮为每种实现、每种计算方式以及下面的两种拷贝各取一个样本，顺序每轮重新随机打乱（有固定种子）。在 CPU 上，一个样本就是一次调用；在 GPU 上，一个样本是至多 100 次背靠背的调用，次数取为：假如一次调用与拷贝一遍 $x$ 耗时相同，这些调用合计约 10 ms；样本以 `torch.cuda.synchronize` 结束。报告的是 15 个样本的中位数及其四分位距，写作“中位数（第一四分位数–第三四分位数）”。样本再少一些，四分位数就会分散得厉害，下面的判定规则便会经常把同一段代码的两次运行判为不同（这类误报的比率在下文计算）。
# - 拷贝带宽：对与 $x$ 元素个数相同的张量做 `dst.copy_(src)`，按 2 × 大小计（读 + 写），与各归一化在同样的轮次中计时；另测 `src.clone()`，即拷贝到每次调用都新分配的张量里，正如归一化的输出那样。
# - `torch.compile(module, dynamic=True)`，使用默认的 Inductor 后端：每种归一化、每个隐藏维度、每种梯度模式各编译一次，适用于所有行数。编译时间会一并报告。
# - 线程：PyTorch 的默认设置，打印在下面；不做任何改动。
# - 内存：C 库 `malloc` 的默认设置，直到“分配器”一节为止；那一节会为本 notebook 余下的部分改变这些设置，并重新测量大尺寸。
# - 其他一切都用种子 0。

# %%
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
    describe,
    false_difference_rate,
    fastest,
    fastest_group,
    find,
    interleaved_times,
    keep_freed_memory,
    machine,
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
# ## 计入哪些字节 { #the-bytes-we-count }
#
# 一次调用实际达到的带宽，是它**至少必须搬运的字节数**除以它的耗时（代码片段中的 `bytes_moved`）。设 $x$ 有 $R \times H$ 个元素，每个元素 $b$ 字节：
#
# - **前向**读取 $x$ 和 $\gamma$（以及 $\beta$），写出 $y$；
# - **训练时的前向**还要写出为反向传播保存的逐行统计量（LayerNorm：均值和 $1/\sigma$；RMSNorm：$1/\mathrm{RMS}$），类型为 float32；
# - **反向**读取 $x$、$\partial L/\partial y$、统计量和 $\gamma$，写出 $\partial L/\partial x$ 和 $\partial L/\partial\gamma$（以及 $\partial L/\partial\beta$）。
#
# 因此，前向搬运 $2RHb$ 字节外加参数，前向+反向搬运 $5RHb$ 外加一些小项：计算 $\partial L/\partial x$ 既需要 $x$（用保存的统计量重建 $\hat x$），也需要 $\partial L/\partial y$。这是每个张量只读一次的理想实现的访存量；遍历次数更多的实现会搬运更多字节，按这种计法，就表现为更低的实际带宽。拷贝一遍 $x$ 搬运 $2RHb$，与理想的前向相同。

# %%
rows, hidden = LARGEST
size = rows * hidden * DTYPE.itemsize
for norm in NORMS:
    for p in PASSES:
        moved = bytes_moved(norm, rows, hidden, itemsize=DTYPE.itemsize, passes=p)
        print(f"{norm:10} {p:16}: {moved:>11,} bytes = {moved / size:.3f} x the size of x")

# %% [markdown]
# ## 每种 eager 实现运行了什么 { #what-each-eager-implementation-runs }
#
# 在计时之前先看：一次 eager 模式的调用运行了哪些运算，搬运了多少字节？`op_traffic` 借助一个 `TorchDispatchMode`，记录每一个读写与 $x$ 一样大的张量的 ATen 运算，并把这些张量的字节数加起来。当 $x$ 远大于缓存时，上一个运算的数据不会留在缓存里给下一个运算用，所以这个总数就是这次调用搬运的字节数；用理想字节数除以它，就得到这种实现最多能达到拷贝带宽的多大比例。

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
# 融合的 `native_layer_norm` 内核搬运的正是理想访存量。上面其余每一行 eager 实现都是一串运算，每个运算都完整地遍历一遍内存，其中好几个还会写出一个与 $x$ 一样大的临时张量，再由下一个运算读回来。
#
# `torch.compile` 会用生成的内核替换这样的运算链。下一个单元格在一个小输入上把从零实现的模块各编译一次，并列出 Inductor 生成的内核（用的是 PyTorch 的测试辅助函数 `torch._inductor.utils.run_and_get_code`；如果没有这个函数，单元格会注明）。

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
# ## 每种实现算出的数都相同 { #same-numbers-from-every-implementation }
#
# 只有每位选手算的都是同一个函数，比赛才算公平。对每种归一化和每个隐藏维度，在一个小输入上把每种实现的输出及梯度（对 $x$ 和各参数）与 `nn.LayerNorm` / `nn.RMSNorm` 相比较。下文计时的也正是这些对象；每个编译版本的第一次调用会触发编译。

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
# ## CPU 上的比赛 { #the-race-on-the-cpu }
#
# 每种尺寸先给出它的拷贝带宽，以及拷贝到新张量（`clone`）的带宽占拷贝带宽的百分比。随后每一行按尺寸给出每次调用的时间，以及实际达到的带宽（按理想字节数计）占拷贝带宽的百分比，都是中位数及其四分位距。


# %%
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
# ## Roofline 视角 { #roofline-view }
#
# 对受内存带宽限制的运算来说，Roofline（屋顶线）模型的“屋顶”是带宽，而不是浮点运算速率。每个子图把每种实现实际达到的带宽画成 $x$ 大小的函数，上方是同一尺寸下的拷贝带宽（黑色点线），也就是天花板。灰色虚线是拷贝到新张量的带宽。每个点是中位数，误差棒覆盖四分位距。小尺寸的点可能高于大尺寸的天花板，因为这时 $x$ 能放进缓存。


# %% alt="各 LayerNorm 与 RMSNorm 实现的 GB/s 随规模的变化，以复制带宽为上限"
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
# 这里实测的是 Roofline 模型的脊点：float32 矩阵乘法的浮点运算速率，除以最大尺寸下的拷贝带宽。一个运算每字节的浮点运算数若低于脊点的整个范围，它就受内存限制。

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
# ## RMSNorm 对比 LayerNorm { #rmsnorm-against-layernorm }
#
# 论文报告的是**节省的运行时间** $1 - t_\text{RMSNorm} /
# t_\text{LayerNorm}$；下面几行在每种尺寸下给出这个量：两种归一化采用同一种实现时的值，以及最快的 RMSNorm 对最快的 LayerNorm（各取中位数最低者）时的值，并附上它的范围和判定规则的结论。负值表示 RMSNorm 耗时更长。别处引用的结论用的都是大尺寸，因为这时一次调用持续得足够久，计时才准。待检验的说法是“能节省时间”，所以关于它的那一行结论只问是否测到了节省：“RMSNorm slower”和“no measurable difference”都意味着没有测到。
#
# 有两对实现运行的是相同的运算，因此可以用来检验判定规则本身：`nn.RMSNorm` 与 `F.rms_norm`，以及 `nn.LayerNorm` 与 `F.layer_norm`（见上面的运算统计）。在这两对之间，规则应当找不到差别。


# %%
WORD = {FASTER: "RMSNorm faster", SLOWER: "RMSNorm slower", UNRESOLVED: "no measurable difference"}
PAIR_LABEL = {"scratch": "from scratch", "nn": "nn.*", "F": "F.*", "compiled": "torch.compile"}


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


def against_paper(s: Spread):
    """Where a measured saving lies against the paper's 7-64 %, by the same rule."""
    lo, hi = saved(s).low, saved(s).high
    if hi < 7:
        return "below the paper's 7–64 %"
    if lo > 64:
        return "above the paper's 7–64 %"
    if lo >= 7 and hi <= 64:
        return "inside the paper's 7–64 %"
    return "not placed against the paper's 7–64 % at this precision"


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
# ## 目标：拷贝带宽的一半 { #the-goal-half-the-copy-bandwidth }
#
# 在大尺寸下，最快的 RMSNorm 能否达到拷贝带宽的至少一半？按同样的规则，只有当它的百分比的整个范围都不低于 50% 时，才算达到目标；只有整个范围都低于 50% 时，才算没有达到。此外，按每种 eager 实现的运算链所搬运的访存量（来自上面的运算统计），它最多又能达到多少？


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
# ## 分配器 { #the-allocator }
#
# 在大尺寸下，哪怕是普通的拷贝，写入一个**新**张量时也可能变慢：把“copy to a new tensor”这一行及其范围与 100% 比较一下就知道。每次归一化调用都要写出一个新的输出（eager 运算链还要写出新的临时张量），所以要付出同样的代价。原因在于内存怎样分配，而不在于怎样读取：PyTorch 的 CPU 分配器用 C 库的 `malloc` 取得每个张量，再用 `free` 归还（pytorch/pytorch `c10/core/impl/alloc_cpu.cpp`）。对超过 mmap 阈值的内存块，glibc 的 `malloc` 会用一次新的 `mmap` 来满足，并在 `free` 时解除映射；这个阈值会动态上调，在 64 位系统上最高到 32 MiB（glibc `malloc/malloc.c` 中的 `DEFAULT_MMAP_THRESHOLD_MAX`）。于是，下一次调用的输出落在全新的页面上，每个页面第一次被写入时都会触发缺页（page fault），由操作系统内核把它清零。下面是操作系统统计的一次调用的缺页次数：

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
# PyTorch 性能调优指南建议在 CPU 上使用 jemalloc 或 TCMalloc，因为它们会“尽可能”重用内存（pytorch/tutorials，`recipes_source/recipes/tuning_guide.py`，“Switch Memory allocator”）。用 glibc 本身也能得到同样的效果：调高它的 mmap 阈值和 trim 阈值（用 `mallopt`，或在启动时设置环境变量 `MALLOC_MMAP_THRESHOLD_` 和 `MALLOC_TRIM_THRESHOLD_`；见 glibc 手册“Malloc Tunable Parameters”一节），释放的内存块就会留在堆上，供下一次调用使用。`keep_freed_memory` 从这里开始为本 notebook 的进程做这项设置；随后以同样的方式，对 `nn.LayerNorm` 和两个编译后的模块重新测量大尺寸。

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
# ## 在 GPU 上 { #on-a-gpu }
#
# 当 PyTorch 检测到 GPU 时，同样的测量会在 CUDA 上运行：每个样本至多 100 次调用，每个样本以 `torch.cuda.synchronize` 结束，结论采用同样的规则。PyTorch 的 CUDA 缓存分配器按设计就会保留释放的内存块以供重用，所以上面的分配器问题在那里不会出现。没有 GPU 时，单元格会注明这一点。

# %%
if torch.cuda.is_available():
    print("GPU:", torch.cuda.get_device_name())

    def cuda_variants(norm, hidden):
        return norm_variants(norm, hidden, SCRATCH[norm], device="cuda")

    gpu_table, gpu_failures = benchmark(
        SIZES,
        cuda_variants,
        device="cuda",
        repeats=REPEATS,
        min_sample_s=0.01,
        max_number=100,
    )
    for (norm, impl), why in gpu_failures.items():
        print(f"{NAMES[(norm, impl)]} could not run on the GPU and is left out: {why}")
    print_table(gpu_table)
    roofline(gpu_table, f"CUDA, {torch.cuda.get_device_name()}: achieved bandwidth")
    for p in PASSES:
        kw = {"rows": LARGEST[0], "hidden": LARGEST[1], "passes": p}
        best = pct_of_copy(fastest(gpu_table, "rms_norm", **kw))
        s, v = pair(gpu_table, *LARGEST, p, "nn", "nn")
        print(
            f"GPU {p}: fastest RMSNorm {names(gpu_table, 'rms_norm', **kw)}, {pct(best)} of "
            f"copy; {describe(v, 'nn.RMSNorm', 'nn.LayerNorm')} (LayerNorm's time / RMSNorm's: "
            f"{times(s)})"
        )
else:
    print("GPU part skipped: torch.cuda.is_available() is False on this machine.")

# %% [markdown]
# ## 实验结果 { #what-we-saw }
#
# 下面的每一个快慢排序，都是判定规则（范围不重叠）给出的结论，由上面的单元格以及页面末尾的汇总打印出来；文字讲的是运算统计预测了什么，而不是某一次运行测到了什么。
#
# **公式不等于速度。** RMSNorm 每个元素的浮点运算更少，但两种归一化都远在脊点之下：决定它们耗时的是访存量。还没有读任何时钟，运算统计就已经预测到：哪种归一化更快，取决于实现。
#
# - `nn.LayerNorm` 和 `F.layer_norm` 前向运行一个融合内核，反向也运行一个，访存量都是理想值。
# - 在 CPU 上，`nn.RMSNorm` 和 `F.rms_norm` 运行的是与从零实现的 RMSNorm 相同的一串逐元素运算和归约，访存量是理想值的好几倍，所以运算统计预测，在“nn vs nn”和“F vs F”中 LayerNorm 领先；上表中的结论说明了本次运行是否测到了这一点。PyTorch 已经加入的融合 RMSNorm 内核是面向 CUDA 和 MPS 的。
# - `nn.RMSNorm` 和 `F.rms_norm` 运行的运算完全相同，`nn.LayerNorm` 和 `F.layer_norm` 也是如此：它们之间的任何差别都是噪声；表格下方的检验行显示了在每种尺寸下，判定规则是否把这种噪声挡在了结论之外。
# - 从零实现的 LayerNorm 比从零实现的 RMSNorm 搬运更多字节（见上面的统计）：减去均值要多付出一次归约和更多遍完整的逐元素运算。对这两个 eager 模块，运算统计预测 RMSNorm 领先；“scratch vs scratch”那一行给出了实测的节省、它的范围和结论。这正是论文测量时的情形：那些框架把公式的每一步都作为单独的内核来运行。
# - `torch.compile` 把每个从零实现的模块变成少数几个融合内核（上面已列出），所以两个编译后的归一化搬运的字节数几乎相同；“compiled vs compiled”的结论说明在这里是否测得出差别。
#
# **关于“7–64%”。** 它不是浮点运算量，也不是归一化本身的属性：它是 2019 年的框架中整个模型的运行时间。就归一化本身而言，结论那一行比较的是这台机器上最快的 RMSNorm 与最快的 LayerNorm，这才是实践者能够选择的比较。在 Transformer 中，归一化本来也只占很小一部分时间：它旁边的矩阵乘法对残差流的每个元素要做 $O(H)$ 次浮点运算，而归一化只有寥寥几次，所以归一化上省下的时间放到整个模型里还会进一步缩水。就 Transformer 而言，论文自己的数字是 Transformer-base 的 6.9%；64% 属于循环模型上的 pRMSNorm。至于“RMSNorm 让推理更高效”，只有当 RMSNorm 的内核和它所替换的 LayerNorm 内核一样好时才成立；在 CPU 上，`nn.RMSNorm` 运行的是一串运算，搬运的字节数是 `nn.LayerNorm` 那一个内核的好几倍。
#
# **关于目标。** 目标那几行说明，在大尺寸下最快的 RMSNorm 是否达到了拷贝带宽的一半：先是默认分配器，然后是保留释放的内存以供重用；如果它的百分比范围包含 50%，这几行就会说明这个问题没有定论。没有达到目标时，原因就是本页测量的以下几项：
#
# 1. **全新的页面。** 在 glibc 的默认设置下，每个 32 MiB 及以上的输出都落在新映射的内存上，它的缺页（上面已统计）会叠加到字节流本身的耗时上。拷贝到新张量完全不做算术运算，由它就能看出这部分代价有多大。它拖慢的是每一个非原地（out-of-place）运算，不只是归一化；保留释放的内存以供重用可以消除它（改设置之后的缺页统计显示了对哪些调用确实消除了）。
# 2. **遍历内存的次数。** eager 模式的 RMSNorm 不可能超过为它打印的“at best”比例：无论用哪种分配器，它的运算链搬运的字节数都是理想值的好几倍。只有融合内核（这里是 `torch.compile`）才能接近拷贝。
# 3. **权重梯度。** $\partial L/\partial\gamma$ 是对所有行的求和。这个 PyTorch 版本生成的反向内核（其源码就是 `run_and_get_code` 返回的内容）先对所有行求出它，再逐行计算 $\partial L/\partial x$，因此 $x$ 和 $\partial L/\partial y$ 要读两遍：这超出了理想访存量，所以编译后的前向+反向无法像理想内核那样接近拷贝。
# 4. **核心少，且被共享。** 线程不多、机器又同时运行着其他任务时，每个并行区域都要等到两个线程都分到核心才能执行；一次调用包含的并行区域越多，这部分代价越大，也让较短的计时变得粗糙。拷贝带宽本身也随运行而变化，因为末级缓存由同时运行的其他任务共享。正因如此，这里的每个计时都附有范围，落在范围之内的差别一律报告为没有差别。

# %% [markdown]
# ## 参考来源 { #sources }
#
# - Zhang, Sennrich. *Root Mean Square Layer Normalization*, NeurIPS 2019，[arXiv 1910.07467](https://arxiv.org/abs/1910.07467)：摘要（“reduces the running time by 7%∼64% on different models”），结果表（逐模型的运行时间缩短，来自转录；见 [RMSNorm 页面](../../foundations/rmsnorm/#is-rmsnorm-what-makes-llms-fast)）。
# - pytorch/pytorch PR #153666（融合 RMSNorm，CUDA）和 PR #145301（MPS）；`c10/core/impl/alloc_cpu.cpp`（CPU 分配器调用 `posix_memalign` 和 `free`）。
# - PyTorch 文档：`torch.nn.LayerNorm`、`torch.nn.RMSNorm`、`torch.nn.functional.rms_norm`、`torch.compile`；PyTorch 性能调优指南（pytorch/tutorials `recipes_source/recipes/tuning_guide.py`，“Switch Memory allocator”）。
# - GNU C Library 手册，“Malloc Tunable Parameters”（`M_MMAP_THRESHOLD`、`M_TRIM_THRESHOLD`、`MALLOC_MMAP_THRESHOLD_`）；glibc `malloc/malloc.c`（`DEFAULT_MMAP_THRESHOLD_MAX`，64 位系统上为 32 MiB）。
# - Williams, Waterman, Patterson. *Roofline: an insightful visual performance model for multicore architectures*, Communications of the ACM 52(4), 2009.
# - McCalpin，STREAM 基准测试：一次拷贝按搬运 2 × 大小字节计。

# %%
kw_f = {"rows": LARGEST[0], "hidden": LARGEST[1], "passes": "forward"}
kw_b = {"rows": LARGEST[0], "hidden": LARGEST[1], "passes": "forward+backward"}
size_text = f"{LARGEST[0]} x {LARGEST[1]} float32"


def best_pct(t, kw):
    return pct(pct_of_copy(fastest(t, "rms_norm", **kw)))


def fastest_vs_fastest(kw):
    return times(large[kw["passes"]][0])


def same_impl(kw, impl):
    return times(speedup(table, rms_impl=impl, ln_impl=impl, **kw))


def by_impl(kw):
    """Verdict words per implementation, then for the fastest of each norm."""
    words = [
        f"{PAIR_LABEL[i]}, {WORD[pair(table, *LARGEST, kw['passes'], i, i)[1]]}"
        for i in measured_impls
    ]
    return "; ".join([*words, f"fastest of each, {WORD[large[kw['passes']][1]]}"])


def figures(kw):
    return ", ".join(f"{PAIR_LABEL[i]} {same_impl(kw, i)}" for i in measured_impls)


RULE = "a difference counts only where the interquartile ranges of the timings do not overlap"
results = {
    "machine": MACHINE,
    "largest_size": size_text,
    "threads": str(torch.get_num_threads()),
    "repeats": f"{REPEATS} interleaved rounds; median (interquartile range)",
    "copy_bandwidth_gbps": f"{copy_large.median:.1f} ({copy_large.low:.1f}–{copy_large.high:.1f})",
    "clone_pct_of_copy": pct(clone_large),
    "fastest_rms_impl_forward": names(table, "rms_norm", **kw_f),
    "fastest_rms_pct_of_copy_forward": best_pct(table, kw_f),
    "fastest_rms_pct_of_copy_fwd_bwd": best_pct(table, kw_b),
    "fastest_rms_pct_of_copy_forward_reuse": best_pct(reuse_table, kw_f) if reuse else "n/a",
    "fastest_rms_pct_of_copy_fwd_bwd_reuse": best_pct(reuse_table, kw_b) if reuse else "n/a",
    "rms_vs_ln_speedup_fastest_forward": fastest_vs_fastest(kw_f),
    "rms_vs_ln_speedup_fastest_fwd_bwd": fastest_vs_fastest(kw_b),
    "rms_vs_ln_speedup_nn_forward": same_impl(kw_f, "nn"),
    "rms_vs_ln_speedup_nn_fwd_bwd": same_impl(kw_b, "nn"),
    "speedup_by_impl_forward": figures(kw_f),
    "speedup_by_impl_fwd_bwd": figures(kw_b),
    "verdict_7_64": verdict_7_64,
    "speedup_fastest": (
        f"{fastest_vs_fastest(kw_f)} forward, {fastest_vs_fastest(kw_b)} "
        f"forward+backward (LayerNorm's time / RMSNorm's, median (range), {size_text}, CPU)"
    ),
    "verdict": (
        f"RMSNorm against LayerNorm, forward, {size_text} on the CPU: {by_impl(kw_f)} ({RULE})"
    ),
    "compile_seconds": f"{compiled_s:.1f}",
}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
