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
# # Gradient norms at initialization
#
# How much gradient does each layer of a freshly initialized Transformer stack receive,
# and how does that change with depth, in [Post-LN](../../placement/post-ln/) and
# [Pre-LN](../../placement/pre-ln/)? This page measures the gradient of each layer's
# second feed-forward weight $W^{2,l}$, the quantity of Xiong et al. 2020's Theorem 1
# and Figure 3, on the handbook's own `Stack`. It is executed every time the site is
# built; every number below comes from that run.
#
# ## What we expected
#
# - **Theorem 1** (Xiong et al. 2020, arXiv 2002.04745, §3.3): at initialization, the
#   gradient of the last layer's $W^{2,L}$ is bounded by $O(d\sqrt{\ln d})$ in Post-LN,
#   whatever the depth $L$, and by $O(d\sqrt{\ln d / L})$ in Pre-LN. On log-log axes
#   against $L$: a flat line for Post-LN, slope $-1/2$ for Pre-LN.
# - **Why** (the same section, Lemmas 2 and 3): a LayerNorm passes back gradient in
#   proportion to $\sqrt{d}/\|x\|$ of its input. The last Post-LN norm sees an input of
#   fixed scale; the final norm of Pre-LN sees the whole residual sum $x_L$, with
#   $\mathbb{E}\|x_L\|^2$ growing linearly in $L$. So the Pre-LN gradient should track
#   $1/\mathrm{rms}(x_L)$. The lemmas are stated on the
#   [Post-LN](../../placement/post-ln/#what-xiong-et-al-proved-theorem-1-and-lemma-2)
#   page.
# - **Figure 3** (§3.4; 6-6 translation model, 10 seeds): the per-layer gradient norm of
#   the FFN weights grows with the layer index in Post-LN and stays almost flat in
#   Pre-LN; the last layer's gradient is about constant over depths 6-6 to 14-14 in
#   Post-LN and decreases with depth in Pre-LN.
# - **Does the gradient vanish toward the bottom of Post-LN?** Several papers report
#   smaller gradients in Post-LN's lower layers: Xiong et al.'s Figure 3 (at
#   initialization), Liu et al. 2020 (Admin, arXiv 2004.08249, §3, in decoders, not in
#   encoders), Takase et al. (arXiv 2206.00330) and Mix-LN (Li et al. 2024, arXiv
#   2412.13795). Whether that is what makes Post-LN hard to train is disputed. This page
#   measures the per-layer profile at initialization, in its own setting; how the result
#   fits with the other explanations of Post-LN's instability is discussed once, in
#   [why Pre-LN trains more stably](../../placement/pre-ln/#why-pre-ln-trains-more-stably).
#
# ## Settings
#
# The picture depends on the setting (initialization, inputs, loss), so these follow the
# setting of Xiong et al.'s analysis where they can:
#
# - `Stack(L, d_model=64, n_heads=4, d_ff=256, activation="relu")`, encoder layers (no
#   causal mask), no dropout, $L \in \{6, 12, 18, 24\}$; `norm_position="post"` (no
#   final norm) and `"pre"` (with its final norm, as `Stack` adds it).
# - Every `nn.Linear` re-initialized with Xavier (Glorot) normal weights and zero
#   biases, $W_q$, $W_k$, $W_v$ each as its own square matrix, as the papers write them
#   (`xavier_init_(stack, qkv="per_projection")` from `snippets/lm_experiment.py`; one
#   Xavier init over the fused $3d \times d$ matrix would give them $\sqrt{2}$ smaller
#   weights); LayerNorm weight 1, bias 0. ReLU, as in the original Transformer's FFN
#   (Vaswani et al. 2017, arXiv 1706.03762, §3.3).
# - Input: unit-variance Gaussian vectors, batch 8, sequence length 32.
# - **Loss.** Main: a linear loss on random targets,
#   $\mathcal{L} = \operatorname{mean}_t \langle y_t, \mathrm{out}_t\rangle$,
#   $y_t \sim \mathcal{N}(0, I)$. Its gradient with respect to the stack's output is $y$
#   itself, whatever the stack computed, so every difference between depths and
#   placements comes from how the stack carries that gradient down, which is what
#   Theorem 1 is about. Check: a mean squared error through a fixed random read-out,
#   $\operatorname{mean}(\mathrm{out}\,R - y)^2$ with $R \sim \mathcal{N}(0, 1/d)$,
#   whose gradient also depends on the output.
# - Seeds 0-9 (the model's init and the data), mean and standard deviation over seeds.
#   The gradient is $\|\partial \mathcal{L}/\partial W^{2,l}\|_F$ of
#   `layers[l].mlp.sublayer.proj.weight`.
# - One CPU thread (`torch.set_num_threads(1)`): these tensors are too small to gain
#   from intra-op threads, and one thread keeps the build fast on a shared machine.

