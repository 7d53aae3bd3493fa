# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Memory: does Pre-LN save training memory?
#
# One of the articles this handbook started from claims that moving LayerNorm in
# front of the sublayer ([Pre-LN](../../placement/pre-ln/)) lowers peak training
# memory by another 5–10 %, because the activations in front of LayerNorm need not be
# kept for the backward pass; its section heading even speaks of inference memory.
# It gives no source, and we found none. Another of those articles says the two
# placements use the same memory. This experiment counts, tensor by tensor, what a
# training step keeps for the backward pass in Pre-LN and
# [Post-LN](../../placement/post-ln/) models that differ in nothing but
# `norm_position`, and measures the peak memory of a whole step.
#
# ## What we expected
#
# - **What "activations" are.** Korthikanti et al. 2022 (arXiv 2205.05198, §4)
#   define them as every tensor created in the forward pass that the backward pass
#   needs, excluding the parameters and the optimizer state. Autograd keeps exactly
#   these tensors, and `torch.autograd.graph.saved_tensors_hooks` sees each one as it
#   is saved.
# - **A LayerNorm keeps its input, wherever it sits.** The gradient of
#   $y = (x - \mu)/\sigma$ with respect to $x$ needs $x$ (or $\hat{x}$) and $\sigma$;
#   PyTorch's LayerNorm saves its input with the mean and the reciprocal standard
#   deviation (checked in the first cell below). Korthikanti et al. (§4.1) charge each
#   of a layer's two LayerNorms its input, $s \cdot b \cdot h$ elements, and nothing in
#   their count depends on where the norm sits. In Pre-LN that input is the residual
#   stream $x$; in Post-LN it is the sum $x + F(x)$. Either way it is one tensor of
#   the same shape, so the mechanism the claim gives does not exist.
# - **One difference in Pre-LN's disfavour.** A Pre-LN stack needs one more norm after
#   its last layer (GPT-2 report, §2.3), and Korthikanti et al. (§4.3) count that
#   "last layer-norm" as extra activation memory. A Post-LN stack needs no such norm
#   (the handbook's `Stack` adds none; PyTorch's `nn.Transformer` adds one anyway,
#   pytorch issues #50086 and #74092). So we expected the same bytes per layer and a
#   slightly larger total for Pre-LN.
#
# ## Settings
#
# - Models: `Stack` and `GPT` from `snippets/resnorm.py`
#   ([one sublayer connection](../../placement/sublayer-connection/)); a Pre-LN and a
#   Post-LN model differ only in `norm_position`. Sandwich (Peri-LN, two norms per
#   sublayer) is counted too, for contrast. Norms: LayerNorm and
#   [RMSNorm](../../foundations/rmsnorm/). Causal attention, GELU MLP with
#   $d_\text{ff} = 4\,d_\text{model}$, dropout 0, float32.
# - Saved bytes: stacks of 4 layers, batch 4, three sizes
#   $(d_\text{model}, \text{heads}, \text{sequence length}) =$ (64, 4, 64),
#   (128, 4, 128), (256, 8, 256); the input requires grad, as the output of trainable
#   embeddings does. Seed 0 for every model and input.
# - Counting rule: during one forward pass, every tensor that autograd saves is
#   mapped to its storage; a storage is counted once with all its bytes, however many
#   saved tensors (views, reshapes, the same tensor saved by two ops) point into it,
#   and it is charged to the innermost module that saved it first. Parameters and
#   buffers are not counted. Small tensors (LayerNorm's mean and $1/\sigma$, the
#   causal mask) are counted; Korthikanti et al. leave them out.
# - Peak memory: a GPT (vocabulary 256, 4 layers, $d_\text{model}$ 128, 4 heads,
#   sequence length 128, batch 8, seed 0), one step = forward, cross-entropy loss,
#   backward, gradients set to `None` before it. On CPU the profiler
#   (`profile_memory=True`) records every allocation and free of PyTorch's CPU
#   allocator and the peak is the running sum's maximum; on CUDA,
#   `torch.cuda.max_memory_allocated`. Both report bytes above what was allocated
#   when the step began. Resident set size (RSS) was not used: it also counts
#   Python's own memory and memory the allocator has freed but not returned.
# - One CPU thread (`torch.set_num_threads(1)`): which tensors are saved and
#   allocated does not depend on the thread count, and one thread keeps these small
#   operations quick when other processes compete for the cores.
#
# The code is `snippets/activation_memory.py`:

