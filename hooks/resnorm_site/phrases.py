"""Measured results in the page's language.

A notebook publishes numbers and keys, never sentences: a value is text that holds a
number ("0.87", "3/3", "1e-02", "0.80× (0.35–2.27)"), or a phrase, ``{"phrase": ID,
field: value, ...}``, whose fields are values again (a list of them is joined with the
language's separator). Each language words a phrase from its own table below, so
``[[measured:warmup:verdict]]`` reads as an English sentence on an English page and as
a Chinese one on a Chinese page, from one run.
"""

from __future__ import annotations

import string

SEPARATOR = {"en": "; ", "zh": "；"}

PHRASES = {
    "en": {
        # lm_experiment.outcome, a run's verdict, keyed by the words it returns
        "outcome.trained": "trained",
        "outcome.no better than unigram": "no better than unigram",
        "outcome.diverged": "diverged",
        # a claim put to the test
        "claim.holds": "holds",
        "claim.refuted": "refuted",
        # a cost measured against a baseline: slower, faster, or within the spread
        "cost.slower": "slower",
        "cost.faster": "faster",
        "cost.unresolved": "no difference measurable at this precision",
        # warmup
        "warmup.shown": (
            "With Xavier initialization at peak lr {lr} without warmup, Post-LN failed in "
            "{post_failed} of {seeds} seeds (seed 0: {post_seed0}, final loss "
            "{post_seed0_loss}, unigram {unigram}) while Pre-LN trained in {pre_trained} of "
            "{seeds} (seed 0: final loss {pre_seed0_loss}); with {warmup_steps} warmup steps "
            "Post-LN {post_warmup} (final loss {post_warmup_loss})."
        ),
        "warmup.not_shown": (
            "Not shown at this scale: with Xavier initialization at peak lr {lr} without "
            "warmup, Post-LN failed in {post_failed} of {seeds} seeds and Pre-LN trained in "
            "{pre_trained} of {seeds}."
        ),
        "warmup.gpt2_init": (
            "With GPT-2's initialization at peak lr {lr} without warmup, Post-LN trained in "
            "{post_trained} of {seeds} seeds and Pre-LN in {pre_trained} of {seeds}; Post-LN's "
            "final loss was below Pre-LN's in {post_lower} of {seeds} (seed 0: "
            "{post_seed0_loss} vs {pre_seed0_loss})."
        ),
        # gradients at initialization: how a gradient scales with depth L
        "depth.ratio_at": "{ratio} at {layers} layers",
        "depth.power_law": (
            "Pre-LN last-layer gradient ~ L^{exponent} (95% interval {low} to {high}): {trend}"
        ),
        "trend.flat": "flat (0 is inside the interval)",
        "trend.sqrt": "follows 1/sqrt(L) (-0.5 is inside the interval)",
        "trend.faster": "falls faster than 1/sqrt(L)",
        "trend.slower": "falls, but more slowly than 1/sqrt(L)",
        "trend.grows": "grows with depth",
        # the Pre-LN stream's growth with the layer index l, from its exponent's interval
        "growth.faster": (
            "faster than linear (k = {exponent}, 95% interval {low} to {high}, above 1)"
        ),
        "growth.linear": ("about linear (k = {exponent}, 95% interval {low} to {high}, holds 1)"),
        "growth.slower": (
            "slower than linear (k = {exponent}, 95% interval {low} to {high}, below 1)"
        ),
        # making norms fast
        "machine": "CPU {cpu}, {cores} logical CPUs, {threads} torch threads, torch {torch}, {gpu}",
        "gpu.none": "no CUDA GPU",
        "gpu.named": "GPU {name}",
        "repeats": "{rounds} interleaved rounds; median (interquartile range)",
        "size": "{rows} x {hidden} {dtype}",
        "pass.forward": "forward",
        "pass.forward_backward": "forward+backward",
        "impl.scratch": "from scratch",
        "impl.nn": "nn.*",
        "impl.F": "F.*",
        "impl.compiled": "torch.compile",
        "impl.fastest": "fastest of each",
        "speed.faster": "RMSNorm faster",
        "speed.slower": "RMSNorm slower",
        "speed.unresolved": "no measurable difference",
        "speed.by_impl": "{impl}, {word}",
        "speed.verdict": (
            "RMSNorm against LayerNorm, {pass}, {size} on the CPU: {by_impl} (a difference "
            "counts only where the interquartile ranges of the timings do not overlap)"
        ),
        "paper.saving": "{pass}, a saving {where}",
        "paper.no_saving": "{pass}, no saving measurable",
        "paper.below": "below the paper's 7–64 %",
        "paper.above": "above the paper's 7–64 %",
        "paper.inside": "inside the paper's 7–64 %",
        "paper.unplaced": "not placed against the paper's 7–64 % at this precision",
        "paper.none": (
            "no saving by RMSNorm was measurable, forward or forward+backward, let alone 7–64 %"
        ),
        "paper.verdict": (
            "the norm alone, fastest RMSNorm vs fastest LayerNorm, {size} on this machine: "
            "{found}; the paper's 7–64 % are whole-model running times"
        ),
    },
    "zh": {
        "outcome.trained": "训练成功",
        "outcome.no better than unigram": "不比 unigram 好",
        "outcome.diverged": "发散",
        "claim.holds": "成立",
        "claim.refuted": "不成立",
        "cost.slower": "更慢",
        "cost.faster": "更快",
        "cost.unresolved": "在这个精度下测不出差别",
        "warmup.shown": (
            "用 Xavier 初始化、峰值学习率 {lr}、不预热时，{seeds} 个种子中 Post-LN 有 "
            "{post_failed} 个失败（种子 0：{post_seed0}，最终损失 {post_seed0_loss}，unigram "
            "损失 {unigram}），Pre-LN 有 {pre_trained} 个训练成功（种子 0：最终损失 "
            "{pre_seed0_loss}）；预热 {warmup_steps} 步后，Post-LN {post_warmup}（最终损失 "
            "{post_warmup_loss}）。"
        ),
        "warmup.not_shown": (
            "这个规模下没有复现：用 Xavier 初始化、峰值学习率 {lr}、不预热时，{seeds} 个种子中 "
            "Post-LN 有 {post_failed} 个失败，Pre-LN 有 {pre_trained} 个训练成功。"
        ),
        "warmup.gpt2_init": (
            "改用 GPT-2 的初始化、峰值学习率 {lr}、不预热时，{seeds} 个种子中 Post-LN 有 "
            "{post_trained} 个训练成功，Pre-LN 有 {pre_trained} 个；Post-LN 的最终损失低于 "
            "Pre-LN 的有 {post_lower} 个（种子 0：{post_seed0_loss} 对 {pre_seed0_loss}）。"
        ),
        "depth.ratio_at": "{layers} 层时为 {ratio}",
        "depth.power_law": (
            "Pre-LN 最后一层的梯度 ~ L^{exponent}（95% 置信区间 {low} 至 {high}）：{trend}"
        ),
        "trend.flat": "与深度无关（区间包含 0）",
        "trend.sqrt": "按 1/sqrt(L) 变化（区间包含 -0.5）",
        "trend.faster": "下降得比 1/sqrt(L) 更快",
        "trend.slower": "随深度下降，但比 1/sqrt(L) 慢",
        "trend.grows": "随深度增大",
        "growth.faster": "比线性更快（k = {exponent}，95% 置信区间 {low} 至 {high}，在 1 之上）",
        "growth.linear": "大致是线性的（k = {exponent}，95% 置信区间 {low} 至 {high}，包含 1）",
        "growth.slower": "比线性更慢（k = {exponent}，95% 置信区间 {low} 至 {high}，在 1 之下）",
        "machine": "CPU {cpu}，{cores} 个逻辑 CPU，{threads} 个 torch 线程，torch {torch}，{gpu}",
        "gpu.none": "没有 CUDA GPU",
        "gpu.named": "GPU {name}",
        "repeats": "交错重复 {rounds} 轮；中位数（四分位距）",
        "size": "{rows} × {hidden} 的 {dtype} 张量",
        "pass.forward": "前向",
        "pass.forward_backward": "前向加反向",
        "impl.scratch": "从零实现",
        "impl.nn": "nn.*",
        "impl.F": "F.*",
        "impl.compiled": "torch.compile",
        "impl.fastest": "各取最快",
        "speed.faster": "RMSNorm 更快",
        "speed.slower": "RMSNorm 更慢",
        "speed.unresolved": "测不出差别",
        "speed.by_impl": "{impl}：{word}",
        "speed.verdict": (
            "RMSNorm 对 LayerNorm，{pass}，CPU 上 {size}：{by_impl}（只有两者计时的四分位距"
            "不重叠，才算有差别）"
        ),
        "paper.saving": "{pass}节省了时间，{where}",
        "paper.no_saving": "{pass}测不出节省",
        "paper.below": "低于论文的 7–64%",
        "paper.above": "高于论文的 7–64%",
        "paper.inside": "落在论文的 7–64% 之内",
        "paper.unplaced": "以这个精度无法与论文的 7–64% 相比",
        "paper.none": "前向和前向加反向都测不出 RMSNorm 节省了时间，更谈不上 7–64%",
        "paper.verdict": (
            "只比较归一化本身，最快的 RMSNorm 对最快的 LayerNorm，本机上 {size}：{found}；"
            "论文中的 7–64% 是整个模型的运行时间"
        ),
    },
}


class PhraseError(LookupError):
    """A published value that no phrase table can word."""


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def word(lang: str, value) -> str:
    """``value`` worded in ``lang``: text as it is, a phrase from the language's table."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return SEPARATOR[lang].join(word(lang, v) for v in value)
    if not isinstance(value, dict) or not isinstance(value.get("phrase"), str):
        raise PhraseError(
            f"a published value must be text, a list or {{'phrase': ID, ...}}, got {value!r}"
        )
    ident = value["phrase"]
    if ident not in PHRASES[lang]:
        raise PhraseError(f"no {lang!r} phrase {ident!r} (resnorm_site/phrases.py)")
    template = PHRASES[lang][ident]
    given = {k: v for k, v in value.items() if k != "phrase"}
    if fields(template) != set(given):
        raise PhraseError(
            f"phrase {ident!r} takes fields {sorted(fields(template))}, got {sorted(given)}"
        )
    return template.format(**{k: word(lang, v) for k, v in given.items()})
