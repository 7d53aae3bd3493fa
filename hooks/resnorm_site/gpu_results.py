"""GPU figures on a page, from the results file ``make bench-gpu`` writes.

The site is built on a machine without a GPU, so its GPU figures cannot come from a
notebook run. ``scripts/bench_gpu.py`` measures them on a GPU and writes
``docs/experiments/results/gpu_norm_speed.json``: the GPU, driver, torch and Triton
versions, the commit, a hash of the benchmark and kernel code (``code_hash``), the date
and every sample. A page holds ``[[gpu-results:SECTION]]`` (a paragraph of its own, in
Markdown or in a notebook's Markdown cell); the build replaces it with that section's
table, where and when it was measured, and, when the code's hash now differs from the
file's, that the code changed since; ``[[gpu-results:SECTION-verdict]]`` the verdict at
the headline size alone, ``[[gpu-results:SECTION-versions]]`` one sentence naming the
torch and Triton that measured it. Without the file the page says that no GPU figures
have been recorded yet, and how to record them.

Every figure is a share of the copy bandwidth measured in the same run: the median time's,
and in brackets the share at the first and third quartiles of the times (share). One copy
is timed beside every implementation of a size, so its median scales a column alike and
the printed ranges overlap where the time ranges do. The verdict and the bold cells apply
the rule of snippets/norm_speed.py's compare to the ranges as printed (fastest_group):
a reader who compares two printed ranges reaches the page's verdict.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import math
import re
import tokenize
from pathlib import Path

from resnorm_site.paths import ROOT

SCHEMA = 1
RESULTS_FILE = "docs/experiments/results/gpu_norm_speed.json"
# What the figures depend on: a change to any of these makes them stale. A file missing
# from the tree being hashed is hashed as absent.
CODE_FILES = (
    "scripts/bench_gpu.py",
    "snippets/norm_speed.py",
    "snippets/layer_norm.py",
    "snippets/rms_norm.py",
    "snippets/fused_add_rms_norm.py",
)
MARKER = re.compile(r"\[\[gpu-results:([\w-]+)\]\]")
PARAGRAPH = re.compile(r"<p>\s*\[\[gpu-results:([\w-]+)\]\]\s*</p>")
# The sections of the file a page can show: the list of rows each reads, and which
# operations (the rows' "norm") it shows. old_method: the compiled modules timed as the
# norm-speed page once timed them on a GPU, kept to show what that got wrong.
SECTIONS = {
    "norm_speed": ("rows", ("layer_norm", "rms_norm")),
    "fused_add_rms_norm": ("fused_rows", ("fused_add_rms_norm",)),
    "old_method": ("old_method_rows", ("layer_norm", "rms_norm")),
}
PASSES = ("forward", "forward+backward")
LAUNCH_BOUND = 0.8  # host time per call / GPU time per call, from which a figure is flagged
VIEWS = ("verdict", "versions")  # [[gpu-results:SECTION-VIEW]]: a part of the section alone
ROW_KEYS = {"norm", "impl", "rows", "hidden", "dtype", "passes", "samples", "copy_samples"}
ROW_KEYS |= {"bytes", "copy_bytes", "compile"}
TOP_KEYS = {"schema", "date", "commit", "code_hash", "machine", "settings", "rows"}

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
    },
}
TIMER = {
    "en": {"cuda events": "Timed with CUDA events", "wall clock": "Timed with the wall clock"},
    "zh": {"cuda events": "用 CUDA 事件计时", "wall clock": "用挂钟时间计时"},
}


class ResultsError(ValueError):
    """The results file is not one that scripts/bench_gpu.py writes."""


def code_text(source: bytes) -> bytes:
    """Python source without its comments and blank lines, each line's trailing spaces
    cut: a comment that is reworded does not change what was measured. Source that does
    not tokenize is taken as it is."""
    try:
        text = source.decode("utf-8")
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (UnicodeDecodeError, tokenize.TokenError, SyntaxError):
        return source
    lines = text.splitlines()
    for tok in tokens:
        if tok.type == tokenize.COMMENT:  # a comment runs to the end of its line
            row, col = tok.start
            lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines if line.strip()).encode("utf-8")


def code_hash(root: Path = ROOT, files=CODE_FILES) -> str:
    """sha256 over each code file's path and code (code_text: comments left out), in
    order ("absent" for a missing one)."""
    digest = hashlib.sha256()
    for name in files:
        path = Path(root) / name
        digest.update(name.encode() + b"\0")
        digest.update(code_text(path.read_bytes()) if path.exists() else b"absent")
        digest.update(b"\0")
    return digest.hexdigest()


def read(path: Path) -> dict | None:
    """The results file, checked; None where there is none."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ResultsError(f"{path}: not JSON ({err})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ResultsError(f"{path}: expected schema {SCHEMA}, got {got!r}")
    missing = TOP_KEYS - set(data)
    if missing:
        raise ResultsError(f"{path}: missing {sorted(missing)}")
    for i, row in enumerate(r for key, _ in SECTIONS.values() for r in data.get(key, [])):
        lacking = ROW_KEYS - set(row)
        if lacking:
            raise ResultsError(f"{path}: row {i} lacks {sorted(lacking)}")
        for key in ("samples", "copy_samples"):
            values = row[key]
            if not values or not all(isinstance(v, (int, float)) and v > 0 for v in values):
                raise ResultsError(f"{path}: row {i} {key} must be positive seconds")
    return data