# %%
import matplotlib.pyplot as plt
import torch
from IPython.display import display

from snippets.grad_norms import grad_norm_sweep, power_law_fit
from snippets.lm_experiment import xavier_init_
from snippets.resnorm import Stack

torch.set_num_threads(1)  # small tensors: threads cost more than they save
D_MODEL, N_HEADS, D_FF = 64, 4, 256
BATCH, SEQ_LEN = 8, 32
SEEDS = range(10)
DEPTHS = [6, 12, 18, 24]
NAMES = {"post": "Post-LN", "pre": "Pre-LN"}
COLORS = {"post": "tab:red", "pre": "tab:blue"}


def make_stack(position):
    def make(n_layers):
        stack = Stack(
            n_layers,
            D_MODEL,
            N_HEADS,
            D_FF,
            norm_position=position,
            activation="relu",
        )
        return xavier_init_(stack, qkv="per_projection")  # see Settings

    return make


sweeps = {}
for p in NAMES:
    sweeps[p] = grad_norm_sweep(make_stack(p), DEPTHS, SEEDS, BATCH, SEQ_LEN)
for p, name in NAMES.items():
    has_final_norm = make_stack(p)(2).norm_f is not None
    print(f"{name}: final norm after the last layer: {has_final_norm}")

# %% [markdown]
# ## Per-layer gradients (Figure 3 a, b)
#
# The gradient of $W^{2,l}$ for every layer $l$ of a 6-layer stack (the depth of Figure
# 3) and of a 24-layer stack; the band is one standard deviation over the seeds.


# %% alt="W²ˡ gradient norm vs layer l at init, Post-LN and Pre-LN, a shallow and a deep stack"
def per_layer(p, n_layers, loss="linear"):
    w2 = sweeps[p][n_layers][loss]  # (seeds, layers)
    return w2.mean(0), w2.std(0)


fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), constrained_layout=True)
for ax, n_layers in zip(axes, (6, 24), strict=True):
    layers = range(1, n_layers + 1)
    for p, name in NAMES.items():
        mean, std = per_layer(p, n_layers)
        ax.plot(layers, mean, "o-", ms=3, color=COLORS[p], label=name)
        ax.fill_between(layers, mean - std, mean + std, color=COLORS[p], alpha=0.2)
    ax.set_title(f"{n_layers} layers, at initialization")
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"$\|\partial L / \partial W^{2,l}\|_F$")
    ax.set_ylim(bottom=0)
    ax.legend()
plt.show()

ratios = {}
print("last layer / first layer, mean gradient of W2 (linear loss)")
for n_layers in (6, 24):
    for p, name in NAMES.items():
        mean, _ = per_layer(p, n_layers)
        ratio = ratios[p, n_layers] = (mean[-1] / mean[0]).item()
        trend = "grows" if ratio > 1 else "falls"
        print(f"  {name:7s} L = {n_layers:2d}: {ratio:.2f}  ({trend} toward the top)")

# %% [markdown]
# ## The last layer's gradient against depth (Figure 3 c, d)
#
# The gradient of the last layer's $W^{2,L}$ for each depth, with the two scalings of
# Theorem 1 drawn through the first point: $c$ (flat) and $c\sqrt{6/L}$
# ($\propto 1/\sqrt{L}$). The exponent $p$ of a fit $c\,L^{p}$ comes with a 95%
# bootstrap interval over the seeds.


# %% alt="Last-layer W² gradient norm vs depth L, linear loss; flat, 1/√L lines" tags=["collapse"]
def last_layer(p, loss="linear"):
    last = [sweeps[p][n][loss][:, -1] for n in DEPTHS]
    return torch.stack(last, dim=1)  # (seeds, depths)


