"""The words the GPU figures are shown in, per language: provenance, notes, the names of
the implementations (in full, and short for the advice by size), the verdict's and the
advice's sentences."""

from __future__ import annotations

import re

WORDS = {
    "en": {
        "none": (
            "No GPU figures have been recorded yet: this site is built on a machine without "
            "a GPU, and the repository holds no results file (`{file}`). To record them, run "
            "`make bench-gpu` on a machine with a CUDA GPU: it writes that file, and the next "
            "build of the site shows its figures here."
        ),
        "where": (
            "Measured on **{gpu}** (driver {driver}, CUDA {cuda}, torch {torch}, Triton "
            "{triton}) on {date}, at commit `{commit}`{dirty}, by `make bench-gpu`; every "
            "sample is in the repository's `{file}`."
        ),
        "none_old": "No GPU figures have been recorded yet (see above).",
        "dirty": " with uncommitted changes to the measured code",
        "fresh": "The benchmark and kernel code is unchanged since (code hash `{hash}`).",
        "stale": (
            "**The code has changed since these figures were measured** (code hash `{old}` "
            "then, `{new}` now): they describe the earlier code. Run `make bench-gpu` on a GPU "
            "to measure the current code."
        ),
        "how": (
            "Each cell: the bandwidth of the median time as a share of the copy's median "
            "bandwidth, measured in the same run, and in brackets the same share at the first "
            "and third quartiles of the times (the copy's own range is on its line, common to "
            "its column). **Bold**: the fastest of its operation and every one whose range, "
            "as printed, overlaps the range of one in bold: not measurably slower. {timer}; "
            "inputs rotated through {rotate} copies, at least twice the L2; {repeats} "
            "interleaved rounds."
        ),
        "compile": (
            "torch.compile: `dynamic={dynamic}`, mode `{mode}`, compiled afresh for every "
            "size (`torch._dynamo.reset()` before it): {graphs} graphs and {recompiles} "
            "recompilations to warm each compiled module up, {timed} while timing."
        ),
        "pass": {"forward": "Forward", "forward+backward": "Forward+backward"},
        "copy": "copy bandwidth",
        "impl": {
            ("layer_norm", "scratch"): "LayerNorm from scratch",
            ("layer_norm", "nn"): "nn.LayerNorm",
            ("layer_norm", "F"): "F.layer_norm",
            ("layer_norm", "compiled"): "compiled LayerNorm",
            ("rms_norm", "scratch"): "RMSNorm from scratch",
            ("rms_norm", "nn"): "nn.RMSNorm",
            ("rms_norm", "F"): "F.rms_norm",
            ("rms_norm", "compiled"): "compiled RMSNorm",
            ("fused_add_rms_norm", "triton"): "add + RMSNorm, this handbook's Triton kernel",
            ("fused_add_rms_norm", "nn"): "x + residual, then nn.RMSNorm",
            ("fused_add_rms_norm", "compiled"): "torch.compile of x + residual, RMSNorm",
        },
        "missing": "–",
        "failed": "{what} could not run at {size}: {why}",
        "chart": (
            "Bar chart, {passes}: for each dtype and size, each implementation's achieved "
            "bandwidth as a share of the copy bandwidth (bar: median; whisker: its range), "
            "under the roof of a copy at 100 % (dashed line); the table above gives the "
            "numbers."
        ),
        "old": (
            "Timed as this page times the CPU: `torch.compile(dynamic=True)` made once per "
            "norm and hidden size and reused for every row count, beside the compiled code "
            "of earlier calls; the wall clock over back-to-back calls closed by a "
            "synchronize; one input, not rotated. Bold as in the table above."
        ),
        "verdict": (
            "On **{gpu}** (torch {torch}, Triton {triton}) at {size}, the size of a real "
            "LLM layer's activations, as shares of the copy bandwidth, each with the range "
            "of its times ({date}; the tables below have every size):"
        ),
        "verdict_line": (
            "{what}, {passes}. Fastest, and those whose ranges overlap: {best}. Then: {rest}."
        ),
        "verdict_all": "{what}, {passes}. No difference measurable: {best}.",
        "versions": (
            "The GPU figures on this page were measured with torch {torch} and Triton "
            "{triton}, on {gpu}."
        ),
        "none_versions": "No GPU figures have been recorded yet.",
        "figure": "{name}: {pct}",
        "sep": "; ",
        "norm": {
            "layer_norm": "LayerNorm",
            "rms_norm": "RMSNorm",
            "fused_add_rms_norm": "Residual add + RMSNorm",
        },
        "launch": (
            "†: the host's median time to launch one call was at least {bound} of the GPU's "
            "median time to run it, so the GPU may have waited for the launches, and the "
            "events that time it count the wait: such a figure may understate the speed of "
            "the kernels and measure the cost of launching the call."
        ),
        "launch_times": " Per call, at {size}: {items}.",  # after "launch", in its paragraph
        "launch_item": "{name}, {passes}: host {host:.0f} µs, GPU {gpu:.0f} µs",
        "short": {
            ("fused_add_rms_norm", "triton"): "this kernel",
            ("fused_add_rms_norm", "nn"): "eager",
            ("fused_add_rms_norm", "compiled"): "torch.compile",
        },
        "sizes_win": (
            "In this run, {name} was among the fastest (bold in the tables), forward and "
            "forward+backward unless one is named, at {wins}."
        ),
        "sizes_win_none": "In this run, {name} was among the fastest at no size.",
        "sizes_lose": " It was slower than the fastest, by its whole printed range, at {loses}.",
        "sizes_lose_none": " It was slower than the fastest at no size measured.",
        "win_item": "{size} ({passes})",
        "lose_item": "{size}, {passes} (fastest: {best}; {name} {pct}{times})",
        "per_call": ", host {host:.0f} µs and GPU {gpu:.0f} µs per call",
        "and": " and ",
        "list": ", ",
        "host": (
            "The host's median time to launch one call, lowest–highest over the {n} sizes "
            "measured: {items}."
        ),
        "host_item": "{name}, {times}",
        "host_pass": "{span} µs {passes}",
        "host_gpu": " The GPU's median time for one call of {name}: {times}.",
        "host_none": "This run recorded no host time per call.",
        "comma": ", ",
    },
    "zh": {
        "none": (
            "还没有记录任何 GPU 数据：本站在没有 GPU 的机器上构建，仓库里也没有结果文件"
            "（`{file}`）。要记录这些数据，请在有 CUDA GPU 的机器上运行 `make bench-gpu`："
            "它会写出这个文件，站点下次构建时就会在这里显示其中的数据。"
        ),
        "where": (
            "测量于 **{gpu}**（驱动 {driver}，CUDA {cuda}，torch {torch}，Triton {triton}），"
            "日期 {date}，提交 `{commit}`{dirty}，由 `make bench-gpu` 测得；每个样本都在"
            "仓库的 `{file}` 里。"
        ),
        "none_old": "还没有记录任何 GPU 数据（见上文）。",
        "dirty": "，被测代码当时有未提交的改动",
        "fresh": "此后基准测试和内核代码没有改动（代码哈希 `{hash}`）。",
        "stale": (
            "**这些数据测量之后代码已经改动**（当时的代码哈希是 `{old}`，现在是 `{new}`）："
            "它们描述的是改动前的代码。请在 GPU 上运行 `make bench-gpu`，测量当前的代码。"
        ),
        "how": (
            "每个单元格：中位耗时对应的带宽占同一次运行中拷贝带宽中位数的比例，括号里是耗时的"
            "第一、第三四分位数对应的同一比例（拷贝自身的范围见拷贝带宽那一行，整列共用）。"
            "**粗体**：同一运算中最快的实现，以及表中所列范围与某个粗体范围重叠、即测不出比它"
            "慢的实现。{timer}；输入在 {rotate} 份副本间轮换，总量至少是 L2 的两倍；交错进行 "
            "{repeats} 轮。"
        ),
        "compile": (
            "torch.compile：`dynamic={dynamic}`，模式 `{mode}`，每个尺寸都重新编译"
            "（编译前先 `torch._dynamo.reset()`）：每个编译模块预热时编译 {graphs} 个图、"
            "重新编译 {recompiles} 次，计时期间 {timed} 次。"
        ),
        "pass": {"forward": "前向", "forward+backward": "前向+反向"},
        "copy": "拷贝带宽",
        "impl": {
            ("layer_norm", "scratch"): "从零实现的 LayerNorm",
            ("layer_norm", "nn"): "nn.LayerNorm",
            ("layer_norm", "F"): "F.layer_norm",
            ("layer_norm", "compiled"): "编译后的 LayerNorm",
            ("rms_norm", "scratch"): "从零实现的 RMSNorm",
            ("rms_norm", "nn"): "nn.RMSNorm",
            ("rms_norm", "F"): "F.rms_norm",
            ("rms_norm", "compiled"): "编译后的 RMSNorm",
            ("fused_add_rms_norm", "triton"): "加法 + RMSNorm，本手册的 Triton 内核",
            ("fused_add_rms_norm", "nn"): "x + residual，再 nn.RMSNorm",
            ("fused_add_rms_norm", "compiled"): "torch.compile 编译的 x + residual 与 RMSNorm",
        },
        "missing": "–",
        "failed": "{what} 在 {size} 下无法运行：{why}",
        "chart": (
            "条形图，{passes}：对每种数据类型和尺寸，各实现实际达到的带宽占拷贝带宽的比例"
            "（条：中位数；须线：其范围），上限是拷贝的 100 %（虚线）；具体数字见上表。"
        ),
        "old": (
            "按本页在 CPU 上计时的方式测得：`torch.compile(dynamic=True)` 对每种归一化和每个"
            "隐藏维度只编译一次，所有行数共用，与先前调用编译出的代码放在一起；用挂钟时间"
            "计量连续多次调用，以一次同步结束；只用一个输入，不轮换。粗体的含义同上表。"
        ),
        "verdict": (
            "在 **{gpu}**（torch {torch}，Triton {triton}）上，尺寸 {size}，即真实 LLM "
            "一层激活的规模，各实现达到的拷贝带宽比例及其耗时范围如下（{date}；各尺寸的数据"
            "见下表）："
        ),
        "verdict_line": (
            "{what}，{passes}。最快的实现，以及范围与其重叠、分不出快慢的：{best}。其后：{rest}。"
        ),
        "verdict_all": "{what}，{passes}。测不出差别：{best}。",
        "versions": "本页的 GPU 数据是用 torch {torch} 和 Triton {triton} 在 {gpu} 上测得的。",
        "none_versions": "还没有记录任何 GPU 数据。",
        "figure": "{name}：{pct}",
        "sep": "；",
        "norm": {
            "layer_norm": "LayerNorm",
            "rms_norm": "RMSNorm",
            "fused_add_rms_norm": "残差加法 + RMSNorm",
        },
        "launch": (
            "†：主机启动一次调用所用时间的中位数，至少是 GPU 运行它所用时间中位数的 {bound}，"
            "所以 GPU 可能在等待启动，而为它计时的事件把等待也算了进去：这样的数字可能低估了"
            "内核的速度，测到的是启动这次调用的开销。"
        ),
        "launch_times": "每次调用，尺寸 {size}：{items}。",
        "launch_item": "{name}，{passes}：主机 {host:.0f} 微秒，GPU {gpu:.0f} 微秒",
        "short": {
            ("fused_add_rms_norm", "triton"): "本内核",
            ("fused_add_rms_norm", "nn"): "eager",
            ("fused_add_rms_norm", "compiled"): "torch.compile",
        },
        "sizes_win": (
            "在这次运行中，{name}位列最快（表中的粗体）的尺寸如下（未注明哪一遍时，指前向与"
            "前向+反向两遍）：{wins}。"
        ),
        "sizes_win_none": "在这次运行中，没有哪个尺寸上{name}位列最快。",
        "sizes_lose": "它慢于最快者、所列范围整个低于后者的尺寸是：{loses}。",
        "sizes_lose_none": "在所测的尺寸中，它没有慢于最快者的。",
        "win_item": "{size}（{passes}）",
        "lose_item": "{size}，{passes}（最快：{best}；{name} {pct}{times}）",
        "per_call": "，每次调用主机 {host:.0f} 微秒、GPU {gpu:.0f} 微秒",
        "and": "和",
        "list": "、",
        "host": "主机启动一次调用所用时间的中位数，在所测的 {n} 个尺寸上从低到高为：{items}。",
        "host_item": "{name}，{times}",
        "host_pass": "{passes} {span} 微秒",
        "host_gpu": "GPU 运行{name}一次调用所用时间的中位数：{times}。",
        "host_none": "这次运行没有记录主机每次调用所用的时间。",
        "comma": "，",
    },
}
TIMER = {
    "en": {"cuda events": "Timed with CUDA events", "wall clock": "Timed with the wall clock"},
    "zh": {"cuda events": "用 CUDA 事件计时", "wall clock": "用挂钟时间计时"},
}


def spaced(text: str, lang: str) -> str:
    """A Chinese sentence with a space between a Chinese character and a Latin name put
    next to it (torch.compile, eager), as the handbook's Chinese writes them."""
    if lang != "zh":
        return text
    text = re.sub(r"([\u4e00-\u9fff])([A-Za-z])", r"\1 \2", text)
    return re.sub(r"([A-Za-z.])([\u4e00-\u9fff])", r"\1 \2", text)


def name(row, words) -> str:
    """An implementation's full name."""
    return words["impl"].get((row["norm"], row["impl"]), row["impl"])


def short_name(row, words) -> str:
    """An implementation's short name, for the advice by size; its full one if none."""
    return words["short"].get((row["norm"], row["impl"])) or name(row, words)