def quartiles(samples) -> tuple[float, float, float]:
    """(median, first quartile, third quartile), interpolated as numpy does."""
    xs = sorted(samples)

    def at(p):
        pos = p * (len(xs) - 1)
        i = math.floor(pos)
        return xs[i] if i == pos else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)

    return at(0.5), at(0.25), at(0.75)


def share(row) -> tuple[float, float, float]:
    """A row's figure: the bandwidth of its median time as a percentage of the copy's median
    bandwidth (snippets/norm_speed.py's pct_of_copy), and the same at its third and first
    time quartiles: (median, low, high). The copy's spread is left to the copy's own line:
    it is common to every implementation of a size, and would blur their comparison."""
    (nm, nl, nh), copy = quartiles(row["samples"]), quartiles(row["copy_samples"])[0]
    scale = 100 * row["bytes"] / row["copy_bytes"] * copy
    return scale / nm, scale / nh, scale / nl


def printed(row) -> tuple[int, int, int]:
    """share(row) as the page prints it, in whole percent."""
    return tuple(int(f"{v:.0f}") for v in share(row))


def fastest_group(rows) -> set:
    """The impls of rows (one operation, size, dtype, pass) not measurably slower than the
    fastest: norm_speed.compare's rule (ranges that overlap or touch tell nothing apart),
    applied to the ranges as printed, and to each pair: every impl whose printed range
    overlaps that of one in the group joins it. So no impl left out overlaps one put in,
    and each left out is slower, by its whole range, than each put in."""
    figures = {r["impl"]: printed(r) for r in rows}
    group = {max(rows, key=lambda r: share(r)[0])["impl"]}
    grown = True
    while grown:
        joining = {
            impl
            for impl, (_, low, high) in figures.items()
            if impl not in group
            and any(low <= figures[g][2] and figures[g][1] <= high for g in group)
        }
        group |= joining
        grown = bool(joining)
    return group


def _figure(row) -> str:
    m, low, high = printed(row)
    return f"{m}% ({low}–{high})"


def _dagger(row) -> str:
    return " †" if launch_bound(row) else ""


def launch_bound(row) -> bool:
    """The host took nearly as long to launch a call as the GPU to run it: the GPU may
    have waited for the launches, and the figure is then not the kernel's."""
    host = row.get("host_samples")
    return bool(host) and quartiles(host)[0] >= LAUNCH_BOUND * quartiles(row["samples"])[0]


