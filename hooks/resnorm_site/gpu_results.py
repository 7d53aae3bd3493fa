"""GPU figures on a page, from the results file ``make bench-gpu`` writes.

The site is built on a machine without a GPU, so its GPU figures cannot come from a
notebook run. ``scripts/bench_gpu.py`` measures them on a GPU and writes
``docs/experiments/results/gpu_norm_speed.json``: the GPU, driver, torch and Triton
versions, the commit, a hash of the benchmark and kernel code (``code_hash``), the date
and every sample. A page holds ``[[gpu-results:SECTION]]`` (a paragraph of its own, in
Markdown or in a notebook's Markdown cell); the build replaces it with that section's
table, where and when it was measured, and, when the code's hash now differs from the
file's, that the code changed since. Without the file the page says that no GPU figures
have been recorded yet, and how to record them.

Every figure is a share of the copy bandwidth measured in the same run, as a median with
the range the interquartile ranges of both timings allow (snippets/norm_speed.py's
pct_of_copy; tests check the two agree). A verdict is only drawn beyond that spread.
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
            "Each cell: achieved bandwidth as a share of the copy bandwidth measured in the "
            "same run: the median, and in brackets the range that the interquartile ranges "
            "of both timings allow. **Bold**: the fastest of its operation and those not "
            "measurably slower (ranges of the times overlap). {timer}; inputs rotated through "
            "{rotate} copies, "
            "at least twice the L2; {repeats} interleaved rounds."
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
            "On **{gpu}** at {size}, the size of a real LLM layer's activations, as shares "
            "of the copy bandwidth ({date}; the tables below have every size):"
        ),
        "verdict_line": "{what}, {passes}. Fastest, within the spread: {best}. Then: {rest}.",
        "verdict_all": "{what}, {passes}. No difference measurable: {best}.",
        "figure": "{name}: {pct}",
        "sep": "; ",
        "norm": {
            "layer_norm": "LayerNorm",
            "rms_norm": "RMSNorm",
            "fused_add_rms_norm": "Residual add + RMSNorm",
        },
        "launch": (
            "†: the host took at least 80% as long to launch each call as the GPU took to "
            "run it, so the GPU may have waited between calls: that figure may measure the "
            "cost of launching a lone call rather than the speed of its kernels."
        ),
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
            "每个单元格：实际达到的带宽占同一次运行中测得的拷贝带宽的比例，先是中位数，"
            "括号里是两个计时的四分位距所允许的范围。**粗体**：同一运算中最快的实现，以及"
            "测不出比它慢的实现（计时范围重叠）。{timer}；输入在 {rotate} 份副本间轮换，"
            "总量至少是 L2 的两倍；交错进行 {repeats} 轮。"
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
            "在 **{gpu}** 上，尺寸 {size}，即真实 LLM 一层激活的规模，各实现达到的拷贝带宽"
            "比例如下（{date}；各尺寸的数据见下表）："
        ),
        "verdict_line": "{what}，{passes}。误差范围内最快：{best}。其后：{rest}。",
        "verdict_all": "{what}，{passes}。测不出差别：{best}。",
        "figure": "{name}：{pct}",
        "sep": "；",
        "norm": {
            "layer_norm": "LayerNorm",
            "rms_norm": "RMSNorm",
            "fused_add_rms_norm": "残差加法 + RMSNorm",
        },
        "launch": (
            "†：主机启动每次调用所用的时间，至少是 GPU 运行它的时间的 80%，GPU 可能在两次调用"
            "之间等待：这个数字测到的可能是单独启动一次调用的开销，而不是其内核的速度。"
        ),
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


def pct_of_copy(row) -> tuple[float, float, float]:
    """A row's bandwidth as a percentage of the copy's: median, low, high."""
    (nm, nl, nh), (cm, cl, ch) = quartiles(row["samples"]), quartiles(row["copy_samples"])
    scale = 100 * row["bytes"] / row["copy_bytes"]
    return scale * cm / nm, scale * cl / nh, scale * ch / nl


def fastest_group(rows) -> set:
    """The impls of rows (one operation, size, dtype, pass) not measurably slower than the
    fastest: their time ranges overlap the fastest one's (the rule of norm_speed.compare)."""
    spans = {r["impl"]: quartiles(r["samples"]) for r in rows}
    best = min(spans, key=lambda impl: spans[impl][0])
    return {impl for impl, (_, low, _) in spans.items() if low <= spans[best][2]}