# %%
import os
import platform
import random
import statistics
import time

import matplotlib.pyplot as plt
import torch
from IPython.display import display
from torch import nn

from snippets.activation_memory import (
    korthikanti_bytes_per_layer,
    layer_index,
    peak_step_memory,
    saved_for_backward,
    total_bytes,
)
from snippets.resnorm import GPT, GPTConfig, Stack

torch.set_num_threads(1)  # see Settings: the counts do not depend on it
torch.manual_seed(0)
x = torch.randn(4, 64, 64, requires_grad=True)  # (B, T, C)
y = nn.LayerNorm(64)(x)
saved = sorted(a for a in dir(y.grad_fn) if a.startswith("_saved"))
print(f"{y.grad_fn.name()} keeps: {', '.join(saved)}")
print(f"its input is x itself: {y.grad_fn._saved_input is x}")
mean, rstd = y.grad_fn._saved_result1, y.grad_fn._saved_result2  # (B, T, 1) each
var = x.var(-1, unbiased=False, keepdim=True)
print(
    f"result1 is the mean: {torch.allclose(mean, x.mean(-1, keepdim=True), atol=1e-6)}, "
    f"result2 is 1/sigma: {torch.allclose(rstd, (var + 1e-5).rsqrt())}"
)
print("counted by saved_for_backward:")
for r in saved_for_backward(nn.LayerNorm(64), x):
    print(f"  shape {r.shape}, {r.nbytes} bytes")

z = nn.RMSNorm(64)(x)
print(f"RMSNorm's output comes from {z.grad_fn.name()}; counted:")
for r in saved_for_backward(nn.RMSNorm(64), x):
    print(f"  shape {r.shape}, {r.nbytes} bytes")

# %% [markdown]
# `result1` and `result2` are the mean and $1/\sigma$, one number per token; weight
# and bias are parameters. So a LayerNorm keeps its input for the backward pass in
# any placement. RMSNorm keeps its input too. Where its output comes from a
# `MulBackward0` node, PyTorch computed it from elementwise operations (square, mean,
# reciprocal square root, two products) rather than in one fused kernel, and each
# operation keeps what its own backward needs: here the input, $1/\mathrm{RMS}$ and the
# normalized vector, one tensor of the input's size more than LayerNorm.
#
# ## Per layer, per placement
#
# The same count for every layer of a 4-layer stack, at the middle size, with the
# bytes charged to the module that saved them. Anything outside the layers (the
# final norm of Pre-LN and Sandwich) is listed separately.

# %%
N_LAYERS, BATCH = 4, 4
SIZES = [(64, 4, 64), (128, 4, 128), (256, 8, 256)]  # (d_model, n_heads, seq_len)
PLACEMENTS = ("post", "pre", "sandwich")
NORM_KINDS = ("layernorm", "rmsnorm")


def count(placement, norm, d_model, n_heads, seq_len):
    torch.manual_seed(0)
    model = Stack(
        N_LAYERS, d_model, n_heads, 4 * d_model, norm_position=placement, norm=norm, causal=True
    )
    x = torch.randn(BATCH, seq_len, d_model, requires_grad=True)
    return saved_for_backward(model, x)


records = {
    (p, n, size): count(p, n, *size) for p in PLACEMENTS for n in NORM_KINDS for size in SIZES
}

MIB = 2**20
size = SIZES[1]
print(f"d_model {size[0]}, heads {size[1]}, seq_len {size[2]}, batch {BATCH}: MiB saved")
layer_cols = " ".join(f"layer {i}" for i in range(N_LAYERS))
print(f"{'norm':>9} {'placement':>9} | {layer_cols} | outside   total")
for n in NORM_KINDS:
    for p in PLACEMENTS:
        recs = records[(p, n, size)]
        per_layer = [
            total_bytes(recs, lambda r, i=i: layer_index(r.module) == i) for i in range(N_LAYERS)
        ]
        outside = total_bytes(recs, lambda r: layer_index(r.module) is None)
        cells = " ".join(f"{b / MIB:7.3f}" for b in per_layer)
        print(f"{n:>9} {p:>9} | {cells} | {outside / MIB:7.3f} {total_bytes(recs) / MIB:7.3f}")