def launch_note(lang: str) -> str:
    """What † means, with the bound it is drawn at."""
    return WORDS[lang]["launch"].format(bound=f"{LAUNCH_BOUND:.0%}")


def _column(row) -> tuple:
    return (row["dtype"], row["rows"], row["hidden"])


def _order(col) -> tuple:
    """Columns float32 first, then by elements, then by tokens: one order on every build."""
    dtype, rows, hidden = col
    return (dtype != "float32", rows * hidden, rows)


def _column_name(col) -> str:
    dtype, rows, hidden = col
    return f"{dtype} {rows}×{hidden}"


def table(rows, norms, lang: str) -> str:
    """One Markdown table per pass: a line per implementation, a column per dtype and size."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms]
    cols = sorted({_column(r) for r in rows}, key=_order)
    out = []
    for p in PASSES:
        here = [r for r in rows if r["passes"] == p]
        if not here:
            continue
        lines = ["| " + words["pass"][p] + " | " + " | ".join(map(_column_name, cols)) + " |"]
        lines.append("|---" * (len(cols) + 1) + "|")
        copy = []
        for c in cols:
            r = next((r for r in here if _column(r) == c), None)
            if r is None:
                copy.append(words["missing"])
                continue
            m, low, high = quartiles(r["copy_samples"])
            gb = r["copy_bytes"] / 1e9
            copy.append(f"{gb / m:.0f} GB/s ({gb / high:.0f}–{gb / low:.0f})")
        lines.append(f"| {words['copy']} | " + " | ".join(copy) + " |")
        best = {}
        for norm in norms:
            for c in cols:
                group = [r for r in here if r["norm"] == norm and _column(r) == c]
                best[(norm, c)] = fastest_group(group) if group else set()
        impls = []
        for r in here:
            if (r["norm"], r["impl"]) not in impls:
                impls.append((r["norm"], r["impl"]))
        for norm, impl in impls:
            cells = []
            for c in cols:
                r = next((r for r in here if (r["norm"], r["impl"]) == (norm, impl)
                          and _column(r) == c), None)  # fmt: skip
                if r is None:
                    cells.append(words["missing"])
                    continue
                cell = f"**{_figure(r)}**" if impl in best[(norm, c)] else _figure(r)
                cells.append(cell + _dagger(r))
            name = words["impl"].get((norm, impl), f"{norm} {impl}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def chart(rows, norms, lang: str, passes: str, chart_id: str) -> str:
    """An inline SVG: each implementation's share of the copy bandwidth (bar: median;
    whisker: range) per dtype and size, under the roof, the copy at 100 % (dashed)."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms and r["passes"] == passes]
    cols = sorted({_column(r) for r in rows}, key=_order)
    spans = {id(r): share(r) for r in rows}
    top = max([110.0] + [hi for _, _, hi in spans.values()])
    left, width, bar, y = 300, 320, 12, 10
    x = lambda v: left + width * v / top  # noqa: E731
    out = []
    for c in cols:
        out.append(f'<text x="0" y="{y + 10}" font-weight="bold">{_column_name(c)}</text>')
        y += 16
        for r in (r for r in rows if _column(r) == c):
            m, low, high = spans[id(r)]
            name = html.escape(words["impl"].get((r["norm"], r["impl"]), r["impl"]))
            out.append(f'<text x="8" y="{y + 10}">{name}</text>')
            out.append(
                f'<rect x="{left}" y="{y}" width="{x(m) - left:.1f}" height="{bar}" '
                'fill="#4a78b5"/>'
            )
            out.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y + 6}" y2="{y + 6}" '
                'stroke="currentColor"/>'
            )
            y += bar + 4
        y += 8
    roof = (
        f'<line x1="{x(100):.1f}" x2="{x(100):.1f}" y1="0" y2="{y}" stroke="currentColor" '
        'stroke-dasharray="4 3"/>'
    )
    label = (
        f'<text x="{x(100):.1f}" y="{y + 12}" text-anchor="end">{words["copy"]} = 100 %</text>'
        f'<text x="{left}" y="{y + 12}">0 %</text>'
    )
    title = words["chart"].format(passes=words["pass"][passes].lower())
    return (
        f'<svg class="rn-gpu-chart" role="img" aria-labelledby="{chart_id}" '
        f'viewBox="0 0 {left + width + 20} {y + 20}" font-size="12" fill="currentColor">'
        f'<title id="{chart_id}">{html.escape(title)}</title>'
        # lines and labels in the page's text colour (currentColor), so that dark mode
        # keeps them readable; attributes, not a <style>: the notebook pages' hook moves
        # every <style> into a stylesheet <link>, which an <svg> cannot hold
        + "".join(out)
        + roof
        + label
        + "</svg>"
    )