def launch_bound(row) -> bool:
    """The host took nearly as long to launch a call as the GPU to run it: the GPU may
    have waited for the launches, and the figure is then not the kernel's."""
    host = row.get("host_samples")
    return bool(host) and quartiles(host)[0] >= LAUNCH_BOUND * quartiles(row["samples"])[0]


def _column(row) -> tuple:
    return (row["dtype"], row["rows"], row["hidden"])


def _column_name(col) -> str:
    dtype, rows, hidden = col
    return f"{dtype} {rows}×{hidden}"


def table(rows, norms, lang: str) -> str:
    """One Markdown table per pass: a line per implementation, a column per dtype and size."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms]
    cols = sorted({_column(r) for r in rows}, key=lambda c: (c[0] != "float32", c[1] * c[2]))
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
                m, low, high = pct_of_copy(r)
                cell = f"{m:.0f}% ({low:.0f}–{high:.0f})"
                cell = f"**{cell}**" if impl in best[(norm, c)] else cell
                cells.append(cell + " †" if launch_bound(r) else cell)
            name = words["impl"].get((norm, impl), f"{norm} {impl}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)


def chart(rows, norms, lang: str, passes: str, chart_id: str) -> str:
    """An inline SVG: each implementation's share of the copy bandwidth (bar: median;
    whisker: range) per dtype and size, under the roof, the copy at 100 % (dashed)."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms and r["passes"] == passes]
    cols = sorted({_column(r) for r in rows}, key=lambda c: (c[0] != "float32", c[1] * c[2]))
    spans = {id(r): pct_of_copy(r) for r in rows}
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


def verdict(rows, norms, lang: str, data: dict) -> str:
    """A few sentences, at the headline size: per operation and pass, the fastest
    implementations within the spread (fastest_group), then the rest, with their figures."""
    words, col = WORDS[lang], headline(rows)
    lines = [words["verdict"].format(gpu=data["machine"].get("gpu"), size=_column_name(col),
                                     date=str(data["date"])[:10])]  # fmt: skip

    def figure(r):
        m, low, high = pct_of_copy(r)
        name = words["impl"].get((r["norm"], r["impl"]), r["impl"])
        pct = f"{m:.0f}% ({low:.0f}–{high:.0f}){' †' if launch_bound(r) else ''}"
        return words["figure"].format(name=name, pct=pct)

    for norm in norms:
        for p in PASSES:
            here = [r for r in rows if (r["norm"], r["passes"]) == (norm, p)
                    and _column(r) == col]  # fmt: skip
            if not here:
                continue
            here.sort(key=lambda r: -pct_of_copy(r)[0])
            best = fastest_group(here)
            top = words["sep"].join(figure(r) for r in here if r["impl"] in best)
            rest = words["sep"].join(figure(r) for r in here if r["impl"] not in best)
            what, passes = words["norm"][norm], words["pass"][p].lower()
            key = "verdict_line" if rest else "verdict_all"
            lines.append("- " + words[key].format(what=what, passes=passes, best=top, rest=rest))
    flagged = any(launch_bound(r) for r in rows if _column(r) == col)
    # a blank line after the first: Python-Markdown starts a list only after one
    return lines[0] + "\n\n" + "\n".join(lines[1:]) + ("\n\n" + words["launch"] if flagged else "")


def render(section: str, data: dict | None, current_hash: str, lang: str) -> str:
    """The Markdown that stands for [[gpu-results:SECTION]]: provenance, table, notes;
    for [[gpu-results:SECTION-verdict]], the verdict at the headline size alone."""
    brief = section.endswith("-verdict")
    section = section.removesuffix("-verdict")
    if section not in SECTIONS:
        raise ResultsError(f"unknown section {section!r}; known: {sorted(SECTIONS)}")
    words = WORDS[lang]
    key, norms = SECTIONS[section]
    rows = [r for r in (data or {}).get(key, []) if r["norm"] in norms]
    if not rows:  # the old way is shown below the main table, which already says so
        return words["none_old" if section == "old_method" else "none"].format(file=RESULTS_FILE)
    stale = data["code_hash"] != current_hash
    since = words["stale" if stale else "fresh"].format(
        old=str(data["code_hash"])[:12], new=current_hash[:12], hash=current_hash[:12]
    )
    if brief:  # the verdict says only when its figures are stale
        return verdict(rows, norms, lang, data) + (f"\n\n{since}" if stale else "")
    m = data["machine"]
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
        parts.append(words["launch"])
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