# %% [markdown]
# Where the bytes of one layer go, by the kind of module that saved them
# ("MultiHeadAttention" is the attention core: Q, K, V, the softmax output and the
# causal mask; "Linear" are the inputs of the four linear layers):

# %% alt="MiB one layer saves for backward, by module, per placement, with LayerNorm and RMSNorm"
KINDS = ["Linear", "MultiHeadAttention", "GELU", "LayerNorm", "RMSNorm"]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True, constrained_layout=True)
for ax, n in zip(axes, NORM_KINDS, strict=True):
    bottom = [0.0] * len(PLACEMENTS)
    for kind in KINDS:
        heights = [
            total_bytes(
                records[(p, n, size)], lambda r, k=kind: layer_index(r.module) == 1 and r.kind == k
            )
            / MIB
            for p in PLACEMENTS
        ]
        if any(heights):
            ax.bar(["Post-LN", "Pre-LN", "Sandwich"], heights, bottom=bottom, label=kind)
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.set_title(f"one layer (layer 1), {n}")
    ax.set_xlabel("placement")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
axes[0].set_ylabel("MiB saved for backward")
plt.show()

for n in NORM_KINDS:
    for p in PLACEMENTS:
        layer = [r for r in records[(p, n, size)] if layer_index(r.module) == 1]
        norm_bytes = total_bytes(layer, lambda r: r.kind in ("LayerNorm", "RMSNorm"))
        print(
            f"{n:>9} {p:>9}: norms keep {norm_bytes / MIB:.3f} MiB of the layer's "
            f"{total_bytes(layer) / MIB:.3f} MiB"
        )

# %% [markdown]
# ## Against Korthikanti et al.'s count
#
# Their Eq. 1 (§4.1) counts $s b h (34 + 5as/h)$ bytes per layer for 16-bit
# activations with dropout. Without dropout (no masks, no dropout output) and in
# float32, the same tensors are $4\,(16\,sbh + a s^2 b)$ bytes:
# `korthikanti_bytes_per_layer(..., bytes_per_element=4, dropout=False)`. The
# measured LayerNorm layers should exceed it only by the small tensors it leaves out.

# %%
print(f"{'size (d, heads, seq)':>22} {'measured':>10} {'Eq. 1 tensors':>14} {'difference':>11}")
for d_model, n_heads, seq_len in SIZES:
    recs = records[("pre", "layernorm", (d_model, n_heads, seq_len))]
    measured = total_bytes(recs, lambda r: layer_index(r.module) == 1)
    formula = korthikanti_bytes_per_layer(seq_len, BATCH, d_model, n_heads, 4, dropout=False)
    small = 2 * (2 * BATCH * seq_len * 4) + seq_len * seq_len  # mean, 1/sigma; causal mask
    print(
        f"{(d_model, n_heads, seq_len)!s:>22} {measured:>10d} {formula:>14d} "
        f"{measured - formula:>11d}  = small tensors: {measured - formula == small}"
    )

# %% [markdown]
# ## Whole stacks: the Pre/Post ratio
#
# If Pre-LN saved 5–10 %, the ratio of its saved bytes to Post-LN's would lie between
# 0.90 and 0.95.

# %% alt="Saved bytes, Pre-LN / Post-LN, per stack size and norm, vs the claimed 5-10 % saving"
ratios = {}
print(f"{'size (d, heads, seq)':>22} {'norm':>10} {'Pre / Post':>11} {'Sandwich / Post':>16}")
for size in SIZES:
    for n in NORM_KINDS:
        post, pre, sandwich = (total_bytes(records[(p, n, size)]) for p in PLACEMENTS)
        ratios[(n, size)] = pre / post
        print(f"{size!s:>22} {n:>10} {pre / post:>11.4f} {sandwich / post:>16.4f}")