def headline(rows) -> tuple:
    """The column a verdict is drawn at: the bfloat16 size with the most elements (of two
    alike, the one with more tokens), the dtype and size of a real model's training."""
    cols = {_column(r) for r in rows}
    half = [c for c in cols if c[0] == "bfloat16"] or cols
    return max(half, key=lambda c: (c[1] * c[2], c[1]))


def _name(row, words) -> str:
    return words["impl"].get((row["norm"], row["impl"]), row["impl"])


def verdict(rows, norms, lang: str, data: dict) -> str:
    """A few sentences, at the headline size: per operation and pass, the fastest
    implementations and those the ranges cannot tell from them (fastest_group), then the
    rest, with their figures; under them, what † means and the host's and the GPU's time
    per call of each figure it marks."""
    words, col, m = WORDS[lang], headline(rows), data["machine"]
    lines = [words["verdict"].format(gpu=m.get("gpu"), torch=m.get("torch"),
                                     triton=m.get("triton") or "–", size=_column_name(col),
                                     date=str(data["date"])[:10])]  # fmt: skip
    flagged = []
    for norm in norms:
        for p in PASSES:
            here = [r for r in rows if (r["norm"], r["passes"]) == (norm, p)
                    and _column(r) == col]  # fmt: skip
            if not here:
                continue
            here.sort(key=lambda r: -share(r)[0])
            best = fastest_group(here)
            top, rest = (
                words["sep"].join(
                    words["figure"].format(name=_name(r, words), pct=_figure(r) + _dagger(r))
                    for r in here
                    if (r["impl"] in best) == inside
                )
                for inside in (True, False)
            )
            what, passes = words["norm"][norm], words["pass"][p].lower()
            key = "verdict_line" if rest else "verdict_all"
            lines.append("- " + words[key].format(what=what, passes=passes, best=top, rest=rest))
            flagged += [r for r in here if launch_bound(r)]
    # a blank line after the first: Python-Markdown starts a list only after one
    out = lines[0] + "\n\n" + "\n".join(lines[1:])
    if not flagged:
        return out
    items = words["sep"].join(
        words["launch_item"].format(
            name=_name(r, words),
            passes=words["pass"][r["passes"]].lower(),
            host=quartiles(r["host_samples"])[0] * 1e6,
            gpu=quartiles(r["samples"])[0] * 1e6,
        )
        for r in flagged
    )
    times = words["launch_times"].format(size=_column_name(col), items=items)
    return out + "\n\n" + launch_note(lang) + times