TREND = {
    "flat": "flat (0 is inside the interval)",
    "sqrt": "follows 1/sqrt(L) (-0.5 is inside the interval)",
    "faster": "falls faster than 1/sqrt(L)",
    "grows": "grows with depth",
    "slower": "falls, but more slowly than 1/sqrt(L)",
}


def trend(lo, hi):
    """How a gradient scales with depth, by where the exponent's interval lies."""
    if lo <= 0 <= hi:
        return "flat"
    if lo <= -0.5 <= hi:
        return "sqrt"
    if hi < -0.5:
        return "faster"
    return "grows" if lo > 0 else "slower"


def verdict(lo, hi):
    return TREND[trend(lo, hi)]


def depth_panel(ax, loss):
    L = torch.tensor(DEPTHS, dtype=torch.float64)
    fits = {}
    for p, name in NAMES.items():
        g = last_layer(p, loss)
        mean, std = g.mean(0), g.std(0)
        style = dict(fmt="o-", color=COLORS[p], capsize=3, label=name)
        ax.errorbar(DEPTHS, mean, yerr=std, **style)
        c = mean[0].item()
        ax.plot(DEPTHS, [c] * len(DEPTHS), ":", color=COLORS[p], lw=1)
        ax.plot(DEPTHS, c * (L[0] / L).sqrt(), "--", color=COLORS[p], lw=1)
        fits[p] = power_law_fit(DEPTHS, g)
    ax.plot([], [], "k:", lw=1, label="c (flat)")
    ax.plot([], [], "k--", lw=1, label=r"$c/\sqrt{L}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(DEPTHS, [str(n) for n in DEPTHS])
    ax.minorticks_off()
    ax.set_xlabel("number of layers L")
    ax.set_ylabel(r"$\|\partial L / \partial W^{2,L}\|_F$ (last layer)")
    ax.legend(fontsize=8)
    return fits


def print_fits(fits, loss):
    print(f"exponent p of c * L^p, {loss} loss (Theorem 1: Post-LN 0, Pre-LN -0.5)")
    for p, name in NAMES.items():
        slope, lo, hi = fits[p]
        interval = f"[{lo:+.2f}, {hi:+.2f}]"
        print(f"  {name:7s} p = {slope:+.2f}  {interval}  -> {verdict(lo, hi)}")


fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
fits = depth_panel(ax, "linear")
ax.set_title("last layer's gradient vs depth (linear loss)")
plt.show()

print(" L   Post-LN          Pre-LN           Post-LN / Pre-LN")
for i, n in enumerate(DEPTHS):
    grads = {p: last_layer(p)[:, i] for p in NAMES}
    cells = [f"{grads[p].mean():.3f} ± {grads[p].std():.3f}" for p in NAMES]
    post_over_pre = grads["post"].mean() / grads["pre"].mean()
    print(f"{n:2d}   " + "    ".join(cells) + f"    {post_over_pre:.2f}x")
post_mean, pre_mean = last_layer("post").mean(0), last_layer("pre").mean(0)  # (depths,)
post_over_pre_L24 = (post_mean[-1] / pre_mean[-1]).item()
pre_ratio = (pre_mean[-1] / pre_mean[0]).item()
predicted = (DEPTHS[0] / DEPTHS[-1]) ** 0.5
print(
    f"Pre-LN, L = 24 vs L = 6: {pre_ratio:.2f}x",
    f"(1/sqrt(L) predicts {predicted:.2f}x)",
)
print_fits(fits, "linear")

# %% [markdown]
# ## The mechanism: the final norm
#
# Lemma 3 says the final norm divides what flows back by about $\mathrm{rms}(x_L)$, the
# root mean square of its input. If that is the whole story, the Pre-LN gradient times
# $\mathrm{rms}(x_L)$ stays constant as $L$ grows, while $\mathrm{rms}(x_L)$ itself
# grows. In Post-LN the last layer's output is a LayerNorm output, of rms 1 at every
# depth.

# %%
print(" L   Post-LN rms(x_L)   Pre-LN rms(x_L)   Pre-LN grad x rms(x_L)")
for i, n in enumerate(DEPTHS):
    rms = {p: sweeps[p][n]["top_rms"] for p in NAMES}
    product = (last_layer("pre")[:, i] * rms["pre"]).mean()
    post_rms, pre_rms = rms["post"].mean(), rms["pre"].mean()
    print(f"{n:2d}   {post_rms:16.3f}   {pre_rms:15.3f}   {product:22.3f}")
pre_rms = [sweeps["pre"][n]["top_rms"] for n in DEPTHS]
pre_rms = torch.stack(pre_rms, dim=1)  # (seeds, depths)
q, q_lo, q_hi = power_law_fit(DEPTHS, pre_rms)
interval = f"[{q_lo:+.2f}, {q_hi:+.2f}]"
print(f"Pre-LN rms(x_L) grows like L^q, q = {q:+.2f} {interval} (sqrt(L): +0.50)")
p_pre = fits["pre"][0]
print(f"Pre-LN gradient exponent p = {p_pre:+.2f}; p + q = {p_pre + q:+.2f}")

# %% [markdown]
# ## A loss whose gradient depends on the output
#
# The same sweep with the mean-squared-error loss. Part of its gradient,
# $2\,\mathrm{out}\,R R^\top / n$, depends on what the stack outputs, so it also depends
# on how alike the output tokens are: when the tokens of a sequence point the same way,
# that part adds up over tokens in $\sum_t g_t h_t^\top$ instead of cancelling. The
# table prints the mean cosine similarity between two tokens of the same sequence in
# $x_L$.

# %% alt="Last layer's W² gradient norm vs depth L, MSE loss, with flat and 1/√L references"
fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
fits_mse = depth_panel(ax, "mse")
ax.set_title("last layer's gradient vs depth (MSE loss)")
plt.show()
print_fits(fits_mse, "mse")
print("\nmean cosine similarity of two tokens of a sequence in x_L")
print(" L   " + "   ".join(f"{name:>7s}" for name in NAMES.values()))
for n in DEPTHS:
    cos = [sweeps[p][n]["top_cos"].mean() for p in NAMES]
    print(f"{n:2d}   " + "   ".join(f"{c:7.3f}" for c in cos))

# %% [markdown]
# ## What we saw
#
# The verdict lines above are computed from the fits; read with them:
#
# - **Theorem 1 holds in this setting, with the linear loss.** Post-LN's last-layer
#   gradient does not change with depth, and it is larger than Pre-LN's at every depth,
#   by a factor that grows with $L$. Pre-LN's falls with depth, a little faster than
#   $1/\sqrt{L}$ over 6 to 24 layers. The mechanism table shows why: the gradient times
#   $\mathrm{rms}(x_L)$ stays about constant, so the gradient follows
#   $1/\mathrm{rms}(x_L)$ (Lemma 3), and $x_L$ grows a little faster than $\sqrt{L}$ in
#   this stack ($q$ above; the [depth experiment](../depth/) shows the stream layer by
#   layer). Theorem 1's $1/\sqrt{L}$ is the case where $\mathbb{E}\|x_L\|^2$ grows
#   linearly (Lemma 2).
# - **Figure 3 (a, b) is not reproduced here.** In Xiong et al.'s measurement the
#   Post-LN per-layer gradient grows toward the top and Pre-LN's is almost flat. Here
#   Post-LN's is roughly level across layers, slightly lower at the top (ratios above),
#   and Pre-LN's falls steeply toward the top: its lower layers receive the identity
#   path plus the contribution of every branch above them. Xiong et al. measured a 6-6
#   encoder-decoder on a translation task; random inputs and random targets on an
#   encoder stack are a different setting, and this page does not tell which difference
#   matters (what this leaves open: [why Pre-LN trains more
#   stably](../../placement/pre-ln/#why-pre-ln-trains-more-stably)).
# - **No vanishing gradient at these depths, in this setting.** A Post-LN gradient that
#   vanishes on its way down does not show at 24 layers at initialization here: in
#   neither placement is the first layer's gradient smaller than the last layer's
#   (ratios above). This does not contradict the papers above: Xiong et
#   al.'s Figure 3 measures a 6-6 encoder-decoder on translation data (see the bullet
#   above), Admin finds the vanishing in decoders, and Admin and Mix-LN look at models
#   during training, not only at initialization; random inputs on an encoder stack are
#   none of these.
# - **The loss matters.** With the mean squared error, Post-LN's last-layer gradient
#   grows with depth and Pre-LN's falls more slowly than $1/\sqrt{L}$. The cosine table
#   shows the reason: with depth the tokens of a sequence become nearly identical (more
#   so in Post-LN), so the output-dependent part of the gradient adds up over tokens.
#   This is rank collapse: Dong et al. 2021 (arXiv 2103.03404) prove it for attention
#   without skip connections, and Noci et al. 2022 (arXiv 2206.03126) show the tokens of
#   Post-LN Transformers aligning more as depth grows, at initialization, which they
#   find can inhibit training. Theorem 1 is about how a stack carries a given output
#   gradient down, which the linear loss isolates.
#
# ## Sources
#
# - Xiong et al. 2020, *On Layer Normalization in the Transformer Architecture*,
#   arXiv 2002.04745: §3.3 (Lemma 2, Lemma 3, Theorem 1), §3.4 (Figure 3).
# - Liu et al. 2020 (Admin), arXiv 2004.08249, §3 (gradient vanishing in Post-LN
#   decoders).
# - Takase et al. 2023, *On Layer Normalizations and Residual Connections in
#   Transformers*, arXiv 2206.00330.
# - Li, Yin, Liu 2024 (Mix-LN), arXiv 2412.13795.
# - Vaswani et al. 2017, arXiv 1706.03762, §3.3 (the ReLU feed-forward network).
# - Glorot & Bengio 2010, *Understanding the difficulty of training deep feedforward
#   neural networks* (Xavier initialization); PyTorch `torch.nn.init.xavier_normal_`.
# - Dong, Cordonnier, Loukas 2021, arXiv 2103.03404; Noci et al. 2022, arXiv 2206.03126.
# - Code: `snippets/grad_norms.py` (the probe), `snippets/lm_experiment.py`
#   (`xavier_init_`) and `snippets/resnorm.py` (`Stack`), each with its tests.

# %% tags=["publish"]
results = {
    "post_w2_last_over_first_L6": f"{ratios['post', 6]:.2f}",
    "post_w2_last_over_first_L24": f"{ratios['post', 24]:.2f}",
    "pre_w2_last_over_first_L6": f"{ratios['pre', 6]:.2f}",
    "pre_w2_last_over_first_L24": f"{ratios['pre', 24]:.2f}",
    "post_last_w2_grad_L6": f"{last_layer('post')[:, 0].mean():.2f}",
    "post_last_w2_grad_L24": f"{last_layer('post')[:, -1].mean():.2f}",
    "pre_last_w2_grad_L6": f"{last_layer('pre')[:, 0].mean():.2f}",
    "pre_last_w2_grad_L24": f"{last_layer('pre')[:, -1].mean():.2f}",
    "pre_last_w2_ratio_L24_L6": f"{pre_ratio:.2f}",
    "post_over_pre_last_w2_L24": f"{post_over_pre_L24:.1f}",
    "pre_stream_rms_exponent": f"{q:+.2f}",
    "post_depth_exponent": f"{fits['post'][0]:+.2f}",
    "pre_depth_exponent": f"{fits['pre'][0]:+.2f}",
    "post_depth_exponent_ci": f"[{fits['post'][1]:+.2f}, {fits['post'][2]:+.2f}]",
    "pre_depth_exponent_ci": f"[{fits['pre'][1]:+.2f}, {fits['pre'][2]:+.2f}]",
    "mse_post_depth_exponent": f"{fits_mse['post'][0]:+.2f}",
    "mse_pre_depth_exponent": f"{fits_mse['pre'][0]:+.2f}",
    # the names the claims ledger quotes
    "post_last_over_first": {
        "phrase": "depth.ratio_at",
        "ratio": f"{ratios['post', DEPTHS[-1]]:.2f}",
        "layers": str(DEPTHS[-1]),
    },
    "pre_depth_verdict": {
        "phrase": "depth.power_law",
        "exponent": f"{fits['pre'][0]:+.2f}",
        "low": f"{fits['pre'][1]:+.2f}",
        "high": f"{fits['pre'][2]:+.2f}",
        "trend": {"phrase": f"trend.{trend(*fits['pre'][1:])}"},
    },
}
display(
    {
        "application/vnd.resnorm.results+json": results,
        "text/plain": "\n".join(f"{k}: {v}" for k, v in results.items()),
    },
    raw=True,
)