fig, ax = plt.subplots(figsize=(6.5, 3.6), constrained_layout=True)
labels = [f"d={d}, T={t}" for d, _, t in SIZES]
ax.axhspan(0.90, 0.95, color="tab:red", alpha=0.15, label="the claim: Pre-LN saves 5-10 %")
ax.axhline(1.0, color="black", linewidth=0.8)
for n, marker in zip(NORM_KINDS, "os", strict=True):
    ax.plot(labels, [ratios[(n, s)] for s in SIZES], marker=marker, label=n)
ax.set_xlabel("stack size (4 layers, batch 4)")
ax.set_ylabel("saved bytes, Pre-LN / Post-LN")
ax.set_ylim(0.85, 1.05)
ax.legend()
plt.show()

# %% [markdown]
# ## A whole training step: GPT, saved bytes and peak memory
#
# Embeddings, the LM head and the cross-entropy are the same in both models; the
# Pre-LN GPT has its final norm.


# %% tags=["collapse"]
def gpt_training_step(placement, norm, device="cpu"):
    """A GPT of these settings, its batch, and one training step on it (no optimizer)."""
    torch.manual_seed(0)
    config = GPTConfig(
        vocab_size=256,
        block_size=128,
        n_layer=4,
        n_head=4,
        n_embd=128,
        norm_position=placement,
        norm=norm,
    )
    model = GPT(config).to(device)
    idx = torch.randint(0, 256, (8, 128), device=device)
    targets = torch.randint(0, 256, (8, 128), device=device)

    def step():
        _, loss = model(idx, targets)
        loss.backward()

    return model, idx, targets, step


def gpt_step(placement, norm, device="cpu"):
    """The bytes one training step saves for backward, and its peak memory."""
    model, idx, targets, step = gpt_training_step(placement, norm, device)
    saved = total_bytes(saved_for_backward(model, idx, targets))
    model.zero_grad(set_to_none=True)
    return saved, peak_step_memory(step, device)