def render(section: str, data: dict | None, current_hash: str, lang: str) -> str:
    """The Markdown that stands for [[gpu-results:SECTION]]: provenance, table, notes;
    for [[gpu-results:SECTION-verdict]], the verdict at the headline size alone; for
    [[gpu-results:SECTION-versions]], the torch and Triton the figures were measured with."""
    section, _, view = section.partition("-")
    if section not in SECTIONS:
        raise ResultsError(f"unknown section {section!r}; known: {sorted(SECTIONS)}")
    if view and view not in VIEWS:
        raise ResultsError(f"unknown view {view!r} of {section!r}; known: {list(VIEWS)}")
    words = WORDS[lang]
    key, norms = SECTIONS[section]
    rows = [r for r in (data or {}).get(key, []) if r["norm"] in norms]
    if not rows:  # the old way is shown below the main table, which already says so
        none = "none_versions" if view == "versions" else "none"
        return words["none_old" if section == "old_method" else none].format(file=RESULTS_FILE)
    m = data["machine"]
    if view == "versions":
        return words["versions"].format(
            torch=m.get("torch"), triton=m.get("triton") or "–", gpu=m.get("gpu")
        )
    stale = data["code_hash"] != current_hash
    since = words["stale" if stale else "fresh"].format(
        old=str(data["code_hash"])[:12], new=current_hash[:12], hash=current_hash[:12]
    )
    if view == "verdict":  # the verdict says only when its figures are stale
        return verdict(rows, norms, lang, data) + (f"\n\n{since}" if stale else "")
    parts = [
        words["where"].format(
            gpu=m.get("gpu"),
            driver=m.get("driver"),
            cuda=m.get("cuda"),
            torch=m.get("torch"),
            triton=m.get("triton") or "–",
            date=data["date"],
            commit=str(data["commit"])[:12],
            dirty=words["dirty"] if data.get("dirty") else "",
            file=RESULTS_FILE,
        )
    ]
    parts.append(since)
    parts.append(table(rows, norms, lang))
    for i, p in enumerate(q for q in PASSES if any(r["passes"] == q for r in rows)):
        parts.append(chart(rows, norms, lang, p, f"rn-gpu-{section}-{i}"))
    if section == "old_method":
        parts.append(words["old"])
        return "\n\n".join(parts)
    first = rows[0]
    repeats = len(first["samples"])
    timer = TIMER[lang].get(first.get("timer"), str(first.get("timer")))
    counts = sorted({r.get("rotate", 0) for r in rows})  # each size cycles its own number
    rotate = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    parts.append(words["how"].format(timer=timer, rotate=rotate, repeats=repeats))
    if any(launch_bound(r) for r in rows):
        parts.append(launch_note(lang))
    compiled = [r["compile"] for r in rows if r.get("compile")]
    if compiled:
        c = compiled[0]
        parts.append(
            words["compile"].format(
                dynamic=c["dynamic"],
                mode=c["mode"],
                graphs="/".join(sorted({str(x["graphs"]) for x in compiled})),
                recompiles="/".join(sorted({str(x["recompiles"]) for x in compiled})),
                timed=sum(x["timed_graphs"] for x in compiled),
            )
        )
    for f in data.get("failures", []):
        if f.get("norm") in norms:
            what = words["impl"].get((f["norm"], f["impl"]), f"{f['norm']} {f['impl']}")
            size = f"{f['dtype']} {f['rows']}×{f['hidden']}"
            parts.append(words["failed"].format(what=what, size=size, why=f["error"]))
    return "\n\n".join(parts)


def fill_markdown(markdown: str, lang: str, root: Path = ROOT) -> str:
    """Each [[gpu-results:SECTION]] of a Markdown page replaced by its Markdown."""
    if "[[gpu-results:" not in markdown:
        return markdown
    data, current = read(Path(root) / RESULTS_FILE), code_hash(root)
    return MARKER.sub(lambda m: render(m.group(1), data, current, lang), markdown)


def fill_html(html: str, lang: str, root: Path = ROOT) -> str:
    """Each paragraph [[gpu-results:SECTION]] of a rendered page (a notebook's Markdown
    cell) replaced by its Markdown, rendered to HTML."""
    if "[[gpu-results:" not in html:
        return html
    import markdown as md

    data, current = read(Path(root) / RESULTS_FILE), code_hash(root)

    def block(m: re.Match) -> str:
        return md.markdown(render(m.group(1), data, current, lang), extensions=["tables"])

    html = PARAGRAPH.sub(block, html)
    if MARKER.search(html):
        raise ResultsError("[[gpu-results:...]] must be a paragraph of its own")
    return html