gpt = {(p, n): gpt_step(p, n) for p in ("post", "pre") for n in NORM_KINDS}
print(f"{'norm':>10} {'placement':>9} {'saved MiB':>10} {'peak MiB (CPU)':>15}")
for (p, n), (saved, peak) in sorted(gpt.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    print(f"{n:>10} {p:>9} {saved / MIB:>10.2f} {peak / MIB:>15.2f}")
for n in NORM_KINDS:
    (s_post, k_post), (s_pre, k_pre) = gpt[("post", n)], gpt[("pre", n)]
    print(
        f"{n}: Pre/Post saved {s_pre / s_post:.4f}, peak {k_pre / k_post:.4f}; "
        f"peak difference {k_pre - k_post} bytes = saved difference: "
        f"{k_pre - k_post == s_pre - s_post}"
    )

if torch.cuda.is_available():
    for n in NORM_KINDS:
        (_, post), (_, pre) = gpt_step("post", n, "cuda"), gpt_step("pre", n, "cuda")
        print(f"CUDA {n}: peak Pre/Post {pre / post:.4f}")
else:
    print("CUDA is absent here: no torch.cuda.max_memory_allocated measurement.")

# %% [markdown]
# ## What a second norm per sublayer costs
#
# Norms around each sublayer (`norm_position="sandwich"`, the layout Peri-LN uses) add a
# norm on every sublayer's output to Pre-LN's norm on its input. The
# [decision page](../../reference/choosing/#placement) prices the two extra norms of a
# layer with formulas; here the same GPT is built both ways and measured: the
# parameters they add, the bytes a training step keeps for the backward pass, and the
# wall-clock time of a training step (forward and backward) on the CPU that built this
# page. The two steps are timed by the rule of [Making norms fast](../norm_speed/): 31
# interleaved rounds (a round times each once, in a shuffled order, so background load
# falls on both alike), the median ratio with the range from the quartiles, and a
# difference called only when the two interquartile ranges do not overlap, that is when
# the ratio's range excludes 1.


# %% tags=["collapse"]
# The timing rule of snippets/norm_speed.py (interleaved_times, ratio_spread, compare), in
# brief: that module cannot be imported here beside resnorm.py, as both define NORMS.
ROUNDS = 31  # interleaved rounds per timing: each round times every step once


def interleaved_seconds(calls, rounds=ROUNDS, seed=0):
    """{name: [seconds of one call, one per round]}; each round runs every call once."""
    rng, order = random.Random(seed), list(calls)
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        rng.shuffle(order)
        for name in order:
            start = time.perf_counter()
            calls[name]()
            samples[name].append(time.perf_counter() - start)
    return samples


def ratio_and_verdict(numerator, denominator):
    """The median ratio with its range from the far quartiles, and the verdict: "slower" or
    "faster" when the interquartile ranges do not overlap, else "unresolved"."""
    q1n, mn, q3n = statistics.quantiles(numerator, n=4, method="inclusive")
    q1d, md, q3d = statistics.quantiles(denominator, n=4, method="inclusive")
    verdict = "slower" if q1n > q3d else "faster" if q3n < q1d else "unresolved"
    return (mn / md, q1n / q3d, q3n / q1d), verdict


def cpu_name():
    """The CPU model from Linux's /proc/cpuinfo; elsewhere what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
    except OSError:
        names = []
    return names[0] if names else platform.processor() or platform.machine()


def timed_step(placement, norm):
    """A training step that starts from no gradients each time, its first call made."""
    model, _, _, step = gpt_training_step(placement, norm)

    def fresh_step():
        model.zero_grad(set_to_none=True)
        step()

    fresh_step()  # the first call allocates; it is not timed
    return model, fresh_step


peri = {}
print(f"{'norm':>10} {'extra params / layer':>21} {'saved, Sandwich / Pre':>22} "
      f"{'step time, Sandwich / Pre':>44}")  # fmt: skip
for n in NORM_KINDS:
    (pre, pre_step), (sandwich, sandwich_step) = (timed_step(p, n) for p in ("pre", "sandwich"))
    extra = sum(q.numel() for q in sandwich.parameters()) - sum(q.numel() for q in pre.parameters())
    saved = gpt_step("sandwich", n)[0] / gpt[("pre", n)][0]
    times = interleaved_seconds({"pre": pre_step, "sandwich": sandwich_step})
    ratio, verdict = ratio_and_verdict(times["sandwich"], times["pre"])
    peri[n] = dict(extra=extra // pre.config.n_layer, saved=saved, time=ratio, verdict=verdict)
    shown = "{:.2f}x ({:.2f}-{:.2f}), {}".format(*ratio, verdict)
    print(f"{n:>10} {extra // pre.config.n_layer:>21} {saved:>22.3f} {shown:>44}")
CPU = cpu_name()
print(f"width d = 128: 2d = {2 * 128}, 4d = {4 * 128}; timed on {CPU}, "
      f"{torch.get_num_threads()} torch thread(s)")  # fmt: skip

# %% [markdown]
# At inference nothing is kept for a backward pass, in either placement:

# %%
with torch.no_grad():
    for p in ("post", "pre"):
        model = Stack(N_LAYERS, 64, 4, 256, norm_position=p, causal=True)
        n_saved = len(saved_for_backward(model, torch.randn(BATCH, 64, 64)))
        print(f"{p:>4}: tensors saved under torch.no_grad(): {n_saved}")

# %% [markdown]
# ## At a large model's size
#
# From Korthikanti et al.'s own counts: the final norm adds $2sbh$ bytes (§4.3) to
# $L \cdot sbh(34 + 5as/h)$ for the layers (Eq. 5 without parallelism). For GPT-3
# 175B they give $a = 96$, $s = 2048$, $h = 12288$ (§5) and $L = 96$ (Table 3):

# %%
s, b, h, a, n_layers = 2048, 1, 12288, 96, 96
layers = n_layers * korthikanti_bytes_per_layer(s, b, h, a)
final_norm = 2 * s * b * h
print(f"GPT-3 175B: the final norm adds {final_norm / layers:.4%} to the layers' activations")

# %% [markdown]
# ## What we saw
#
# - Layer by layer, a Pre-LN and a Post-LN stack keep exactly the same bytes for
#   the backward pass, with LayerNorm and with RMSNorm: both norms of a layer keep
#   their input in both placements, and every other saved tensor is the same. The
#   claim's mechanism ("the activations before LayerNorm need not be kept") is
#   false: in Pre-LN the norm's input is the residual stream, and it is kept.
# - The only difference is Pre-LN's final norm, so a whole Pre-LN model keeps a
#   little *more*, never 5–10 % less; the peak of a full step moves by exactly the
#   bytes of the extra saved tensors. That extra is one layer-sized tensor against
#   the whole stack's activations, so its share falls as layers are added or
#   widened; at GPT-3's size, by the paper's own counts, it is negligible.
# - The LayerNorm layers match Korthikanti et al.'s Eq. 1 tensors up to the small
#   per-token statistics and the causal mask that the paper leaves out.
# - RMSNorm keeps more than LayerNorm here, because on CPU in this PyTorch version
#   it is built from elementwise operations, each of which saves its own inputs,
#   rather than one fused kernel. That is a cost of the implementation, the same in
#   both placements. Placement changes memory only when it changes the *number* of
#   norms: Sandwich's two norms per sublayer keep visibly more.
# - A second norm on each sublayer's output (Sandwich, the layout of Peri-LN) costs
#   its weights ($2d$ parameters per layer with RMSNorm, $4d$ with LayerNorm), the
#   bytes it keeps for the backward pass (the Sandwich / Pre ratios printed above) and
#   the step time printed beside them, called a difference only where its range
#   excludes 1. At these small widths the norms are a larger share of a step than in
#   a large model, whose time goes to matrix products that grow with $d^2$ per token
#   while a norm grows with $d$.
# - At inference nothing is saved for backward at all, so the claim cannot apply to
#   inference memory either.

# %%
peak_ratio = {n: gpt[("pre", n)][1] / gpt[("post", n)][1] for n in NORM_KINDS}
saving = {n: 1 - r for n, r in peak_ratio.items()}
holds = all(0.05 <= v <= 0.10 for v in saving.values())
verdict = "holds" if holds else "refuted"
print(
    f"Claim 'Pre-LN saves 5-10 % of peak training memory': {verdict} "
    f"(measured saving: LayerNorm {saving['layernorm']:+.1%}, "
    f"RMSNorm {saving['rmsnorm']:+.1%}; negative = Pre-LN uses more)"
)

# %% tags=["publish"]
mid = SIZES[1]
results = {
    "saved_ratio_pre_post_layernorm": f"{ratios[('layernorm', mid)]:.3f}",
    "saved_ratio_pre_post_rmsnorm": f"{ratios[('rmsnorm', mid)]:.3f}",
    "gpt_peak_ratio_pre_post_layernorm": f"{peak_ratio['layernorm']:.3f}",
    "gpt_peak_ratio_pre_post_rmsnorm": f"{peak_ratio['rmsnorm']:.3f}",
    "pre_ln_peak_saving_layernorm": f"{saving['layernorm']:+.1%}",
    "pre_ln_peak_saving_rmsnorm": f"{saving['rmsnorm']:+.1%}",
    "gpt3_final_norm_share": f"{final_norm / layers:.3%}",
    "claim_5_10_percent_verdict": {"phrase": f"claim.{verdict}"},
    **{
        f"peri_{key}_{n}": value
        for n, c in peri.items()
        for key, value in (
            ("params_per_layer", str(c["extra"])),
            ("saved_ratio", f"{c['saved']:.3f}"),
            ("time_ratio", "{:.2f}× ({:.2f}–{:.2f})".format(*c["time"])),
            ("time_verdict", {"phrase": f"cost.{c['verdict']}"}),
        )
    },
    "peri_repeats": {"phrase": "repeats", "rounds": str(ROUNDS)},
    "peri_machine": {
        "phrase": "machine",
        "cpu": CPU,
        "cores": str(os.cpu_count() or "?"),
        "threads": str(torch.get_num_threads()),
        "torch": torch.__version__,
        "gpu": {"phrase": "gpu.named", "name": torch.cuda.get_device_name()}
        if torch.cuda.is_available()
        else {"phrase": "gpu.none"},
    },
}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
